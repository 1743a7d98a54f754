//! What the kube-scheduler actor reads about a pod's PersistentVolumeClaims, and the mark it
//! leaves on a `WaitForFirstConsumer` claim once it chose a node.
//!
//! kube-scheduler's VolumeBinding resolves the claims from its informers at each attempt
//! (`binder.go` `GetPodVolumeClaims`, `FindPodVolumes`) and, for a claim to provision,
//! writes `volume.kubernetes.io/selected-node` in PreBind (`BindPodVolumes` →
//! `bindAPIUpdate`) for the external provisioner to act on. The real PreBind then waits
//! for the volume to be bound before binding the pod; the simulation binds at once and the
//! provisioner ([`super::volume_provisioner`]) creates the volume in the node's zone just
//! after, which comes to the same placement.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Pod};
use serde_json::{Value, json};

use super::scheduler::{REASON_UNBOUND_IMMEDIATE, VolumeFacts};
use super::workloads::at;
use crate::apiserver::store::{Part, Store, WriteOptions};

/// The annotation kube-scheduler writes on a claim to provision (`volume.kubernetes.io/selected-node`).
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The PV controller's mark of a finished binding (`pv.kubernetes.io/bind-completed`).
pub const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";

/// The claims a pod mounts, `(namespace, claim name)`: `persistentVolumeClaim` volumes, and
/// generic `ephemeral` volumes (`<pod>-<volume>`).
pub fn claims_of(pod: &Pod) -> Vec<(String, String)> {
    if pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).is_none_or(Vec::is_empty) {
        return Vec::new();
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
    let name = pod.metadata.name.clone().unwrap_or_default();
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|v| match (&v.persistent_volume_claim, &v.ephemeral) {
            (Some(c), _) => Some((namespace.clone(), c.claim_name.clone())),
            (None, Some(_)) => Some((namespace.clone(), format!("{name}-{}", v.name))),
            (None, None) => None,
        })
        .collect()
}

fn get(store: &Store, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
    let t = store.registry().get(group, plural)?;
    store.get(&t, namespace, name).ok().map(|v| (*v).clone())
}

/// The pod's [`VolumeFacts`] from the store, or `None` when it mounts no claim.
pub fn resolve(store: &Store, pod: &Pod) -> Option<VolumeFacts> {
    let claims = claims_of(pod);
    if claims.is_empty() {
        return None;
    }
    let mut facts = VolumeFacts::default();
    for (namespace, name) in claims {
        let Some(claim) = get(store, "", "persistentvolumeclaims", &namespace, &name) else {
            facts.unresolvable = Some(format!("persistentvolumeclaim \"{name}\" not found"));
            return Some(facts);
        };
        let volume_name = at(&claim, &["spec", "volumeName"]).and_then(Value::as_str).unwrap_or("");
        if !volume_name.is_empty() {
            let Some(volume) = get(store, "", "persistentvolumes", "", volume_name) else {
                facts.unresolvable = Some(format!("persistentvolume \"{volume_name}\" not found"));
                return Some(facts);
            };
            let terms = at(&volume, &["spec", "nodeAffinity", "required", "nodeSelectorTerms"])
                .and_then(|t| serde_json::from_value::<Vec<NodeSelectorTerm>>(t.clone()).ok())
                .unwrap_or_default();
            facts.bound.push(terms);
            continue;
        }
        let class_name = at(&claim, &["spec", "storageClassName"]).and_then(Value::as_str).unwrap_or("");
        let Some(class) = get(store, "storage.k8s.io", "storageclasses", "", class_name) else {
            facts.unresolvable = Some(format!("storageclass.storage.k8s.io \"{class_name}\" not found"));
            return Some(facts);
        };
        if class["volumeBindingMode"].as_str().unwrap_or("Immediate") != "WaitForFirstConsumer" {
            facts.unresolvable = Some(REASON_UNBOUND_IMMEDIATE.into());
            return Some(facts);
        }
        facts.provisioned.push(allowed_topologies(&class));
        facts.to_provision.push((namespace, name));
    }
    Some(facts)
}

/// A class's `allowedTopologies` as node selector terms (one per topology term, its label
/// expressions as `In`).
fn allowed_topologies(class: &Value) -> Vec<NodeSelectorTerm> {
    class["allowedTopologies"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|term| NodeSelectorTerm {
            match_expressions: Some(
                term["matchLabelExpressions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| NodeSelectorRequirement {
                        key: e["key"].as_str().unwrap_or("").into(),
                        operator: "In".into(),
                        values: serde_json::from_value(e["values"].clone()).ok(),
                    })
                    .collect(),
            ),
            match_fields: None,
        })
        .collect()
}

/// Marks each claim to provision with the chosen node, as PreBind does.
pub fn select_node(store: &mut Store, facts: &VolumeFacts, node: &str) {
    let Some(t) = store.registry().get("", "persistentvolumeclaims") else { return };
    for (namespace, name) in &facts.to_provision {
        let Ok(claim) = store.get(&t, namespace, name) else { continue };
        if at(&claim, &["metadata", "annotations", SELECTED_NODE]).and_then(Value::as_str) == Some(node) {
            continue;
        }
        let mut new = (*claim).clone();
        if !new["metadata"]["annotations"].is_object() {
            new["metadata"]["annotations"] = json!({});
        }
        new["metadata"]["annotations"][SELECTED_NODE] = json!(node);
        let _ = store.update(&t, namespace, name, new, Part::Main, WriteOptions::default());
    }
}
