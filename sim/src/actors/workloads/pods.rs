//! What workload controllers need to know about pods.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::apiserver::resources::{ResourceKey, ResourceType};
use crate::apiserver::store::{DeleteOptions, EventType, Store, WriteOptions};

/// The built-in type `group/plural`.
pub(crate) fn ty(store: &Store, group: &str, plural: &str) -> Arc<ResourceType> {
    store.registry().get(group, plural).expect("built-in types are always registered")
}

/// The value at `path` (object keys) under `obj`: what `obj.pointer("/a/b")` finds, without
/// parsing and unescaping a pointer string on every call (these lookups run for every pod
/// on every reconcile pass).
pub(crate) fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, k| v.get(*k))
}

/// Whether `obj` has an ownerReference with `controller: true` to `owner_uid`.
fn controlled_by(obj: &Value, owner_uid: &str) -> bool {
    at(obj, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["uid"].as_str() == Some(owner_uid) && r["controller"] == true))
}

/// A field (`uid`, `name`, `kind`) of `obj`'s controlling ownerReference.
fn controller_field<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    at(obj, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r[field].as_str())
}

/// The uid of `obj`'s controlling ownerReference.
pub(crate) fn controller_uid(obj: &Value) -> Option<&str> {
    controller_field(obj, "uid")
}

/// The name of `obj`'s controlling ownerReference.
pub(crate) fn controller_name(obj: &Value) -> Option<&str> {
    controller_field(obj, "name")
}

/// The kind of `obj`'s controlling ownerReference.
pub(crate) fn controller_kind(obj: &Value) -> Option<&str> {
    controller_field(obj, "kind")
}

/// Whether a pod change matters to its workload controller: a pod `kind` controls
/// appeared, went away, started terminating or finished. Condition-only writes (the
/// scheduler's `PodScheduled=False` on pending pods) do not change what it counts.
pub(crate) fn pod_change_matters(kind: &str, key: &ResourceKey, event: EventType, obj: &Value) -> bool {
    if !(key.group.is_empty() && key.plural == "pods") {
        return true;
    }
    controller_kind(obj) == Some(kind)
        && (event != EventType::Modified
            || at(obj, &["metadata", "deletionTimestamp"]).is_some()
            || matches!(phase(obj), "Succeeded" | "Failed" | "Running"))
}

/// Pods (in any namespace) whose controlling ownerReference is `owner_uid`, in the store's
/// order (namespace, then name), read from the store's ownerReference index: a controller
/// of many objects (thousands of Jobs) reconciles in linear rather than quadratic time.
pub(crate) fn pods_of_controller(store: &Store, pods: &ResourceKey, owner_uid: &str) -> Vec<Arc<Value>> {
    store.dependents_of(owner_uid, pods, None).filter(|p| controller_uid(p) == Some(owner_uid)).cloned().collect()
}

/// Objects of type `group/plural` in `namespace` controlled by `owner_uid`, in name order,
/// looked up in the store's ownerReference index rather than by scanning the type.
pub(crate) fn controlled<'a>(
    store: &'a Store,
    key: &'a ResourceKey,
    namespace: &'a str,
    owner_uid: &'a str,
) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
    store.dependents_of(owner_uid, key, Some(namespace)).filter(move |o| controlled_by(o, owner_uid))
}

/// Pods in `namespace` controlled by `owner_uid`, in name order.
pub(crate) fn owned_pods(store: &Store, namespace: &str, owner_uid: &str) -> Vec<Arc<Value>> {
    let pods = ty(store, "", "pods").key();
    controlled(store, &pods, namespace, owner_uid).cloned().collect()
}

/// How many pods a controller has: all it controls, the active ones, the active and ready ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PodCounts {
    pub(crate) all: i64,
    pub(crate) active: i64,
    pub(crate) ready: i64,
}

