//! What the moves oracle reads from the store beyond the [`super::super::view::View`]:
//! PodDisruptionBudgets, each Node's labels and taints, the NodeClaims annotated
//! `karpenter.sh/do-not-disrupt`, each NodeClaim's `expireAfter` (for upstream's candidate
//! order), and the DaemonSet overhead a replacement node carries.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use dovetail_world::SimDuration;
use serde_json::Value;

use crate::apiserver::labels_of;
use crate::apiserver::selector::LabelSelector;
use crate::apiserver::store::Store;
use crate::oracle::resources::{Resources, daemonset_overhead};
use crate::oracle::view::key;

/// A Node's scheduling facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeFacts {
    /// metadata.labels.
    pub labels: BTreeMap<String, String>,
    /// spec.taints.
    pub taints: Vec<Value>,
}

/// A PodDisruptionBudget: its namespace, selector and `status.disruptionsAllowed`.
#[derive(Clone, Debug)]
pub struct Pdb {
    /// `namespace/name`.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// spec.selector.
    pub selector: LabelSelector,
    /// status.disruptionsAllowed (0 when the status is not written yet: fail closed).
    pub disruptions_allowed: i64,
}

/// The store's facts the oracle reads.
#[derive(Clone, Debug, Default)]
pub struct MoveInputs {
    /// Every PDB with a valid selector.
    pub pdbs: Vec<Pdb>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, NodeFacts>,
    /// NodeClaims annotated `karpenter.sh/do-not-disrupt: "true"`, by their node's name.
    pub claim_do_not_disrupt: BTreeSet<String>,
    /// Each NodeClaim's `spec.expireAfter`, by NodeClaim name (absent for `Never`).
    pub claim_expire_after: BTreeMap<String, std::time::Duration>,
    /// Requests of the DaemonSets that run on every node.
    pub overhead: Resources,
    /// What the discovered-capacity model reads (classes' AMIs, nodes' images).
    pub discovery: crate::oracle::discovered_capacity::Inputs,
}

impl MoveInputs {
    /// Reads them from `store`.
    pub fn read(store: &Store) -> Self {
        let mut inputs = MoveInputs::default();
        for pdb in store.iter(&key("policy", "poddisruptionbudgets"), None) {
            let Some(selector) = pdb
                .pointer("/spec/selector")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .and_then(|s| LabelSelector::from_api(&s).ok())
            else {
                continue;
            };
            let namespace = pdb["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
            inputs.pdbs.push(Pdb {
                name: format!("{namespace}/{}", pdb["metadata"]["name"].as_str().unwrap_or_default()),
                namespace,
                selector,
                disruptions_allowed: pdb["status"]["disruptionsAllowed"].as_i64().unwrap_or(0),
            });
        }
        for n in store.iter(&key("", "nodes"), None) {
            let name = n["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let taints = n.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
            inputs.nodes.insert(name, NodeFacts { labels: labels_of(n), taints });
        }
        for c in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            if c["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"
                && let Some(node) = c["status"]["nodeName"].as_str()
            {
                inputs.claim_do_not_disrupt.insert(node.to_string());
            }
            if let Some(expire) = c["spec"]["expireAfter"].as_str().and_then(|d| SimDuration::parse(d).ok()) {
                let name = c["metadata"]["name"].as_str().unwrap_or_default().to_string();
                inputs.claim_expire_after.insert(name, expire.0);
            }
        }
        let daemonsets: Vec<Arc<Value>> = store.iter(&key("apps", "daemonsets"), None).cloned().collect();
        inputs.overhead = daemonset_overhead(daemonsets.iter().map(|d| d.as_ref()));
        inputs.discovery = crate::oracle::discovered_capacity::Inputs::read(store);
        inputs
    }

    /// The PDBs that select `pod`.
    pub fn pdbs_of<'a>(&'a self, pod: &Value) -> impl Iterator<Item = &'a Pdb> {
        let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        let labels = labels_of(pod);
        self.pdbs.iter().filter(move |p| p.namespace == namespace && p.selector.matches(&labels))
    }
}
