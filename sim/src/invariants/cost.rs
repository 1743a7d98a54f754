//! `cost`: at quiescence (no pending pods, no NodeClaim deleting or uninitialized, and the
//! pods' total requests unchanged for the longest `consolidateAfter` plus `settledFor`) the
//! cloud's cost rate (its ledger: running instances at their current prices) is at most
//! `(1 + epsilon)` × the LP lower bound ([`crate::oracle::cost_bound`]) over the NodePools' allowed,
//! available offerings, with allocatable after kubelet reservations and DaemonSet overhead,
//! plus an integrality allowance of one node.
//! The gap is reported whether or not the run is quiescent.
//!
//! Why the allowance: nodes come whole. Two 1-vCPU pods need a whole node even though the
//! LP buys a quarter of one, so on a small cluster the integral optimum itself sits far
//! above `(1 + epsilon)` × the LP bound and a purely multiplicative threshold would flag a
//! perfect layout. The allowance is the price of the cheapest allowed offering that fits
//! the largest pod: a layout can always be at least that much dearer than the LP, and on a
//! large cluster it is negligible next to the multiplicative term.
//!
//! Why pinned nodes are set aside: Karpenter's rules let it keep some nodes whatever they
//! cost. A spot node bought for a peak may only be deleted while the
//! `SpotToSpotConsolidation` gate is off, a node with a do-not-disrupt pod is never a
//! candidate, and consolidation never splits one node into two. When such a node's pods fit nowhere else ([`crate::oracle::pinned`]), the check runs
//! on the rest of the fleet against the bound for the pods the pinned nodes do not hold.
//! The reported gap is still the whole fleet's, and the pinned rate is reported beside it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{Ctx, Violation};
use crate::oracle::cost_bound::{Supply, lower_bound};
use crate::oracle::pinned::{PinnedNode, pinned_nodes};
use crate::oracle::resources::{Offering, Resources, allowed_offerings, daemonset_overhead};
use crate::oracle::view::PodView;
use crate::scenario::invariants::Cost as CostConfig;
use dovetail_world::SimDuration;

/// The invariant's name.
pub const NAME: &str = "cost";

/// Cost rate against the bound at the end of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CostSummary {
    /// USD per hour the cloud bills now.
    pub rate_per_hour: f64,
    /// The LP lower bound, USD per hour (0 when nothing is demanded).
    pub lower_bound_per_hour: f64,
    /// `rate / bound − 1` (`None` when the bound is 0 or unknown).
    pub gap: Option<f64>,
    /// Whether the cluster was quiescent when judged.
    pub quiescent: bool,
    /// USD per hour on nodes Karpenter's rules let it keep whatever they cost (spot nodes
    /// it may only delete, nodes with do-not-disrupt pods; see [`crate::oracle::pinned`]).
    pub pinned_per_hour: f64,
    /// The pinned nodes grouped by why Karpenter may keep them (empty when none).
    pub kept: String,
}

/// The end-of-run judgement.
pub struct Cost {
    config: CostConfig,
}

impl Cost {
    /// With the run's thresholds.
    pub fn new(config: CostConfig) -> Self {
        Self { config }
    }