/// [`PodCounts`] of the pods in `namespace` controlled by `owner_uid`, counted in one walk of
/// the ownerReference index (no list of pods built).
pub(crate) fn pod_counts(store: &Store, namespace: &str, owner_uid: &str) -> PodCounts {
    let pods = ty(store, "", "pods").key();
    let mut c = PodCounts::default();
    for p in controlled(store, &pods, namespace, owner_uid) {
        c.all += 1;
        if is_active(p) {
            c.active += 1;
            c.ready += i64::from(is_ready(p));
        }
    }
    c
}

/// Not terminating and not finished: counts towards a controller's replicas.
pub(crate) fn is_active(pod: &Value) -> bool {
    at(pod, &["metadata", "deletionTimestamp"]).is_none()
        && !matches!(at(pod, &["status", "phase"]).and_then(Value::as_str), Some("Succeeded" | "Failed"))
}

/// The pod's Ready condition is True.
pub(crate) fn is_ready(pod: &Value) -> bool {
    at(pod, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Phase of a pod.
pub(crate) fn phase(pod: &Value) -> &str {
    at(pod, &["status", "phase"]).and_then(Value::as_str).unwrap_or("Pending")
}

/// An ownerReference to `owner` as its controller.
pub(crate) fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true,
    })
}

/// Creates a pod from `template` owned by `owner` (generateName `<owner>-`).
pub(crate) fn create_from_template(store: &mut Store, owner: &Value, template: &Value, extra_spec: Option<Value>) {
    let pods = ty(store, "", "pods");
    let ns = owner["metadata"]["namespace"].as_str().unwrap_or("default").to_string();
    let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
    meta.insert("generateName".into(), json!(format!("{}-", owner["metadata"]["name"].as_str().unwrap_or("pod"))));
    meta.insert("namespace".into(), json!(ns));
    meta.insert("ownerReferences".into(), json!([controller_ref(owner)]));
    meta.remove("name");
    let mut spec = template["spec"].clone();
    if let (Some(extra), Some(s)) = (extra_spec, spec.as_object_mut()) {
        for (k, v) in extra.as_object().into_iter().flatten() {
            s.insert(k.clone(), v.clone());
        }
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
    if let Err(e) = store.create(&pods, &ns, pod, WriteOptions::default()) {
        tracing::warn!(owner = %owner["metadata"]["name"], "creating a pod failed: {e}");
    }
}

/// Deletes a pod (gracefully, as a controller scaling down does).
pub(crate) fn delete_pod(store: &mut Store, pod: &Value) {
    let pods = ty(store, "", "pods");
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let _ = store.delete(&pods, ns, name, &DeleteOptions::default());
}

/// Writes `status` to `obj` through the status subresource if it changed.
pub(crate) fn write_status(store: &mut Store, rt: &ResourceType, obj: &Value, status: Value) {
    if obj.get("status") == Some(&status) {
        return;
    }
    let mut new = obj.clone();
    new["status"] = status;
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("");
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    let _ = store.update(rt, ns, name, new, crate::apiserver::store::Part::Status, WriteOptions::default());
}

/// Resolves an int-or-percent (`maxSurge: 25%`) against `total`, rounding up or down.
pub(crate) fn int_or_percent(v: &Value, total: i64, round_up: bool, default: &str) -> i64 {
    let v = if v.is_null() { json!(default) } else { v.clone() };
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) if round_up => (p * total + 99) / 100,
            Some(p) => p * total / 100,
            None => s.parse().unwrap_or(0),
        },
        _ => 0,
    }
}

/// Ranks pods for deletion when scaling down, as the ReplicaSet controller does:
/// unassigned before assigned, pending before running, not-ready before ready, newer
/// before older (then name for a stable order).
pub(crate) fn deletion_rank(pod: &Value) -> (u8, u8, u8, std::cmp::Reverse<String>, String) {
    let assigned = at(pod, &["spec", "nodeName"]).and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let phase_rank = match phase(pod) {
        "Pending" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    (
        u8::from(assigned),
        phase_rank,
        u8::from(is_ready(pod)),
        std::cmp::Reverse(pod["metadata"]["creationTimestamp"].as_str().unwrap_or("").to_string()),
        pod["metadata"]["name"].as_str().unwrap_or("").to_string(),
    )
}
