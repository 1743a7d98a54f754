//! The dynamic provisioner of an EBS CSI-like driver, with the PV controller's binding: a
//! `WaitForFirstConsumer` claim marked with the node the scheduler chose
//! (`volume.kubernetes.io/selected-node`) gets, after [`PROVISION_DELAY`], a zonal
//! PersistentVolume in that node's zone, bound to it.
//!
//! external-provisioner `controller.go` `provisionClaimOperation` (the selected node's
//! topology becomes the volume's accessible topology, which the CSI translation writes as
//! the PV's required node affinity), then kube-controller-manager's PV controller
//! (`pv_controller.go` `bind`: `spec.volumeName`, `pv.kubernetes.io/bind-completed`,
//! phase `Bound` on both). A claim whose selected node is gone loses the mark, as
//! external-provisioner does (`rescheduleProvisioning`), so the scheduler chooses again.
//! Volumes are never deleted: claims outlive their pods and nothing here deletes claims.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::runtime::Reconciler;
use super::volume_claims::{BIND_COMPLETED, SELECTED_NODE};
use super::workloads::at;
use crate::apiserver::store::{Part, Store, WriteOptions};

/// How long creating a volume takes (an EBS `CreateVolume` to `available`).
pub const PROVISION_DELAY: Duration = Duration::from_secs(2);
/// The zone key of the provisioned volumes' node affinity.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Provisions and binds volumes for claims waiting on their first consumer.
#[derive(Default)]
pub struct VolumeProvisioner {
    /// Claim (`namespace/name`) → when its selected node was first seen.
    seen: BTreeMap<String, Duration>,
}

impl Reconciler for VolumeProvisioner {
    fn name(&self) -> &'static str {
        "volume-provisioner"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("", "persistentvolumeclaims")]
    }

    fn reconcile(&mut self, store: &mut Store, now: Duration) -> Option<Duration> {
        let pvcs = store.registry().get("", "persistentvolumeclaims")?;
        let claims: Vec<Arc<Value>> = store.iter(&pvcs.key(), None).cloned().collect();
        let mut waiting = BTreeMap::new();
        let mut next: Option<Duration> = None;
        for claim in claims {
            let Some(node) = at(&claim, &["metadata", "annotations", SELECTED_NODE]).and_then(Value::as_str) else {
                continue;
            };
            let bound = at(&claim, &["spec", "volumeName"]).and_then(Value::as_str).is_some_and(|v| !v.is_empty());
            if bound || at(&claim, &["metadata", "deletionTimestamp"]).is_some() {
                continue;
            }
            let key = format!("{}/{}", claim["metadata"]["namespace"].as_str().unwrap_or(""), name(&claim));
            let since = self.seen.get(&key).copied().unwrap_or(now);
            waiting.insert(key, since);
            let due = since + PROVISION_DELAY;
            if now < due {
                next = Some(next.map_or(due, |n| n.min(due)));
                continue;
            }
            provision(store, &claim, node);
        }
        // Forget claims that were bound or lost their mark.
        self.seen = waiting;
        next
    }
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

/// Creates the claim's volume in `node`'s zone and binds the two; unmarks the claim if the
/// node is gone.
fn provision(store: &mut Store, claim: &Value, node: &str) {
    let pvcs = store.registry().get("", "persistentvolumeclaims").expect("served");
    let pvs = store.registry().get("", "persistentvolumes").expect("served");
    let nodes = store.registry().get("", "nodes").expect("served");
    let ns = claim["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    let claim_name = name(claim).to_string();
    let zone = store
        .get(&nodes, "", node)
        .ok()
        .and_then(|n| at(&n, &["metadata", "labels", ZONE_LABEL]).and_then(Value::as_str).map(String::from));
    let Some(zone) = zone else {
        let mut new = claim.clone();
        if let Some(a) = new["metadata"]["annotations"].as_object_mut() {
            a.remove(SELECTED_NODE);
        }
        let _ = store.update(&pvcs, &ns, &claim_name, new, Part::Main, WriteOptions::default());
        return;
    };
    let class_name = at(claim, &["spec", "storageClassName"]).and_then(Value::as_str).unwrap_or("");
    let class =
        store.registry().get("storage.k8s.io", "storageclasses").and_then(|t| store.get(&t, "", class_name).ok());
    let driver = class.as_ref().and_then(|c| c["provisioner"].as_str()).unwrap_or("ebs.csi.aws.com").to_string();
    let reclaim = class.as_ref().and_then(|c| c["reclaimPolicy"].as_str()).unwrap_or("Delete").to_string();
    let uid = claim["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let volume_name = format!("pvc-{uid}");
    let storage = at(claim, &["spec", "resources", "requests", "storage"]).cloned().unwrap_or(json!("1Gi"));
    let volume = json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": volume_name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
        "spec": {
            "capacity": {"storage": storage},
            "accessModes": claim["spec"]["accessModes"],
            "persistentVolumeReclaimPolicy": reclaim,
            "storageClassName": class_name,
            "volumeMode": "Filesystem",
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ns, "name": claim_name, "uid": uid},
            "csi": {"driver": driver, "volumeHandle": format!("vol-{}", uid.chars().filter(|c| *c != '-').take(17).collect::<String>())},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}]}},
        },
    });
    if store.create(&pvs, "", volume, WriteOptions::default()).is_err() {
        return;
    }
    if let Ok(pv) = store.get(&pvs, "", &volume_name) {
        let mut bound = (*pv).clone();
        bound["status"] = json!({"phase": "Bound"});
        let _ = store.update(&pvs, "", &volume_name, bound, Part::Status, WriteOptions::default());
    }
    let mut new = claim.clone();
    new["spec"]["volumeName"] = json!(volume_name);
    new["metadata"]["annotations"][BIND_COMPLETED] = json!("yes");
    new["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] = json!("yes");
    if let Ok(updated) = store.update(&pvcs, &ns, &claim_name, new, Part::Main, WriteOptions::default()) {
        let mut with_status = (*updated).clone();
        with_status["status"] = json!({"phase": "Bound", "accessModes": claim["spec"]["accessModes"],
            "capacity": {"storage": storage}});
        let _ = store.update(&pvcs, &ns, &claim_name, with_status, Part::Status, WriteOptions::default());
    }
}