    /// Computes the summary and adds a violation when quiescent and over the bound.
    /// `spot_to_spot` is the controller's `SpotToSpotConsolidation` feature gate.
    pub fn judge(
        &self,
        ctx: &Ctx<'_>,
        daemonsets: &[Arc<Value>],
        spot_to_spot: bool,
        demand_since: Duration,
        out: &mut Vec<Violation>,
    ) -> CostSummary {
        let now = ctx.view.now;
        let rate = ctx.cloud.cost_report().rate_usd_per_hour;
        let overhead = daemonset_overhead(daemonsets.iter().map(|d| d.as_ref()));
        let offerings: BTreeMap<String, Vec<Offering>> = ctx
            .view
            .pools
            .iter()
            .map(|(name, pool)| (name.clone(), allowed_offerings(ctx.cloud, &pool.object, now)))
            .collect();
        let supply = cheapest_supply(&offerings, &overhead);
        let hosted = |pinned: &BTreeSet<&str>| {
            let mut demand = Resources::default();
            let mut largest = Resources::default();
            for p in ctx.pods.iter().filter(|p| p.active() && !p.daemonset) {
                if p.node_name.as_deref().is_some_and(|n| pinned.contains(n)) {
                    continue;
                }
                demand.add(&p.requests);
                largest.cpu = largest.cpu.max(p.requests.cpu);
                largest.memory = largest.memory.max(p.requests.memory);
            }
            (demand, largest)
        };
        let (demand, _) = hosted(&BTreeSet::new());
        let pending = ctx.pods.iter().filter(|p| p.active() && !p.daemonset && p.node_name.is_none()).count();
        let bound = lower_bound(&supply, &demand);
        let bound_value = bound.unwrap_or(0.0);
        let settle = longest_consolidate_after(ctx) + self.config.settled_for.0;
        let quiescent = pending == 0
            && now.saturating_sub(demand_since) >= settle
            && ctx
                .view
                .claims
                .values()
                .all(|c| c.deleting_since.is_none() && (c.initialized || c.provider_id.is_some()));
        let gap = (bound_value > 0.0).then(|| rate / bound_value - 1.0);
        // What Karpenter's rules let it keep whatever it costs is judged apart: the rest of
        // the fleet must be near the bound for the pods the pinned nodes do not hold.
        let pinned = pinned_nodes(ctx.view, ctx.pods, ctx.cloud, &offerings, &overhead, spot_to_spot);
        let pinned_rate: f64 = pinned.iter().fold(0.0, |sum, p| sum + p.price);
        let pinned_names: BTreeSet<&str> = pinned.iter().map(|p| p.node.as_str()).collect();
        let (free_demand, largest) = hosted(&pinned_names);
        let free_bound = lower_bound(&supply, &free_demand);
        let allowance = one_node_allowance(&supply, &largest, free_demand.pods > 0.0);
        let judged_rate = rate - pinned_rate;
        let summary = CostSummary {
            rate_per_hour: rate,
            lower_bound_per_hour: bound_value,
            gap,
            quiescent,
            pinned_per_hour: pinned_rate,
            kept: describe(&pinned),
        };
        let limit = (1.0 + self.config.epsilon) * free_bound.unwrap_or(0.0) + allowance;
        // With nothing to host the bound is 0 and there is no gap to speak of: then every
        // node Karpenter's rules do not keep is waste. An uncoverable demand (no offering
        // available now) has no bound and is not judged.
        if self.config.enabled
            && quiescent
            && bound.is_some()
            && free_bound.is_some()
            && gap.is_none_or(|g| g > self.config.epsilon)
            && judged_rate > limit + PRICE_TOLERANCE
        {
            let mut message = match gap {
                Some(g) => format!(
                    "cost rate ${rate:.4}/h is {:.0}% above the lower bound ${bound_value:.4}/h (allowed {:.0}% plus one node, ${allowance:.4}/h)",
                    g * 100.0,
                    self.config.epsilon * 100.0
                ),
                None => format!("cost rate ${rate:.4}/h with no pod to host (lower bound $0/h)"),
            };
            if !pinned.is_empty() {
                message.push_str(&format!(
                    "; without the nodes Karpenter may keep, ${judged_rate:.4}/h against a limit of ${limit:.4}/h; kept: {}",
                    summary.kept
                ));
            }
            out.push(Violation {
                invariant: NAME.into(),
                at: now,
                objects: ctx.view.pools.keys().map(|n| format!("NodePool {n}")).collect(),
                message,
                trace_position: ctx.view.trace_position,
            });
        }
        summary
    }
}

/// When the pods' total requests last changed: the cost is judged only after they have
/// held still long enough for the controller to consolidate.
#[derive(Debug, Default)]
pub struct DemandClock {
    last: Option<Resources>,
    since: Duration,
}

impl DemandClock {
    /// Looks at the active, non-DaemonSet pods at `now`.
    pub fn observe(&mut self, pods: &[PodView], now: Duration) {
        let mut demand = Resources::default();
        for p in pods.iter().filter(|p| p.active() && !p.daemonset) {
            demand.add(&p.requests);
        }
        if self.last != Some(demand) {
            self.last = Some(demand);
            self.since = now;
        }
    }

    /// When the demand last changed.
    pub fn since(&self) -> Duration {
        self.since
    }
}

