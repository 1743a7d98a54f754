//! `karpenter_pods_state` (core `pkg/controllers/metrics/pod`): one gauge series per pod whose
//! labels *are* its state, so a changed pod's old series is removed when the new one is set.

use std::collections::BTreeMap;
use std::sync::Mutex;

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Gauges, Labels, gauge};

/// The labels of one `karpenter_pods_state` series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodState {
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// `Kind/name` of the controlling owner, or empty.
    pub owner: String,
    /// Node name, or empty while pending.
    pub node: String,
    /// The node's NodePool, or empty.
    pub nodepool: String,
    /// The node's zone.
    pub zone: String,
    /// The node's architecture.
    pub arch: String,
    /// The node's capacity type.
    pub capacity_type: String,
    /// The node's instance type.
    pub instance_type: String,
    /// Pod phase.
    pub phase: String,
}

impl PodState {
    fn labels(&self) -> Labels {
        vec![
            ("name", self.name.clone()),
            ("namespace", self.namespace.clone()),
            ("owner", self.owner.clone()),
            ("node", self.node.clone()),
            ("nodepool", self.nodepool.clone()),
            ("zone", self.zone.clone()),
            ("arch", self.arch.clone()),
            ("capacity_type", self.capacity_type.clone()),
            ("instance_type", self.instance_type.clone()),
            ("phase", self.phase.clone()),
        ]
    }
}

/// The pod state gauge and the series each pod currently has in it.
pub(super) struct PodMetrics {
    state: Gauges,
    /// The series each pod (namespace, name) currently has in `state`.
    series: Mutex<BTreeMap<(String, String), Labels>>,
}

impl PodMetrics {
    /// Registers the family in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let state = gauge(
            r,
            "karpenter_pods_state",
            "Pod state is the current state of pods. Labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type and pod phase.",
        );
        Self { state, series: Mutex::new(BTreeMap::new()) }
    }
}

impl Metrics {
    /// Sets a pod's `karpenter_pods_state` series, replacing the one it had.
    pub fn pod_state(&self, state: &PodState) {
        let pods = &self.0.pods;
        let labels = state.labels();
        let key = (state.namespace.clone(), state.name.clone());
        let mut series = pods.series.lock().expect("pod series lock");
        if let Some(old) = series.insert(key, labels.clone())
            && old != labels
        {
            pods.state.remove(&old);
        }
        pods.state.get_or_create(&labels).set(1.0);
    }

    /// Removes a deleted pod's `karpenter_pods_state` series.
    pub fn pod_deleted(&self, namespace: &str, name: &str) {
        let pods = &self.0.pods;
        let mut series = pods.series.lock().expect("pod series lock");
        if let Some(old) = series.remove(&(namespace.to_string(), name.to_string())) {
            pods.state.remove(&old);
        }
    }
}
