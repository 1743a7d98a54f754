//! Cluster state metrics (core `pkg/controllers/state/metrics.go`): whether the in-memory
//! cluster state matches the API server, and how many nodes it holds.

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Gauges, gauge};

/// The cluster state families.
pub(super) struct ClusterStateMetrics {
    synced: Gauges,
    node_count: Gauges,
}

impl ClusterStateMetrics {
    /// Registers the families, in this order, in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let synced =
            gauge(r, "karpenter_cluster_state_synced", "Returns 1 if cluster state is synced and 0 otherwise.");
        let node_count = gauge(r, "karpenter_cluster_state_node_count", "Current count of nodes in cluster state");
        Self { synced, node_count }
    }
}

impl Metrics {
    /// Whether cluster state matches the API server, and how many nodes it holds.
    pub fn cluster_state(&self, synced: bool, node_count: usize) {
        let state = &self.0.cluster_state;
        state.synced.get_or_create(&vec![]).set(if synced { 1.0 } else { 0.0 });
        state.node_count.get_or_create(&vec![]).set(node_count as f64);
    }
}
