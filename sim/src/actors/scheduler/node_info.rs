//! One node's scheduling view with incremental accounting (kube-scheduler `NodeInfo`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Taint};

use super::pod_facts::{HostPort, PodFacts, PodKey};
use super::resources::Resources;
use super::selectors::Labels;

/// A node plus the sums of what its bound pods request, kept current as pods come and go so
/// that no filter needs to walk the node's pods.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `spec.taints`.
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `status.allocatable`.
    pub allocatable: Resources,
    /// Sum of bound pods' requests (filtering view).
    pub requested: Resources,
    /// Sum of bound pods' requests with 100m/200Mi defaults (scoring view).
    pub non_zero_requested: Resources,
    /// Bound pods.
    pub pods: BTreeSet<PodKey>,
    /// Bound pods' priorities, counted, for the preemption message.
    pub priorities: BTreeMap<i32, u32>,
    /// Host ports in use: (protocol, port) to the host IPs using it.
    pub used_ports: BTreeMap<(String, i32), BTreeMap<String, u32>>,
}

impl NodeInfo {
    /// A node with no pods.
    pub fn new(node: &Node) -> Self {
        let spec = node.spec.clone().unwrap_or_default();
        NodeInfo {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: spec.taints.unwrap_or_default(),
            unschedulable: spec.unschedulable.unwrap_or(false),
            allocatable: Resources::allocatable_of(node),
            requested: Resources::default(),
            non_zero_requested: Resources::default(),
            pods: BTreeSet::new(),
            priorities: BTreeMap::new(),
            used_ports: BTreeMap::new(),
        }
    }

    /// Replaces the node object, keeping pod accounting.
    pub fn set_node(&mut self, node: &Node) {
        let fresh = NodeInfo::new(node);
        self.name = fresh.name;
        self.labels = fresh.labels;
        self.taints = fresh.taints;
        self.unschedulable = fresh.unschedulable;
        self.allocatable = fresh.allocatable;
    }

    /// Accounts a pod bound to this node.
    pub fn add_pod(&mut self, pod: &PodFacts) {
        let inserted = self.pods.insert(pod.key.clone());
        debug_assert!(inserted, "pod {} added twice to {}", pod.key, self.name);
        self.requested.add(&pod.requests);
        self.non_zero_requested.add(&pod.requests_non_zero);
        *self.priorities.entry(pod.priority).or_insert(0) += 1;
        for p in &pod.host_ports {
            *self.used_ports.entry((p.protocol.clone(), p.port)).or_default().entry(p.ip.clone()).or_insert(0) += 1;
        }
    }

    /// Removes a pod's accounting.
    pub fn remove_pod(&mut self, pod: &PodFacts) {
        let removed = self.pods.remove(&pod.key);
        debug_assert!(removed, "pod {} not on {}", pod.key, self.name);
        self.requested.sub(&pod.requests);
        self.non_zero_requested.sub(&pod.requests_non_zero);
        if let Some(n) = self.priorities.get_mut(&pod.priority) {
            *n -= 1;
            if *n == 0 {
                self.priorities.remove(&pod.priority);
            }
        }
        for p in &pod.host_ports {
            let key = (p.protocol.clone(), p.port);
            if let Some(ips) = self.used_ports.get_mut(&key) {
                if let Some(n) = ips.get_mut(&p.ip) {
                    *n -= 1;
                    if *n == 0 {
                        ips.remove(&p.ip);
                    }
                }
                if ips.is_empty() {
                    self.used_ports.remove(&key);
                }
            }
        }
    }

    /// `HostPortInfo.CheckConflict`: same protocol and port, and either side binds 0.0.0.0 or
    /// both bind the same IP.
    pub fn port_conflicts(&self, wanted: &HostPort) -> bool {
        let Some(ips) = self.used_ports.get(&(wanted.protocol.clone(), wanted.port)) else {
            return false;
        };
        wanted.ip == "0.0.0.0" || ips.contains_key("0.0.0.0") || ips.contains_key(&wanted.ip)
    }

    /// Whether some bound pod has a priority below `priority` (a possible preemption victim).
    pub fn has_lower_priority_pod(&self, priority: i32) -> bool {
        self.priorities.range(..priority).next().is_some()
    }
}
