//! kube-scheduler's default plugins, one file each, as pure functions over the cache.
//!
//! Filters return `None` when the node passes, or the [`Status`] kube-scheduler's plugin would
//! return; the framework stops at the first failing filter per node, in
//! [`FILTER_ORDER`]. Scores are raw per-node values that the framework normalises to 0..=100
//! and weights as kube-scheduler's default profile does.

pub mod balanced_allocation;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod taint_toleration;
pub mod volume_binding;

use std::fmt;

/// A scheduler plugin that can reject a pod, named as in kube-scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Plugin {
    /// `NodeUnschedulable`: cordoned nodes.
    NodeUnschedulable,
    /// `NodeName`: `spec.nodeName`.
    NodeName,
    /// `TaintToleration`: NoSchedule/NoExecute taints.
    TaintToleration,
    /// `NodeAffinity`: nodeSelector and required node affinity.
    NodeAffinity,
    /// `NodePorts`: host ports.
    NodePorts,
    /// `NodeResourcesFit`: requests against allocatable.
    NodeResourcesFit,
    /// `VolumeBinding` (and `VolumeZone`): bound volumes' node affinity, provisionable claims.
    VolumeBinding,
    /// `PodTopologySpread`: hard spread constraints.
    PodTopologySpread,
    /// `InterPodAffinity`: required pod affinity and anti-affinity.
    InterPodAffinity,
}

/// Filter plugins in the order of kube-scheduler's default profile (`getDefaultPlugins`).
pub const FILTER_ORDER: [Plugin; 9] = [
    Plugin::NodeUnschedulable,
    Plugin::NodeName,
    Plugin::TaintToleration,
    Plugin::NodeAffinity,
    Plugin::NodePorts,
    Plugin::NodeResourcesFit,
    Plugin::VolumeBinding,
    Plugin::PodTopologySpread,
    Plugin::InterPodAffinity,
];

impl fmt::Display for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Whether preemption could make a rejected node feasible (framework status codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Code {
    /// `Unschedulable`: removing other pods might help.
    Unschedulable,
    /// `UnschedulableAndUnresolvable`: nothing about other pods would help.
    UnschedulableAndUnresolvable,
}

/// Why one node rejected the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The rejecting plugin.
    pub plugin: Plugin,
    /// Whether preemption could help.
    pub code: Code,
    /// The reasons, exactly as kube-scheduler words them (counted in the FitError message).
    pub reasons: Vec<String>,
}

impl Status {
    /// A status with one reason.
    pub fn new(plugin: Plugin, code: Code, reason: impl Into<String>) -> Self {
        Status { plugin, code, reasons: vec![reason.into()] }
    }
}

/// kube-scheduler `MaxNodeScore`.
pub const MAX_NODE_SCORE: i64 = 100;

/// `helper.DefaultNormalizeScore`: scale to 0..=100 by the maximum, optionally reversed.
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = MAX_NODE_SCORE * *s / max;
        *s = if reverse { MAX_NODE_SCORE - scaled } else { scaled };
    }
}
