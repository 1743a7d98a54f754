//! Lookups a pass over every NodeClaim makes per claim, indexed once per pass: which Node has a
//! claim's providerID and which pods are bound to a node. [`Snapshot::nodes_for_node_claim`]
//! and [`Snapshot::pods_on_node`] scan every node and every pod, so a pass that asks them once
//! per claim is quadratic in the cluster size (at 2,000 nodes and 6,000 pods that was most of
//! a consolidation decision's time, docs/benchmarks-measured.md "Session 19"). The index gives
//! the same answers, in the same (key) order.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::Snapshot;
use crate::apis::NodeClaim;

/// Nodes by `spec.providerID` and pods by `spec.nodeName`, borrowed from one snapshot.
#[derive(Debug, Default)]
pub struct SnapshotIndex<'a> {
    nodes_by_provider_id: BTreeMap<&'a str, Vec<&'a Arc<Node>>>,
    pods_by_node: BTreeMap<&'a str, Vec<(&'a str, &'a Arc<Pod>)>>,
    /// The first NodeClaim (in name order) with each providerID.
    claims_by_provider_id: BTreeMap<&'a str, &'a Arc<NodeClaim>>,
}

impl<'a> SnapshotIndex<'a> {
    /// Indexes `snapshot` (one pass over its nodes and pods).
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let mut index = Self::default();
        for node in snapshot.nodes.values() {
            if let Some(provider_id) = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()) {
                index.nodes_by_provider_id.entry(provider_id).or_default().push(node);
            }
        }
        for claim in snapshot.node_claims.values() {
            if let Some(provider_id) = claim.provider_id() {
                index.claims_by_provider_id.entry(provider_id).or_insert(claim);
            }
        }
        for (key, pod) in &snapshot.pods {
            if let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
                index.pods_by_node.entry(node_name).or_default().push((key.as_str(), pod));
            }
        }
        index
    }

    /// [`Snapshot::nodes_for_node_claim`]: the Node(s) whose providerID matches the claim's,
    /// in name order.
    pub fn nodes_for_node_claim(&self, claim: &NodeClaim) -> &[&'a Arc<Node>] {
        claim
            .provider_id()
            .and_then(|provider_id| self.nodes_by_provider_id.get(provider_id))
            .map_or(&[], Vec::as_slice)
    }

    /// [`Snapshot::node_claim_for_node`]: the NodeClaim whose providerID matches the node's.
    pub fn node_claim_for_node(&self, node: &Node) -> Option<&'a Arc<NodeClaim>> {
        let provider_id = node.spec.as_ref()?.provider_id.as_deref()?;
        self.claims_by_provider_id.get(provider_id).copied()
    }

    /// [`Snapshot::pods_on_node`]: pods bound to `node_name`, in key order.
    pub fn pods_on_node(&self, node_name: &str) -> impl Iterator<Item = &'a Arc<Pod>> + '_ {
        self.keyed_pods_on_node(node_name).map(|(_, pod)| pod)
    }

    /// [`Self::pods_on_node`] with each pod's key in the snapshot.
    pub fn keyed_pods_on_node(&self, node_name: &str) -> impl Iterator<Item = (&'a str, &'a Arc<Pod>)> + '_ {
        self.pods_by_node.get(node_name).into_iter().flatten().copied()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Node, Pod};

    use super::SnapshotIndex;
    use crate::apis::NodeClaim;
    use crate::state::Snapshot;

    fn node(name: &str, provider_id: Option<&str>) -> Arc<Node> {
        let mut node = serde_json::json!({"metadata": {"name": name}, "spec": {}});
        if let Some(id) = provider_id {
            node["spec"]["providerID"] = id.into();
        }
        Arc::new(serde_json::from_value(node).expect("node"))
    }

    fn pod(name: &str, node_name: Option<&str>) -> Arc<Pod> {
        let mut pod =
            serde_json::json!({"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": []}});
        if let Some(n) = node_name {
            pod["spec"]["nodeName"] = n.into();
        }
        Arc::new(serde_json::from_value(pod).expect("pod"))
    }

    fn claim(provider_id: Option<&str>) -> NodeClaim {
        let mut claim = serde_json::json!({"metadata": {"name": "c"}, "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}, "requirements": []}});
        if let Some(id) = provider_id {
            claim["status"] = serde_json::json!({"providerID": id});
        }
        serde_json::from_value(claim).expect("claim")
    }

    /// Same answers as the scanning lookups, including duplicates, empty ids and no id.
    #[test]
    fn matches_the_snapshot_scans() {
        let mut snapshot = Snapshot::default();
        for (name, id) in [("b", Some("aws:///1")), ("a", Some("aws:///1")), ("c", Some("")), ("d", None)] {
            snapshot.nodes.insert(name.to_owned(), node(name, id));
        }
        for (name, node_name) in [("p3", Some("a")), ("p1", Some("a")), ("p2", Some("b")), ("p4", None)] {
            snapshot.pods.insert(format!("default/{name}"), pod(name, node_name));
        }
        let index = SnapshotIndex::new(&snapshot);
        for id in [Some("aws:///1"), Some(""), Some("aws:///2"), None] {
            let claim = claim(id);
            assert_eq!(index.nodes_for_node_claim(&claim), snapshot.nodes_for_node_claim(&claim).as_slice());
        }
        for (name, id) in [("c2", Some("aws:///1")), ("c1", Some("aws:///1")), ("c3", None)] {
            let mut claim = claim(id);
            claim.metadata.name = Some(name.to_owned());
            snapshot.node_claims.insert(name.to_owned(), Arc::new(claim));
        }
        let index = SnapshotIndex::new(&snapshot);
        for node in snapshot.nodes.values() {
            assert_eq!(index.node_claim_for_node(node), snapshot.node_claim_for_node(node));
        }
        for name in ["a", "b", "c", "zz"] {
            let indexed: Vec<_> = index.pods_on_node(name).collect();
            let scanned: Vec<_> = snapshot.pods_on_node(name).collect();
            assert_eq!(indexed, scanned);
        }
    }
}
