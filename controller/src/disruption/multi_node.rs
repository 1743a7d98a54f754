//! Multi-node consolidation (karpenter-behaviour.md §5.7; core `firstNConsolidationOption`):
//! sort the consolidatable candidates by disruption cost, keep those within budget (at most
//! [`MULTI_NODE_MAX_CANDIDATES`]) and binary-search the longest prefix of at least two that can
//! be deleted, or replaced by one cheaper node that is not just a type they already run.
//! After [`MULTI_NODE_TIMEOUT`] on the injected clock the best command so far is returned.

use std::collections::BTreeMap;

use super::balanced::{PoolTotals, approve};
use super::budgets::take;
use super::candidates::{Candidate, sort_refs_by_savings_ratio};
use super::command::{Command, Decision, Method};
use super::consolidation::{compute_with, consolidation_blocker, filter_out_same_instance_type};
use super::input::DisruptionInput;
use super::report::Report;
use super::simulation::Probes;
use super::{MULTI_NODE_MAX_CANDIDATES, MULTI_NODE_TIMEOUT};
use crate::runtime::Clock;
use crate::runtime::clock::add;

/// The consolidatable candidates in multi-node order, within budget (which they use up).
pub fn multi_node_candidates(
    candidates: &[Candidate],
    budgets: &mut BTreeMap<String, u64>,
    report: &mut Report,
) -> Vec<Candidate> {
    // By reference: only the (at most 100) kept candidates are cloned, not every node's pods.
    let mut eligible: Vec<&Candidate> = candidates.iter().filter(|c| consolidation_blocker(c).is_none()).collect();
    report.eligible.insert("underutilized", eligible.len());
    sort_refs_by_savings_ratio(&mut eligible);
    // Every eligible candidate takes from its pool's budget, kept or not.
    let mut kept: Vec<&Candidate> = eligible.into_iter().filter(|c| take(budgets, &c.pool)).collect();
    kept.truncate(MULTI_NODE_MAX_CANDIDATES);
    kept.into_iter().cloned().collect()
}

/// The multi-node command, if at least two nodes can be consolidated together.
pub fn multi_node(
    input: &DisruptionInput,
    candidates: &[Candidate],
    budgets: &mut BTreeMap<String, u64>,
    clock: &dyn Clock,
    totals: &BTreeMap<String, PoolTotals>,
    report: &mut Report,
) -> Option<Command> {
    let candidates = multi_node_candidates(candidates, budgets, report);
    first_n_consolidation(input, &candidates, clock, totals)
}

/// Binary search on the prefix length over already sorted, budgeted `candidates`.
pub fn first_n_consolidation(
    input: &DisruptionInput,
    candidates: &[Candidate],
    clock: &dyn Clock,
    totals: &BTreeMap<String, PoolTotals>,
) -> Option<Command> {
    if candidates.len() < 2 {
        return None;
    }
    let deadline = add(clock.now(), MULTI_NODE_TIMEOUT);
    let mut lo = 1usize;
    let mut hi = candidates.len().min(MULTI_NODE_MAX_CANDIDATES) - 1;
    let mut best = None;
    let probes = Probes::new(input);
    while lo <= hi {
        if clock.now() > deadline {
            tracing::debug!(
                tried_up_to = hi + 1,
                "multi-node consolidation timed out; keeping the best command so far"
            );
            break;
        }
        let mid = usize::midpoint(lo, hi);
        let prefix = &candidates[..=mid];
        let valid = match compute_with(input, &probes, Method::MultiNode, prefix) {
            Ok(mut command) => match command.decision() {
                Decision::Delete => Some(command),
                Decision::Replace => {
                    filter_out_same_instance_type(&mut command.replacements[0], prefix);
                    (!command.replacements[0].instance_type_options.is_empty()).then_some(command)
                }
            },
            Err(_) => None,
        };
        // Core multinodeconsolidation.go l. 165-173: a Balanced pool may reject the probe.
        let valid = valid.filter(|command| approve(command, totals));
        match valid {
            Some(command) => {
                best = Some(command);
                lo = mid + 1;
            }
            None => {
                if mid == 0 {
                    break;
                }
                hi = mid - 1;
            }
        }
    }
    best
}
