//! NodeClaim and Node lifecycle counters (core `pkg/controllers/nodeclaim/*/metrics.go`,
//! `node/termination/metrics.go`): created, terminated, disrupted and drifted claims, and
//! registered and terminated nodes, each labeled by the owning NodePool.

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Counters, counter};

/// The lifecycle counter families.
pub(super) struct NodeClaimMetrics {
    created: Counters,
    terminated: Counters,
    disrupted: Counters,
    drifted: Counters,
    nodes_created: Counters,
    nodes_terminated: Counters,
}

impl NodeClaimMetrics {
    /// Registers the families, in this order, in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let created = counter(
            r,
            "karpenter_nodeclaims_created",
            "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created and the owning nodepool.",
        );
        let terminated = counter(
            r,
            "karpenter_nodeclaims_terminated",
            "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool.",
        );
        let disrupted = counter(
            r,
            "karpenter_nodeclaims_disrupted",
            "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted and the owning nodepool.",
        );
        let drifted = counter(
            r,
            "karpenter_nodeclaims_drifted",
            "Number of nodeclaims drifted reasons in total by Karpenter. Labeled by drift type of the nodeclaim and the owning nodepool.",
        );
        let nodes_created = counter(
            r,
            "karpenter_nodes_created",
            "Number of nodes created in total by Karpenter. Labeled by owning nodepool.",
        );
        let nodes_terminated = counter(
            r,
            "karpenter_nodes_terminated",
            "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool.",
        );
        Self { created, terminated, disrupted, drifted, nodes_created, nodes_terminated }
    }
}

impl Metrics {
    /// A NodeClaim was created (`reason`: `provisioning` or a disruption reason).
    pub fn nodeclaim_created(&self, reason: &str, nodepool: &str) {
        self.0.nodeclaims.created.get_or_create(&vec![("reason", reason.into()), ("nodepool", nodepool.into())]).inc();
    }

    /// A NodeClaim's finalizer was removed.
    pub fn nodeclaim_terminated(&self, nodepool: &str) {
        self.0.nodeclaims.terminated.get_or_create(&vec![("nodepool", nodepool.into())]).inc();
    }

    /// A NodeClaim was disrupted (`reason`: `Empty`, `Underutilized`, `Drifted`, `Expired`, ...).
    pub fn nodeclaim_disrupted(&self, reason: &str, nodepool: &str) {
        self.0
            .nodeclaims
            .disrupted
            .get_or_create(&vec![("reason", reason.into()), ("nodepool", nodepool.into())])
            .inc();
    }

    /// A NodeClaim was newly marked `Drifted` (`drift_type`: `AMIDrift`, `NodePoolDrifted`, ...).
    pub fn nodeclaim_drifted(&self, drift_type: &str, nodepool: &str, capacity_type: &str) {
        self.0
            .nodeclaims
            .drifted
            .get_or_create(&vec![
                ("type", drift_type.into()),
                ("nodepool", nodepool.into()),
                ("capacity_type", capacity_type.into()),
            ])
            .inc();
    }

    /// A NodeClaim's Node registered.
    pub fn node_created(&self, nodepool: &str) {
        self.0.nodeclaims.nodes_created.get_or_create(&vec![("nodepool", nodepool.into())]).inc();
    }

    /// A Node's finalizer was removed.
    pub fn node_terminated(&self, nodepool: &str) {
        self.0.nodeclaims.nodes_terminated.get_or_create(&vec![("nodepool", nodepool.into())]).inc();
    }
}
