//! The StatefulSet controller: a pod per ordinal with a stable name (`<set>-<i>`), and a
//! PersistentVolumeClaim per ordinal and `volumeClaimTemplates` entry
//! (`<template>-<set>-<i>`) that outlives the pod, so a pod evicted from one node comes
//! back under the same name with the same volume.
//!
//! kube-controller-manager `pkg/controller/statefulset/stateful_set_control.go`
//! (`updateStatefulSet`): claims are created before their pod (`stateful_pod_control.go`
//! `createPersistentVolumeClaims`); a failed pod is deleted and recreated; a terminating pod
//! is waited for before its ordinal is recreated; `OrderedReady` creates ordinal i only once
//! every lower ordinal is Running and Ready and removes one ordinal at a time from the top,
//! `Parallel` does both at once. Claims are kept when pods go (the default
//! `persistentVolumeClaimRetentionPolicy`: `Retain`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::pods::{at, controller_kind, controller_ref, delete_pod, is_ready, owned_pods, phase, ty, write_status};
use crate::actors::runtime::Reconciler;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{EventType, Store, WriteOptions};

/// The label naming a StatefulSet pod (`statefulset.kubernetes.io/pod-name`).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label carrying a StatefulSet pod's ordinal (`apps.kubernetes.io/pod-index`).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// Reconciles every StatefulSet.
#[derive(Default)]
pub struct StatefulSetController;

impl Reconciler for StatefulSetController {
    fn name(&self) -> &'static str {
        "statefulset-controller"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("apps", "statefulsets"), ("", "pods")]
    }

    /// Any change to a StatefulSet's pod matters: `OrderedReady` waits on readiness.
    fn wakes_on(&mut self, key: &ResourceKey, _event: EventType, obj: &Value) -> bool {
        !(key.group.is_empty() && key.plural == "pods") || controller_kind(obj) == Some("StatefulSet")
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let st = ty(store, "apps", "statefulsets");
        let all: Vec<Arc<Value>> = store.iter(&st.key(), None).cloned().collect();
        for set in all {
            if at(&set, &["metadata", "deletionTimestamp"]).is_some() {
                continue;
            }
            reconcile_one(store, &set);
        }
        None
    }
}

