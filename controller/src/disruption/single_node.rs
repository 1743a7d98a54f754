//! Single-node consolidation (karpenter-behaviour.md §5.8): candidates by savings ratio,
//! interleaved round-robin across NodePools (pools a previous timeout did not reach go first);
//! the first that can be deleted or replaced by a cheaper node wins. Stops after
//! [`SINGLE_NODE_TIMEOUT`] on the injected clock and remembers the pools it did not reach.

use std::collections::{BTreeMap, BTreeSet};

use super::SINGLE_NODE_TIMEOUT;
use super::balanced::{PoolTotals, Scored, approve, can_pass_threshold};
use super::candidates::{Candidate, sort_by_savings_ratio};
use super::command::{Command, Method};
use super::consolidation::{compute_with, consolidation_blocker};
use super::input::DisruptionInput;
use super::report::Report;
use super::simulation::Probes;
use crate::runtime::Clock;
use crate::runtime::clock::add;

/// Sorted candidates interleaved across pools: one from each pool in turn, `first` pools first.
pub fn interleave(mut candidates: Vec<Candidate>, first: &BTreeSet<String>) -> Vec<Candidate> {
    sort_by_savings_ratio(&mut candidates);
    let mut by_pool: BTreeMap<String, std::collections::VecDeque<Candidate>> = BTreeMap::new();
    for candidate in candidates {
        by_pool.entry(candidate.pool.clone()).or_default().push_back(candidate);
    }
    let mut order: Vec<String> = by_pool.keys().filter(|p| first.contains(*p)).cloned().collect();
    order.extend(by_pool.keys().filter(|p| !first.contains(*p)).cloned());
    let mut out = Vec::new();
    loop {
        let mut any = false;
        for pool in &order {
            if let Some(candidate) = by_pool.get_mut(pool).and_then(std::collections::VecDeque::pop_front) {
                out.push(candidate);
                any = true;
            }
        }
        if !any {
            return out;
        }
    }
}

/// The single-node command, if one node can be consolidated. `unseen` holds the pools a
/// previous timeout did not reach; it is replaced by the pools this call did not reach.
pub fn single_node(
    input: &DisruptionInput,
    candidates: &[Candidate],
    budgets: &BTreeMap<String, u64>,
    clock: &dyn Clock,
    unseen: &mut BTreeSet<String>,
    totals: &BTreeMap<String, PoolTotals>,
    report: &mut Report,
) -> Option<Command> {
    let eligible: Vec<Candidate> = candidates.iter().filter(|c| consolidation_blocker(c).is_none()).cloned().collect();
    report.eligible.insert("underutilized", eligible.len());
    let ordered = interleave(eligible, unseen);
    let deadline = add(clock.now(), SINGLE_NODE_TIMEOUT);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let all_pools: BTreeSet<String> = ordered.iter().map(|c| c.pool.clone()).collect();
    let mut probes = None;
    for candidate in &ordered {
        if clock.now() > deadline {
            *unseen = all_pools.difference(&seen).cloned().collect();
            tracing::debug!(?unseen, "single-node consolidation timed out");
            return None;
        }
        if budgets.get(&candidate.pool).copied().unwrap_or(0) == 0 {
            continue;
        }
        seen.insert(candidate.pool.clone());
        // Core singlenodeconsolidation.go l. 95-99: a Balanced candidate whose delete could
        // not pass the threshold is skipped; l. 101-104: a move its pool rejects too.
        if !can_pass_threshold(&Scored::of(candidate), totals) {
            continue;
        }
        let probes = probes.get_or_insert_with(|| Probes::new(input));
        match compute_with(input, probes, Method::SingleNode, std::slice::from_ref(candidate)) {
            Ok(command) if !approve(&command, totals) => {}
            Ok(command) => {
                unseen.clear();
                return Some(command);
            }
            Err(reason) => report.unconsolidatable(candidate, reason.to_string()),
        }
    }
    unseen.clear();
    None
}
