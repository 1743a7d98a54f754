//! Registration (core nodeclaim/lifecycle/registration.go): when the Node with the claim's
//! providerID joins, sync the claim's labels, annotations and taints onto it, add the
//! termination finalizer and an owner reference, drop the `karpenter.sh/unregistered` taint and
//! label it registered.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint};
use serde_json::{Value, json};

use crate::apis::{NodeClaim, labels};

/// The merge patch that registers `node` for `claim`, guarded by the node's resourceVersion.
pub fn registration_patch(claim: &NodeClaim, node: &Node) -> Value {
    let mut node_labels: BTreeMap<String, String> = node.metadata.labels.clone().unwrap_or_default();
    for (key, value) in claim.metadata.labels.iter().flatten() {
        node_labels.insert(key.clone(), value.clone());
    }
    node_labels.insert(labels::NODE_REGISTERED_LABEL.into(), "true".into());
    let mut annotations: BTreeMap<String, String> = node.metadata.annotations.clone().unwrap_or_default();
    for (key, value) in claim.metadata.annotations.iter().flatten() {
        annotations.insert(key.clone(), value.clone());
    }
    let sync_taints = node_labels.get(labels::DO_NOT_SYNC_TAINTS_LABEL).is_none_or(|v| v != "true");
    let mut taints: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != labels::UNREGISTERED_TAINT_KEY)
        .collect();
    if sync_taints {
        for taint in claim.spec.taints().iter().chain(claim.spec.startup_taints()) {
            if !taints.iter().any(|t| t.key == taint.key && t.effect == taint.effect) {
                taints.push(taint.clone());
            }
        }
    }
    let mut finalizers = node.metadata.finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|f| f == labels::TERMINATION_FINALIZER) {
        finalizers.push(labels::TERMINATION_FINALIZER.into());
    }
    let mut owners = node.metadata.owner_references.clone().unwrap_or_default();
    let claim_uid = claim.metadata.uid.clone().unwrap_or_default();
    if !owners.iter().any(|o| o.uid == claim_uid) {
        owners.push(k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "karpenter.sh/v1".into(),
            kind: "NodeClaim".into(),
            name: claim.metadata.name.clone().unwrap_or_default(),
            uid: claim_uid,
            block_owner_deletion: Some(true),
            controller: None,
        });
    }
    json!({
        "metadata": {
            "resourceVersion": node.metadata.resource_version,
            "labels": node_labels,
            "annotations": annotations,
            "finalizers": finalizers,
            "ownerReferences": owners,
        },
        "spec": {"taints": taints},
    })
}

/// Whether [`registration_patch`] would change the Node: core patches only on change
/// (`pkg/controllers/nodeclaim/lifecycle/registration.go:104`, `if
/// !equality.Semantic.DeepEqual(stored, node)`), so a registration retried after its status
/// write lost a race sends no empty patch.
pub fn registration_changes(claim: &NodeClaim, node: &Node) -> bool {
    let patch = registration_patch(claim, node);
    let m = &node.metadata;
    let taints = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    patch["metadata"]["labels"] != json!(m.labels.clone().unwrap_or_default())
        || patch["metadata"]["annotations"] != json!(m.annotations.clone().unwrap_or_default())
        || patch["metadata"]["finalizers"] != json!(m.finalizers.clone().unwrap_or_default())
        || patch["metadata"]["ownerReferences"] != json!(m.owner_references.clone().unwrap_or_default())
        || patch["spec"]["taints"] != json!(taints)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_swaps_unregistered_taint_for_claim_taints_and_adds_finalizer() {
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "default-abcde", "uid": "c-1", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
                     "startupTaints": [{"key": "example.com/startup", "effect": "NoSchedule"}]}
        }))
        .expect("claim");
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "ip-10-0-0-1", "resourceVersion": "7", "labels": {"kubernetes.io/hostname": "ip-10-0-0-1"}},
            "spec": {"taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        }))
        .expect("node");
        let patch = registration_patch(&claim, &node);
        assert_eq!(patch["metadata"]["labels"]["karpenter.sh/registered"], "true");
        assert_eq!(patch["metadata"]["labels"]["karpenter.sh/nodepool"], "default");
        assert_eq!(patch["metadata"]["finalizers"], json!(["karpenter.sh/termination"]));
        assert_eq!(patch["metadata"]["ownerReferences"][0]["uid"], "c-1");
        let keys: Vec<&str> =
            patch["spec"]["taints"].as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["dedicated", "example.com/startup"]);
    }

    #[test]
    fn a_registered_node_needs_no_second_patch() {
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "default-abcde", "uid": "c-1", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        }))
        .expect("claim");
        let fresh: Node = serde_json::from_value(json!({
            "metadata": {"name": "ip-10-0-0-1", "resourceVersion": "7"},
            "spec": {"taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]}
        }))
        .expect("node");
        assert!(registration_changes(&claim, &fresh));
        // The node as the patch left it: registering again changes nothing.
        let patch = registration_patch(&claim, &fresh);
        let mut registered = serde_json::to_value(&fresh).expect("node");
        for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
            registered["metadata"][field] = patch["metadata"][field].clone();
        }
        registered["spec"]["taints"] = patch["spec"]["taints"].clone();
        let registered: Node = serde_json::from_value(registered).expect("node");
        assert!(!registration_changes(&claim, &registered));
    }
}