/// The longest `spec.disruption.consolidateAfter` over the NodePools (`Never` and
/// unparsable values count as zero: such pools keep their nodes, see [`crate::oracle::pinned`]).
fn longest_consolidate_after(ctx: &Ctx<'_>) -> Duration {
    ctx.view
        .pools
        .values()
        .filter_map(|p| p.object["spec"]["disruption"]["consolidateAfter"].as_str())
        .filter_map(|d| SimDuration::parse(d).ok())
        .map(|d| d.0)
        .max()
        .unwrap_or_default()
}

/// Prices are quoted to six decimals; sums of them differ from the bill by rounding only.
const PRICE_TOLERANCE: f64 = 1e-6;

/// The pinned nodes grouped by reason: how many, what they cost, and the first few names.
fn describe(pinned: &[PinnedNode]) -> String {
    let mut by_reason: BTreeMap<&str, Vec<&PinnedNode>> = BTreeMap::new();
    for p in pinned {
        by_reason.entry(p.reason.as_str()).or_default().push(p);
    }
    let groups: Vec<String> = by_reason
        .into_iter()
        .map(|(reason, nodes)| {
            let rate: f64 = nodes.iter().map(|n| n.price).sum();
            let mut names: Vec<String> =
                nodes.iter().take(3).map(|n| format!("{} ({})", n.node, n.instance_type)).collect();
            if nodes.len() > 3 {
                names.push(format!("and {} more", nodes.len() - 3));
            }
            format!("{} node(s) at ${rate:.4}/h, {reason}: {}", nodes.len(), names.join(", "))
        })
        .collect();
    groups.join("; ")
}

/// The cheapest price per instance type over every pool's allowed `offerings`, with
/// allocatable after DaemonSet overhead: the same node shape at a higher price never helps
/// the bound.
fn cheapest_supply(offerings: &BTreeMap<String, Vec<Offering>>, overhead: &Resources) -> Vec<Supply> {
    let mut cheapest: BTreeMap<String, Supply> = BTreeMap::new();
    for o in offerings.values().flatten() {
        let capacity = o.allocatable.minus(overhead);
        let entry = cheapest.entry(o.instance_type.clone()).or_insert(Supply { capacity, price: o.price });
        entry.price = entry.price.min(o.price);
    }
    cheapest.into_values().collect()
}

/// The integrality allowance: the price of the cheapest offering that fits `largest` (the
/// largest CPU and the largest memory any one pod asks for), or 0 when nothing is demanded
/// or nothing fits (the bound is then `None` or the pod is stranded, judged elsewhere).
fn one_node_allowance(supply: &[Supply], largest: &Resources, demanded: bool) -> f64 {
    if !demanded {
        return 0.0;
    }
    supply
        .iter()
        .filter(|s| s.capacity.cpu >= largest.cpu && s.capacity.memory >= largest.memory && s.capacity.pods >= 1.0)
        .map(|s| s.price)
        .fold(None, |best: Option<f64>, p| Some(best.map_or(p, |b| b.min(p))))
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supply(cpu: f64, memory_gib: f64, price: f64) -> Supply {
        Supply { capacity: Resources { cpu, memory: memory_gib * 1024.0 * 1024.0 * 1024.0, pods: 29.0 }, price }
    }

    #[test]
    fn the_allowance_is_the_cheapest_node_that_fits_the_largest_pod() {
        let offerings = [supply(1_900.0, 3.0, 0.02), supply(3_900.0, 7.0, 0.04), supply(7_900.0, 15.0, 0.08)];
        let gib = 1024.0 * 1024.0 * 1024.0;
        let pod = |cpu, mem| Resources { cpu, memory: mem * gib, pods: 1.0 };
        assert_eq!(one_node_allowance(&offerings, &pod(1_000.0, 1.0), true), 0.02);
        assert_eq!(one_node_allowance(&offerings, &pod(2_000.0, 1.0), true), 0.04);
        assert_eq!(one_node_allowance(&offerings, &pod(1_000.0, 8.0), true), 0.08);
        assert_eq!(one_node_allowance(&offerings, &pod(9_000.0, 1.0), true), 0.0);
        assert_eq!(one_node_allowance(&offerings, &pod(1_000.0, 1.0), false), 0.0);
    }
}
