//! Emptiness (karpenter-behaviour.md §5.5): consolidatable nodes with no reschedulable pods,
//! in every consolidation policy, deleted together as one command while the `Empty` budget
//! lasts. No replacement.

use std::collections::BTreeMap;

use super::budgets::take;
use super::candidates::{Candidate, sort_by_savings_ratio};
use super::command::{Command, Method};
use super::report::Report;

/// Whether the candidate is an Emptiness candidate: not of a static NodePool (core
/// `emptiness.go` `ShouldDisrupt` l. 42-45, `types.go` `OwnedByStaticNodePool` l. 147-149: a
/// static pool keeps its replica count), consolidation enabled, Consolidatable, empty.
pub fn is_empty_candidate(candidate: &Candidate) -> bool {
    !candidate.static_pool && candidate.consolidation_enabled && candidate.is_consolidatable() && candidate.is_empty()
}

/// The Emptiness command, if any node qualifies within budget.
pub fn emptiness(
    candidates: &[Candidate],
    budgets: &mut BTreeMap<String, u64>,
    report: &mut Report,
) -> Option<Command> {
    let mut empty: Vec<Candidate> = candidates.iter().filter(|c| is_empty_candidate(c)).cloned().collect();
    report.eligible.insert("empty", empty.len());
    sort_by_savings_ratio(&mut empty);
    let chosen: Vec<Candidate> = empty.into_iter().filter(|c| take(budgets, &c.pool)).collect();
    (!chosen.is_empty()).then(|| Command { method: Method::Emptiness, candidates: chosen, replacements: Vec::new() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::disruption::candidates::{DisruptionClass, get_candidates};
    use crate::disruption::input::DisruptionOptions;
    use crate::disruption::synthetic::{SyntheticCluster, fake_types, node_pool};
    use crate::runtime::clock::add;

    /// Core `emptiness.go` l. 42-45: the empty nodes of a static NodePool (`replicas` set) are
    /// not Emptiness candidates; the same nodes of a dynamic pool are.
    #[test]
    fn empty_nodes_of_a_static_pool_are_not_deleted_by_emptiness() {
        let t0: jiff::Timestamp = "2026-01-05T12:00:00Z".parse().expect("timestamp");
        let now = add(t0, std::time::Duration::from_secs(3600));
        let requirements = json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]);
        for replicas in [None, Some(2)] {
            let mut c = SyntheticCluster::new(t0);
            let mut pool = node_pool("default", json!({"consolidateAfter": "0s"}), requirements.clone());
            pool.spec.replicas = replicas;
            c.add_pool(pool, fake_types(8));
            for n in ["a", "b"] {
                c.add_node(n, "default", "c5.4xlarge", "test-zone-1", "on-demand");
            }
            let input = c.input(now, DisruptionOptions::default());
            let (candidates, _) = get_candidates(&input, DisruptionClass::Graceful);
            let mut budgets = [("default".to_string(), 10)].into();
            let command = emptiness(&candidates, &mut budgets, &mut Report::default());
            assert_eq!(command.is_some(), replicas.is_none(), "replicas {replicas:?}");
        }
    }
}
