//! The `Balanced` consolidation policy's scoring (core v1.14 `disruption/balanced.go`): a
//! consolidation move out of a `Balanced` NodePool is taken only when the fraction of the
//! pool's cost it saves is at least `1/k` of the fraction of the pool's disruption cost it
//! causes, `k` = [`BALANCED_K`]. Moves out of other pools always pass.
//!
//! Totals are per pool: the cost of every priced NodeClaim of the pool (core
//! `ClusterCost.GetNodepoolCost`; Σ candidate prices when that is 0) and the disruption
//! cost of every node of the pool, candidates or not (core `computeNodePoolTotals`,
//! balanced.go l. 38-103).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;

use super::candidates::{Candidate, reschedule_disruption_cost};
use super::command::Command;
use super::input::DisruptionInput;
use crate::apis::labels;
use crate::apis::nodepool::ConsolidationPolicy;
use crate::provisioning::input::must_move;
use crate::state::SnapshotIndex;

/// The Balanced scoring parameter: a move passes when its score is at least `1/k` (core
/// `apis/v1/nodepool.go` `BalancedK`, l. 168-172).
pub const BALANCED_K: i32 = 2;

/// A pool's cost and disruption cost, the denominators of a move's fractions (core
/// `NodePoolTotals`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoolTotals {
    /// USD per hour of the pool's nodes.
    pub total_cost: f64,
    /// Σ over the pool's nodes of 1 + Σ positive pod eviction costs.
    pub total_disruption_cost: f64,
}

/// A move's two fractions and `k` (core `ScoreResult`, types.go).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScoreResult {
    /// Savings over the pool's total cost.
    pub savings_fraction: f64,
    /// Disruption cost over the pool's total disruption cost.
    pub disruption_fraction: f64,
    /// The scoring parameter.
    pub k: i32,
}

impl ScoreResult {
    /// savings / disruption fraction: 0 when nothing is saved, +∞ when nothing is disrupted.
    pub fn score(&self) -> f64 {
        if self.savings_fraction <= 0.0 {
            0.0
        } else if self.disruption_fraction == 0.0 {
            f64::INFINITY
        } else {
            self.savings_fraction / self.disruption_fraction
        }
    }

    /// `1/k`.
    pub fn threshold(&self) -> f64 {
        1.0 / f64::from(self.k)
    }

    /// Score at least the threshold.
    pub fn approved(&self) -> bool {
        self.score() >= self.threshold()
    }
}

/// One candidate as scoring sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    /// NodePool name.
    pub pool: String,
    /// Whether the pool's policy is `Balanced`.
    pub balanced: bool,
    /// The node's price (0 when unknown, core `resolveNodePrice`).
    pub price: f64,
    /// Its `RescheduleDisruptionCost`.
    pub disruption: f64,
}

impl Scored {
    /// The candidate's view.
    pub fn of(c: &Candidate) -> Self {
        Self {
            pool: c.pool.clone(),
            balanced: c.policy == ConsolidationPolicy::Balanced,
            price: c.price.unwrap_or(0.0),
            disruption: c.reschedule_disruption_cost,
        }
    }
}

/// Scores a move (core `ScoreMove`, balanced.go l. 105-121): zero fractions when a total is
/// not positive.
pub fn score_move(savings: f64, disruption_cost: f64, totals: PoolTotals, k: i32) -> ScoreResult {
    if totals.total_cost <= 0.0 || totals.total_disruption_cost <= 0.0 {
        return ScoreResult { k, ..ScoreResult::default() };
    }
    ScoreResult {
        savings_fraction: savings / totals.total_cost,
        disruption_fraction: disruption_cost / totals.total_disruption_cost,
        k,
    }
}

/// Per-pool totals (core `computeNodePoolTotals`): `candidates` are every candidate before
/// the method's filter, `others` the (pool, disruption cost) of every other node,
/// `pool_cost` what the pool's priced NodeClaims cost (used when positive).
pub fn pool_totals(
    candidates: &[Scored],
    others: &[(String, f64)],
    pool_cost: &BTreeMap<String, f64>,
) -> BTreeMap<String, PoolTotals> {
    let mut totals: BTreeMap<String, PoolTotals> = BTreeMap::new();
    for c in candidates {
        totals.entry(c.pool.clone()).or_default().total_cost += c.price;
    }
    let mut disruption: BTreeMap<&str, f64> = BTreeMap::new();
    for c in candidates {
        *disruption.entry(&c.pool).or_default() += c.disruption;
    }
    for (pool, cost) in others {
        *disruption.entry(pool).or_default() += cost;
    }
    for (pool, t) in &mut totals {
        if let Some(cost) = pool_cost.get(pool).filter(|c| **c > 0.0) {
            t.total_cost = *cost;
        }
        t.total_disruption_cost = disruption.get(pool.as_str()).copied().unwrap_or(0.0);
    }
    totals
}

