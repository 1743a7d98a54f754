//! Emptiness (karpenter-behaviour.md §5.5): consolidatable nodes with no reschedulable pods,
//! in every consolidation policy, deleted together as one command while the `Empty` budget
//! lasts. No replacement.

use std::collections::BTreeMap;

use super::budgets::take;
use super::candidates::{Candidate, sort_by_disruption_cost};
use super::command::{Command, Method};
use super::report::Report;

/// Whether the candidate is an Emptiness candidate: consolidation enabled, Consolidatable, empty.
pub fn is_empty_candidate(candidate: &Candidate) -> bool {
    candidate.consolidation_enabled && candidate.is_consolidatable() && candidate.is_empty()
}

/// The Emptiness command, if any node qualifies within budget.
pub fn emptiness(
    candidates: &[Candidate],
    budgets: &mut BTreeMap<String, u64>,
    report: &mut Report,
) -> Option<Command> {
    let mut empty: Vec<Candidate> = candidates.iter().filter(|c| is_empty_candidate(c)).cloned().collect();
    report.eligible.insert("empty", empty.len());
    sort_by_disruption_cost(&mut empty);
    let chosen: Vec<Candidate> = empty.into_iter().filter(|c| take(budgets, &c.pool)).collect();
    (!chosen.is_empty()).then(|| Command { method: Method::Emptiness, candidates: chosen, replacements: Vec::new() })
}
