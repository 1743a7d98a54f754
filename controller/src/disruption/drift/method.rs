//! The Drift method (karpenter-behaviour.md §5.11, disruption side): candidates whose claim is
//! `Drifted=True` (set by the NodeClaim drift controller), empty ones first, then oldest drift
//! first; the first one whose pods all schedule becomes a single-candidate command that
//! pre-spins as many replacements as the simulation needs. Not re-validated.

use std::collections::BTreeMap;

use crate::disruption::budgets::take;
use crate::disruption::candidates::Candidate;
use crate::disruption::command::{Command, Method};
use crate::disruption::input::DisruptionInput;
use crate::disruption::report::Report;
use crate::disruption::simulation::simulate;

/// The Drift command, if a drifted node can go within budget.
pub fn drift(
    input: &DisruptionInput,
    candidates: &[Candidate],
    budgets: &mut BTreeMap<String, u64>,
    report: &mut Report,
) -> Option<Command> {
    let mut drifted: Vec<&Candidate> = candidates.iter().filter(|c| c.drifted_since().is_some()).collect();
    report.eligible.insert("drifted", drifted.len());
    drifted.sort_by(|a, b| {
        b.is_empty()
            .cmp(&a.is_empty())
            .then_with(|| a.drifted_since().cmp(&b.drifted_since()))
            .then_with(|| a.name.cmp(&b.name))
    });
    for candidate in drifted {
        if budgets.get(&candidate.pool).copied().unwrap_or(0) == 0 {
            continue;
        }
        match simulate(input, &[candidate]) {
            Ok(results) => {
                take(budgets, &candidate.pool);
                return Some(Command {
                    method: Method::Drift,
                    candidates: vec![candidate.clone()],
                    replacements: results.new_node_claims,
                });
            }
            Err(error) => report.blocked(candidate, error.to_string()),
        }
    }
    None
}
