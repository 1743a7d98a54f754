//! Disruption budgets (karpenter-behaviour.md §5.4; core `BuildDisruptionBudgetMapping`,
//! `NodePool.GetAllowedDisruptionsByReason`): how many more of a pool's nodes may start
//! disrupting now for a reason. Budgets cap concurrency, not rate: nodes already deleting (for
//! any reason) or NotReady use up the budget.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::input::DisruptionInput;
use crate::apis::condition::StatusConditions;
use crate::apis::nodeclaim::{CONDITION_INITIALIZED, CONDITION_INSTANCE_TERMINATING};
use crate::apis::nodepool::{DisruptionReason, NodePool};
use crate::provisioning::input::node_is_ready;
use crate::state::{Snapshot, SnapshotIndex};

/// The smallest budget for `reason` that is active at `now`, given `nodes` nodes: a percentage
/// rounds up, an inactive budget allows any number. `u64::MAX` when no budget applies. Any
/// budget whose schedule does not parse, whatever reasons it names, allows none for every
/// reason (fails closed): core `pkg/apis/v1/nodepool.go` `GetAllowedDisruptionsByReason`
/// (l. 365–378) gathers every budget's error before it filters by reason, and
/// `MustGetAllowedDisruptions` (l. 356–362) turns any error into 0.
pub fn pool_budget(pool: &NodePool, reason: DisruptionReason, nodes: u64, now: jiff::Timestamp) -> u64 {
    let now = Time(now);
    let mut allowed = u64::MAX;
    for budget in &pool.spec.budgets() {
        let value = match budget.is_active(&now) {
            Ok(true) => budget.nodes().allowed(nodes),
            Ok(false) => u64::MAX,
            Err(_) => return 0,
        };
        if budget.applies_to(reason) {
            allowed = allowed.min(value);
        }
    }
    allowed
}

/// A pool's managed, initialized nodes (whose instance is not already terminating) and how
/// many of them are disrupting (NotReady, or their claim or Node marked for deletion).
///
/// `index` is [`SnapshotIndex::new`]`(snapshot)`, built once for all pools.
pub fn pool_node_counts(
    snapshot: &Snapshot,
    index: &SnapshotIndex<'_>,
    marked: &std::collections::BTreeSet<String>,
    pool: &str,
) -> (u64, u64) {
    let mut nodes = 0;
    let mut disrupting = 0;
    for (name, claim) in &snapshot.node_claims {
        if claim.node_pool_name() != Some(pool)
            || !claim.is_condition_true(CONDITION_INITIALIZED)
            || claim.is_condition_true(CONDITION_INSTANCE_TERMINATING)
        {
            continue;
        }
        nodes += 1;
        let node = index.nodes_for_node_claim(claim).first();
        let deleting = claim.metadata.deletion_timestamp.is_some()
            || marked.contains(name)
            || node.is_none_or(|n| n.metadata.deletion_timestamp.is_some() || !node_is_ready(n));
        if deleting {
            disrupting += 1;
        }
    }
    (nodes, disrupting)
}

/// One NodePool's budget for a reason now.
struct PoolBudget<'a> {
    name: &'a String,
    pool: &'a std::sync::Arc<NodePool>,
    /// The pool's nodes.
    nodes: u64,
    /// Those already disrupting (deleting, marked, queued or NotReady).
    disrupting: u64,
    /// What its budgets allow for the reason, before subtracting `disrupting`.
    budget: u64,
}

/// Every NodePool's budget for `reason` now (core `BuildDisruptionBudgetMapping`).
fn pool_budgets(input: &DisruptionInput, reason: DisruptionReason) -> impl Iterator<Item = PoolBudget<'_>> {
    let mut marked = input.memory.marked_for_deletion.clone();
    marked.extend(input.queued.iter().cloned());
    let index = SnapshotIndex::new(&input.snapshot);
    input.snapshot.node_pools.iter().map(move |(name, pool)| {
        let (nodes, disrupting) = pool_node_counts(&input.snapshot, &index, &marked, name);
        PoolBudget { name, pool, nodes, disrupting, budget: pool_budget(pool, reason, nodes, input.now) }
    })
}

/// NodePool name → how many more nodes may start disrupting for `reason` now.
pub fn allowed_disruptions(input: &DisruptionInput, reason: DisruptionReason) -> BTreeMap<String, u64> {
    pool_budgets(input, reason).map(|b| (b.name.clone(), b.budget.saturating_sub(b.disrupting))).collect()
}

/// The NodePools that have nodes but whose budgets allow no disruption for `reason` now (before
/// subtracting nodes already disrupting): core `disruption/helpers.go`
/// `BuildDisruptionBudgetMapping` publishes `NodePoolBlockedForDisruptionReason` for each.
pub fn blocked_pools(input: &DisruptionInput, reason: DisruptionReason) -> Vec<std::sync::Arc<NodePool>> {
    pool_budgets(input, reason).filter(|b| b.nodes != 0 && b.budget == 0).map(|b| b.pool.clone()).collect()
}

/// Takes one unit of `pool`'s budget if any is left.
pub fn take(budgets: &mut BTreeMap<String, u64>, pool: &str) -> bool {
    match budgets.get_mut(pool) {
        Some(left) if *left > 0 => {
            *left -= 1;
            true
        }
        _ => false,
    }
}

/// Whether a budget keeps any of `pools` (one entry per eligible consolidation candidate) from
/// being disrupted: more candidates in a pool than its budget allows (core
/// `multinodeconsolidation.go` l. 66-76, `singlenodeconsolidation.go` l. 80-84
/// `constrainedByBudgets`). Consolidation that found nothing then does not mark the cluster
/// consolidated: a budget that opens up may let the same cluster consolidate next loop
/// (core l. 92-94 and l. 116-121).
pub fn constrained_by_budgets<'a>(pools: impl IntoIterator<Item = &'a str>, budgets: &BTreeMap<String, u64>) -> bool {
    let mut left = budgets.clone();
    pools.into_iter().any(|pool| !take(&mut left, pool))
}
