//! Per-NodePool gauges (core `pkg/controllers/metrics/nodepool`, disruption budgets): usage,
//! limits and allowed disruptions, with every series of a deleted pool removed together.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Gauges, Labels, gauge};

/// The per-NodePool gauge families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PoolGauge {
    Usage,
    Limit,
    AllowedDisruptions,
}

/// The NodePool gauge families and the series each pool has in them.
pub(super) struct NodePoolMetrics {
    usage: Gauges,
    limit: Gauges,
    allowed_disruptions: Gauges,
    /// Each NodePool's gauge series, so a deleted pool's series can all be removed.
    series: Mutex<BTreeMap<String, BTreeSet<(PoolGauge, Labels)>>>,
}

impl NodePoolMetrics {
    /// Registers the families, in this order, in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let usage = gauge(
            r,
            "karpenter_nodepools_usage",
            "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.",
        );
        let limit = gauge(
            r,
            "karpenter_nodepools_limit",
            "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
        );
        let allowed_disruptions = gauge(
            r,
            "karpenter_nodepools_allowed_disruptions",
            "The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. Labeled by NodePool and reason.",
        );
        Self { usage, limit, allowed_disruptions, series: Mutex::new(BTreeMap::new()) }
    }

    fn family(&self, which: PoolGauge) -> &Gauges {
        match which {
            PoolGauge::Usage => &self.usage,
            PoolGauge::Limit => &self.limit,
            PoolGauge::AllowedDisruptions => &self.allowed_disruptions,
        }
    }

    fn set(&self, which: PoolGauge, nodepool: &str, rest: Labels, value: f64) {
        let mut labels: Labels = vec![("nodepool", nodepool.into())];
        labels.extend(rest);
        self.family(which).get_or_create(&labels).set(value);
        let mut series = self.series.lock().expect("pool series lock");
        series.entry(nodepool.to_string()).or_default().insert((which, labels));
    }
}

impl Metrics {
    /// A NodePool's provisioned amount of `resource_type` (`cpu` in cores, `memory` in bytes, `nodes`, ...).
    pub fn nodepool_usage(&self, nodepool: &str, resource_type: &str, value: f64) {
        self.0.nodepools.set(PoolGauge::Usage, nodepool, vec![("resource_type", resource_type.into())], value);
    }

    /// A NodePool's limit on `resource_type`.
    pub fn nodepool_limit(&self, nodepool: &str, resource_type: &str, value: f64) {
        self.0.nodepools.set(PoolGauge::Limit, nodepool, vec![("resource_type", resource_type.into())], value);
    }

    /// How many of a NodePool's nodes may be disrupting at once for `reason`.
    pub fn nodepool_allowed_disruptions(&self, nodepool: &str, reason: &str, allowed: usize) {
        let labels = vec![("reason", reason.into())];
        self.0.nodepools.set(PoolGauge::AllowedDisruptions, nodepool, labels, allowed as f64);
    }

    /// Removes every gauge series of a deleted NodePool.
    pub fn nodepool_deleted(&self, nodepool: &str) {
        let pools = &self.0.nodepools;
        let removed = pools.series.lock().expect("pool series lock").remove(nodepool).unwrap_or_default();
        for (which, labels) in removed {
            pools.family(which).remove(&labels);
        }
    }
}
