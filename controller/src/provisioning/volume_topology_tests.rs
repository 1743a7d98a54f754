//! Volume topology from claims, volumes and classes in the state (upstream
//! `volumetopology_test.go` cases, the ones a zonal EBS cluster meets).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{schedulable_pod, validate_claims, volume_requirements};
use crate::scheduling::{Requirement, Requirements};
use crate::state::{Snapshot, key_of};

fn pod(claims: &[&str]) -> k8s_openapi::api::core::v1::Pod {
    let volumes: Vec<Value> =
        claims.iter().map(|c| json!({"name": format!("v-{c}"), "persistentVolumeClaim": {"claimName": c}})).collect();
    serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": "db-0", "uid": "u"},
        "spec": {"containers": [{"name": "c"}], "volumes": volumes}
    }))
    .unwrap()
}

fn claim(snapshot: &mut Snapshot, name: &str, volume: Option<&str>, class: &str) {
    let mut c = json!({"metadata": {"namespace": "default", "name": name}, "spec": {"storageClassName": class}});
    if let Some(v) = volume {
        c["spec"]["volumeName"] = json!(v);
        c["metadata"]["annotations"] = json!({super::BIND_COMPLETED: "yes"});
    }
    let c: k8s_openapi::api::core::v1::PersistentVolumeClaim = serde_json::from_value(c).unwrap();
    snapshot.persistent_volume_claims.insert(key_of(&c), Arc::new(c));
}

fn volume(snapshot: &mut Snapshot, name: &str, key: &str, zones: &[&str]) {
    let v: k8s_openapi::api::core::v1::PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": zones}]}]}}}
    }))
    .unwrap();
    snapshot.persistent_volumes.insert(key_of(&v), Arc::new(v));
}

fn class(snapshot: &mut Snapshot, name: &str, mode: &str, zones: Option<&[&str]>) {
    let mut c = json!({"metadata": {"name": name}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": mode});
    if let Some(zones) = zones {
        c["allowedTopologies"] =
            json!([{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": zones}]}]);
    }
    let c: k8s_openapi::api::storage::v1::StorageClass = serde_json::from_value(c).unwrap();
    snapshot.storage_classes.insert(key_of(&c), Arc::new(c));
}

fn zone(zones: &[&str]) -> Requirements {
    let mut r = Requirements::new();
    r.add("topology.kubernetes.io/zone", Requirement::in_values(zones.iter().map(|z| (*z).to_owned())));
    r
}

/// A bound claim pins the pod to its volume's zone; the EBS CSI key is normalized to the
/// well-known zone label (AWS provider `operator.go` l. 82).
#[test]
fn bound_claim_pins_the_volume_zone() {
    let mut s = Snapshot::default();
    class(&mut s, "gp3", "WaitForFirstConsumer", None);
    claim(&mut s, "data-db-0", Some("pv-1"), "gp3");
    volume(&mut s, "pv-1", "topology.ebs.csi.aws.com/zone", &["us-east-1b"]);
    assert_eq!(volume_requirements(&s, &pod(&["data-db-0"])).unwrap(), vec![zone(&["us-east-1b"])]);
    let p = schedulable_pod(&s, &pod(&["data-db-0"]), true).unwrap();
    assert_eq!(p.shape.volume_requirements, vec![zone(&["us-east-1b"])]);
    assert!(p.shape.requirements().is_empty(), "the pod's own requirements are left alone");
}

/// An unbound claim takes its class's allowedTopologies; a class without them adds nothing.
#[test]
fn unbound_claim_takes_allowed_topologies() {
    let mut s = Snapshot::default();
    class(&mut s, "zonal", "WaitForFirstConsumer", Some(&["us-east-1a", "us-east-1c"]));
    class(&mut s, "gp3", "WaitForFirstConsumer", None);
    claim(&mut s, "a", None, "zonal");
    claim(&mut s, "b", None, "gp3");
    assert_eq!(volume_requirements(&s, &pod(&["a"])).unwrap(), vec![zone(&["us-east-1a", "us-east-1c"])]);
    assert!(volume_requirements(&s, &pod(&["b"])).unwrap().is_empty());
}

/// Two volumes: the cross product keeps the compatible branch only (upstream
/// `mergeCompatibleVolumeRequirementAlternatives`).
#[test]
fn two_volumes_intersect() {
    let mut s = Snapshot::default();
    class(&mut s, "zonal", "WaitForFirstConsumer", Some(&["us-east-1a", "us-east-1b"]));
    claim(&mut s, "a", None, "zonal");
    claim(&mut s, "b", Some("pv-b"), "zonal");
    volume(&mut s, "pv-b", "topology.kubernetes.io/zone", &["us-east-1b"]);
    let got = volume_requirements(&s, &pod(&["a", "b"])).unwrap();
    assert_eq!(got.len(), 1);
    let mut want = zone(&["us-east-1a", "us-east-1b"]);
    want.add_all(&zone(&["us-east-1b"]));
    assert_eq!(got[0], want);
}

/// What upstream `ValidatePersistentVolumeClaims` rejects: a missing claim, an Immediate
/// claim not yet bound, a bound claim without the bind-completed mark.
#[test]
fn invalid_claims_leave_the_pod_out() {
    let mut s = Snapshot::default();
    assert!(validate_claims(&s, &pod(&["missing"])).unwrap_err().contains("not found"));
    class(&mut s, "now", "Immediate", None);
    claim(&mut s, "i", None, "now");
    assert!(validate_claims(&s, &pod(&["i"])).unwrap_err().contains("immediate"));
    class(&mut s, "gp3", "WaitForFirstConsumer", None);
    claim(&mut s, "w", None, "gp3");
    assert!(validate_claims(&s, &pod(&["w"])).is_ok());
    volume(&mut s, "pv-x", "topology.kubernetes.io/zone", &["us-east-1a"]);
    let c: k8s_openapi::api::core::v1::PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": "half"},
        "spec": {"storageClassName": "gp3", "volumeName": "pv-x"}
    }))
    .unwrap();
    s.persistent_volume_claims.insert(key_of(&c), Arc::new(c));
    assert!(validate_claims(&s, &pod(&["half"])).unwrap_err().contains("bind-completed"));
    // A reschedulable (bound) pod is not validated, only given its topology.
    assert_eq!(
        schedulable_pod(&s, &pod(&["half"]), false).unwrap().shape.volume_requirements,
        vec![zone(&["us-east-1a"])]
    );
}