fn name_of(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

/// The ordinal of a pod named `<set>-<i>`.
fn ordinal(set: &str, pod: &Value) -> Option<u32> {
    name_of(pod).strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

fn reconcile_one(store: &mut Store, set: &Value) {
    let uid = set["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let ns = set["metadata"]["namespace"].as_str().unwrap_or("default").to_string();
    let set_name = name_of(set).to_string();
    let replicas = at(set, &["spec", "replicas"]).and_then(Value::as_u64).unwrap_or(1) as u32;
    let parallel = at(set, &["spec", "podManagementPolicy"]).and_then(Value::as_str) == Some("Parallel");
    let pods: BTreeMap<u32, Arc<Value>> =
        owned_pods(store, &ns, &uid).into_iter().filter_map(|p| Some((ordinal(&set_name, &p)?, p))).collect();
    // Failed pods are deleted to be recreated (`stateful_set_control.go` l. "isFailed").
    for pod in pods.values() {
        if phase(pod) == "Failed" && at(pod, &["metadata", "deletionTimestamp"]).is_none() {
            delete_pod(store, pod);
        }
    }
    let running_ready =
        |p: &Value| phase(p) == "Running" && is_ready(p) && at(p, &["metadata", "deletionTimestamp"]).is_none();
    // Create missing ordinals below `replicas`, in order.
    for i in 0..replicas {
        match pods.get(&i) {
            Some(pod) => {
                if !parallel && !running_ready(pod) {
                    break;
                }
            }
            None => {
                create_claims(store, set, &ns, &set_name, i);
                create_pod(store, set, &ns, &set_name, i);
                if !parallel {
                    break;
                }
            }
        }
    }
    // Remove ordinals at or above `replicas`, from the top.
    let mut excess: Vec<&Arc<Value>> = pods.range(replicas..).map(|(_, p)| p).collect();
    excess.reverse();
    for pod in excess {
        if at(pod, &["metadata", "deletionTimestamp"]).is_some() {
            if parallel {
                continue;
            }
            break;
        }
        delete_pod(store, pod);
        if !parallel {
            break;
        }
    }
    let current: Vec<&Arc<Value>> = pods.range(..replicas).map(|(_, p)| p).collect();
    let active = current.iter().filter(|p| at(p, &["metadata", "deletionTimestamp"]).is_none()).count();
    let ready = current.iter().filter(|p| running_ready(p)).count();
    let status = json!({
        "replicas": active, "readyReplicas": ready, "currentReplicas": active, "availableReplicas": ready,
        "observedGeneration": set["metadata"]["generation"],
    });
    let st = ty(store, "apps", "statefulsets");
    if let Ok(current) = store.get(&st, &ns, &set_name) {
        write_status(store, &st, &current, status);
    }
}

/// The claim `<template>-<set>-<i>` of each `volumeClaimTemplates` entry, created if absent.
fn create_claims(store: &mut Store, set: &Value, ns: &str, set_name: &str, i: u32) {
    let pvcs = ty(store, "", "persistentvolumeclaims");
    for template in at(set, &["spec", "volumeClaimTemplates"]).and_then(Value::as_array).into_iter().flatten() {
        let name = format!("{}-{set_name}-{i}", name_of(template));
        if store.get(&pvcs, ns, &name).is_ok() {
            continue;
        }
        let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
        meta.insert("name".into(), json!(name));
        meta.insert("namespace".into(), json!(ns));
        let mut labels = set["spec"]["selector"]["matchLabels"].as_object().cloned().unwrap_or_default();
        labels.extend(meta.get("labels").and_then(Value::as_object).cloned().unwrap_or_default());
        meta.insert("labels".into(), json!(labels));
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": template["spec"], "status": {"phase": "Pending"}});
        if let Err(e) = store.create(&pvcs, ns, claim, WriteOptions::default()) {
            tracing::warn!(claim = %name, "creating a claim failed: {e}");
        }
    }
}

/// The pod of ordinal `i`: the template with its stable name, identity labels and a
/// `persistentVolumeClaim` volume per claim template (`stateful_set_utils.go` `newStatefulSetPod`,
/// `updateStorage`).
fn create_pod(store: &mut Store, set: &Value, ns: &str, set_name: &str, i: u32) {
    let pods = ty(store, "", "pods");
    let template = &set["spec"]["template"];
    let name = format!("{set_name}-{i}");
    let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
    let mut labels = meta.get("labels").and_then(Value::as_object).cloned().unwrap_or_default();
    labels.insert(POD_NAME_LABEL.into(), json!(name));
    labels.insert(POD_INDEX_LABEL.into(), json!(i.to_string()));
    meta.insert("labels".into(), json!(labels));
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(ns));
    meta.insert("ownerReferences".into(), json!([controller_ref(set)]));
    meta.remove("generateName");
    let mut spec = template["spec"].clone();
    let mut volumes: Vec<Value> = spec["volumes"].as_array().cloned().unwrap_or_default();
    for claim in at(set, &["spec", "volumeClaimTemplates"]).and_then(Value::as_array).into_iter().flatten() {
        let volume = name_of(claim);
        volumes.retain(|v| v["name"].as_str() != Some(volume));
        volumes
            .push(json!({"name": volume, "persistentVolumeClaim": {"claimName": format!("{volume}-{set_name}-{i}")}}));
    }
    if !volumes.is_empty() {
        spec["volumes"] = json!(volumes);
    }
    spec["hostname"] = json!(name);
    if let Some(service) = at(set, &["spec", "serviceName"]).and_then(Value::as_str) {
        spec["subdomain"] = json!(service);
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
    if let Err(e) = store.create(&pods, ns, pod, WriteOptions::default()) {
        tracing::warn!(pod = %name, "creating a pod failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::ordinal;

    #[test]
    fn ordinals_come_from_stable_names() {
        assert_eq!(ordinal("db", &json!({"metadata": {"name": "db-2"}})), Some(2));
        assert_eq!(ordinal("db", &json!({"metadata": {"name": "db-x"}})), None);
        assert_eq!(ordinal("db", &json!({"metadata": {"name": "dbx-1"}})), None);
    }
}