/// Whether every Balanced pool of a move approves it, and each such pool's result (core
/// `EvaluateBalancedMove`, balanced.go l. 128-186). `savings` is the command's estimated
/// savings; across pools each gets the share its candidates' prices make of the sources'.
pub fn evaluate(
    candidates: &[Scored],
    savings: f64,
    totals: &BTreeMap<String, PoolTotals>,
) -> (bool, BTreeMap<String, ScoreResult>) {
    if candidates.is_empty() {
        return (false, BTreeMap::new());
    }
    let mut by_pool: BTreeMap<&str, Vec<&Scored>> = BTreeMap::new();
    for c in candidates {
        by_pool.entry(&c.pool).or_default().push(c);
    }
    let source_cost: f64 = candidates.iter().map(|c| c.price).sum();
    let mut all = true;
    let mut per_pool = BTreeMap::new();
    for (pool, members) in &by_pool {
        if !members[0].balanced {
            continue;
        }
        let disruption: f64 = members.iter().map(|c| c.disruption).sum();
        let pool_cost: f64 = members.iter().map(|c| c.price).sum();
        let pool_savings =
            if source_cost > 0.0 && by_pool.len() > 1 { savings * (pool_cost / source_cost) } else { savings };
        let result = score_move(pool_savings, disruption, totals.get(*pool).copied().unwrap_or_default(), BALANCED_K);
        all &= result.approved();
        per_pool.insert((*pool).to_owned(), result);
    }
    (all, per_pool)
}

/// Whether deleting the candidate outright, the best any move of it can do, passes its
/// pool's threshold; always for other policies or a pool without cost (core
/// `CanPassThreshold`, balanced.go l. 285-299).
pub fn can_pass_threshold(c: &Scored, totals: &BTreeMap<String, PoolTotals>) -> bool {
    if !c.balanced {
        return true;
    }
    let Some(t) = totals.get(&c.pool).filter(|t| t.total_cost > 0.0) else { return true };
    score_move(c.price, c.disruption, *t, BALANCED_K).approved()
}

/// Whether a command passes (core `balancedEvaluator.ApproveCommand`).
pub fn approve(command: &Command, totals: &BTreeMap<String, PoolTotals>) -> bool {
    let scored: Vec<Scored> = command.candidates.iter().map(Scored::of).collect();
    evaluate(&scored, command.savings(), totals).0
}

/// The totals for this loop from every candidate (before any method's filter) and every
/// other node of the cluster (core `GetCandidatesWithTotals`, helpers.go l. 190-214).
pub fn totals_for(input: &DisruptionInput, candidates: &[Candidate]) -> BTreeMap<String, PoolTotals> {
    let snapshot = &input.snapshot;
    let index = SnapshotIndex::new(snapshot);
    let candidate_names: std::collections::BTreeSet<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    let scored: Vec<Scored> = candidates.iter().map(Scored::of).collect();
    let mut others = Vec::new();
    let mut pool_cost: BTreeMap<String, f64> = BTreeMap::new();
    for (name, claim) in &snapshot.node_claims {
        let Some(pool) = claim.node_pool_name() else { continue };
        let claim_labels = claim.labels();
        let label = |k: &str| claim_labels.get(k).map(String::as_str).unwrap_or_default();
        let price = input.instance_type(pool, label(labels::INSTANCE_TYPE_LABEL)).and_then(|it| {
            it.offerings
                .iter()
                .filter(|o| o.zone == label(labels::TOPOLOGY_ZONE_LABEL))
                .filter(|o| o.capacity_type == label(labels::CAPACITY_TYPE_LABEL))
                .map(|o| o.price)
                .min_by(f64::total_cmp)
        });
        *pool_cost.entry(pool.to_owned()).or_default() += price.unwrap_or(0.0);
        if candidate_names.contains(name.as_str()) {
            continue;
        }
        let Some(node) = index.nodes_for_node_claim(claim).first() else { continue };
        let pods: Vec<Arc<k8s_openapi::api::core::v1::Pod>> =
            index.pods_on_node(&node.name_any()).filter(|p| must_move(p)).cloned().collect();
        others.push((pool.to_owned(), reschedule_disruption_cost(&pods)));
    }
    pool_totals(&scored, &others, &pool_cost)
}

#[cfg(test)]
#[path = "balanced_tests.rs"]
mod tests;
