//! The cost section of a run: the cloud's cost rate (its ledger: running instances at
//! their current prices), the LP lower bound ([`crate::oracle::cost_bound`]) over the
//! NodePools' allowed, available offerings with allocatable after kubelet reservations and
//! DaemonSet overhead, and the gap between them — a **quality metric**, reported per run
//! and aggregated per sweep, never pass/fail: the integral optimum of a small cluster sits
//! well above the LP bound, and Karpenter's own rules (no splitting a node, spot nodes it
//! may only delete, do-not-disrupt) keep it above the optimum. What *is* judged is whether
//! the controller takes the moves Karpenter's rules allow ([`super::untaken_moves`]); the
//! section lists the moves still open at the end and the rule keeping each other node.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::Ctx;
use crate::oracle::cost_bound::{Supply, lower_bound};
use crate::oracle::moves::{Assessment, Kept, Move};
use crate::oracle::resources::{Offering, Resources, allowed_offerings};
use crate::oracle::view::{PodView, View};
use crate::scenario::invariants::Cost as CostConfig;
use dovetail_fakecloud::FakeCloud;
use dovetail_world::SimDuration;

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
    /// Whether the pods' demand had held still long enough for consolidation to finish.
    pub quiescent: bool,
    /// Moves Karpenter's rules allow at the end that the controller has not taken.
    pub untaken: Vec<Move>,
    /// The rule keeping each other node.
    pub kept: Vec<Kept>,
}

/// The end-of-run measurement.
pub struct Cost {
    config: CostConfig,
}

impl Cost {
    /// With the run's settings.
    pub fn new(config: CostConfig) -> Self {
        Self { config }
    }

    /// Measures the rate against the bound; `moves` is the moves oracle's verdict now, and
    /// `demand_since` when the pods' total requests last changed.
    pub fn measure(
        &self,
        ctx: &Ctx<'_>,
        overhead: &Resources,
        moves: &Assessment,
        demand_since: Duration,
    ) -> CostSummary {
        let now = ctx.view.now;
        let rate = ctx.cloud.cost_report().rate_usd_per_hour;
        let pending = ctx.pods.iter().any(|p| p.active() && !p.daemonset && p.node_name.is_none());
        let bound = lower_bound_now(ctx.view, ctx.pods, ctx.cloud, overhead);
        let settle = longest_consolidate_after(ctx) + self.config.settled_for.0;
        let quiescent = !pending
            && now.saturating_sub(demand_since) >= settle
            && ctx
                .view
                .claims
                .values()
                .all(|c| c.deleting_since.is_none() && (c.initialized || c.provider_id.is_some()));
        CostSummary {
            rate_per_hour: rate,
            lower_bound_per_hour: bound,
            gap: (bound > 0.0).then(|| rate / bound - 1.0),
            quiescent,
            untaken: moves.moves.clone(),
            kept: moves.kept.clone(),
        }
    }
}

/// The LP lower bound, USD per hour, on hosting the active non-DaemonSet `pods` with the
/// offerings `view`'s NodePools allow and the cloud has available now (0 when nothing is
/// demanded or no offering covers the demand).
pub fn lower_bound_now(view: &View, pods: &[PodView], cloud: &FakeCloud, overhead: &Resources) -> f64 {
    let offerings: BTreeMap<String, Vec<Offering>> = view
        .pools
        .iter()
        // At the cloud's prices, not through the NodeOverlays: the rate it is compared with
        // is the cloud's bill.
        .map(|(name, pool)| (name.clone(), allowed_offerings(cloud, &Default::default(), &pool.object, view.now)))
        .collect();
    lower_bound_over(&offerings, pods, overhead)
}

/// [`lower_bound_now`] over each pool's available `offerings`, already listed and priced
/// (the HTML timeline's bound curve, `crate::timeline`, lists them from an
/// [`crate::oracle::offering_table::OfferingTable`]).
pub fn lower_bound_over(offerings: &BTreeMap<String, Vec<Offering>>, pods: &[PodView], overhead: &Resources) -> f64 {
    let supply = cheapest_supply(offerings, overhead);
    let mut demand = Resources::default();
    for p in pods.iter().filter(|p| p.active() && !p.daemonset) {
        demand.add(&p.requests);
    }
    lower_bound(&supply, &demand).unwrap_or(0.0)
}

/// When the pods' total requests last changed: the gap is called settled only after they
/// have held still long enough for the controller to consolidate.
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
/// unparsable values count as zero).
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

/// The kept nodes grouped by rule: how many, what they cost, and the first few names.
pub fn describe_kept(kept: &[Kept]) -> Vec<String> {
    let mut by_rule: BTreeMap<&str, Vec<&Kept>> = BTreeMap::new();
    for k in kept {
        by_rule.entry(k.rule.as_str()).or_default().push(k);
    }
    by_rule
        .into_iter()
        .map(|(rule, nodes)| {
            let rate: f64 = nodes.iter().map(|n| n.price).sum();
            let mut names: Vec<String> =
                nodes.iter().take(3).map(|n| format!("{} ({})", n.node, n.instance_type)).collect();
            if nodes.len() > 3 {
                names.push(format!("and {} more", nodes.len() - 3));
            }
            format!("{} node(s) at ${rate:.4}/h: {rule}: {}", nodes.len(), names.join(", "))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_supply_is_the_cheapest_offering_per_type_after_overhead() {
        let gib = 1024.0 * 1024.0 * 1024.0;
        let offering = |t: &str, zone: &str, price: f64| Offering {
            instance_type: t.into(),
            zone: zone.into(),
            capacity_type: dovetail_fakecloud::CapacityType::OnDemand,
            price,
            allocatable: Resources { cpu: 1_930.0, memory: 7.0 * gib, pods: 29.0 },
            planned: Resources { cpu: 1_930.0, memory: 7.0 * gib, pods: 29.0 },
            labels: std::sync::Arc::default(),
        };
        let offerings: BTreeMap<String, Vec<Offering>> = [(
            "p".to_string(),
            vec![offering("m5.large", "a", 0.096), offering("m5.large", "b", 0.090), offering("c5.large", "a", 0.085)],
        )]
        .into();
        let overhead = Resources { cpu: 100.0, memory: gib, pods: 1.0 };
        let supply = cheapest_supply(&offerings, &overhead);
        assert_eq!(supply.len(), 2);
        let m5 = supply.iter().find(|s| s.price == 0.090).expect("m5.large at its cheapest zone");
        assert_eq!(m5.capacity, Resources { cpu: 1_830.0, memory: 6.0 * gib, pods: 28.0 }, "overhead comes off");
    }
}
