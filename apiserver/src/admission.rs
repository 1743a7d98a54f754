//! Admission: what the API server does to an object between decoding and storage.
//!
//! Built-in kinds are decoded into their k8s-openapi types (which drops unknown fields,
//! as a real server's Go structs do) and get the defaults the real admission chain adds
//! (pod phase, priority from a PriorityClass, the not-ready/unreachable tolerations).
//! CustomResourceDefinitions register their types; custom resources are validated
//! against their CRD's schema.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::{ApiError, ApiResult};
use super::resources::{Registry, ResourceType};
use super::store::{Part, Store};

/// Checks and completes an object about to be created.
pub(crate) fn admit_create(store: &mut Store, rt: &ResourceType, obj: &mut Value, strict: bool) -> ApiResult<()> {
    normalize_builtin(rt, obj)?;
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => default_pod(store, obj),
        ("", "namespaces") => {
            obj["status"] = json!({"phase": "Active"});
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let t = Registry::type_from_crd(obj).map_err(|m| invalid(rt, obj, &m))?;
            let expected = format!("{}.{}", t.plural, t.group);
            let name = obj["metadata"]["name"].as_str().unwrap_or("");
            if name != expected {
                return Err(invalid(
                    rt,
                    obj,
                    &format!("metadata.name: Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
                ));
            }
            if let Some(existing) = store.registry().get(&t.group, &t.plural)
                && !existing.custom
            {
                return Err(invalid(
                    rt,
                    obj,
                    &format!("spec.group: Invalid value: \"{}\": cannot redefine a built-in type", t.group),
                ));
            }
        }
        _ => {}
    }
    if rt.custom {
        validate_custom(rt, obj, None, strict)?;
    }
    Ok(())
}

/// Checks and completes an object about to be replaced.
pub(crate) fn admit_update(
    store: &mut Store,
    rt: &ResourceType,
    obj: &mut Value,
    old: &Value,
    part: Part,
    strict: bool,
) -> ApiResult<()> {
    let _ = store;
    normalize_builtin(rt, obj)?;
    if rt.group.is_empty() && rt.plural == "pods" && part == Part::Main {
        // Pod spec is mostly immutable; the fields Dovetail's actors change are not.
        let old_node = old.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        let new_node = obj.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        if !old_node.is_empty() && old_node != new_node {
            return Err(invalid(
                rt,
                obj,
                "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            ));
        }
    }
    if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" && part == Part::Main {
        Registry::type_from_crd(obj).map_err(|m| invalid(rt, obj, &m))?;
    }
    if rt.custom {
        validate_custom(rt, obj, Some(old), strict)?;
    }
    Ok(())
}

/// Side effects of a committed write (a CRD starts serving its type).
pub(crate) fn after_commit(store: &mut Store, rt: &ResourceType, obj: &Arc<Value>, _old: Option<&Arc<Value>>) {
    if rt.group == "apiextensions.k8s.io"
        && rt.plural == "customresourcedefinitions"
        && let Ok(t) = Registry::type_from_crd(obj)
    {
        store.registry_mut().insert(t);
    }
}

/// Side effects of a removal (a CRD's type and objects go away).
pub(crate) fn after_remove(store: &mut Store, rt: &ResourceType, obj: &Arc<Value>) {
    if rt.group == "apiextensions.k8s.io"
        && rt.plural == "customresourcedefinitions"
        && let Ok(t) = Registry::type_from_crd(obj)
    {
        let key = t.key();
        store.purge_type(&key);
        store.registry_mut().remove(&key);
    }
}

fn invalid(rt: &ResourceType, obj: &Value, message: &str) -> ApiError {
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    let (field, msg) = message.split_once(": ").unwrap_or(("", message));
    ApiError::invalid(&rt.kind, &rt.group, name, &[("FieldValueInvalid".into(), field.into(), msg.into())])
}

/// Custom resources: pruned, defaulted and validated against the CRD's structural
/// schema and CEL rules, as kube-apiserver does.
fn validate_custom(rt: &ResourceType, obj: &mut Value, old: Option<&Value>, strict: bool) -> ApiResult<()> {
    let Some(schema) = &rt.schema else { return Ok(()) };
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    match schema.admit(obj, old, strict) {
        Ok(_) => Ok(()),
        Err(rejection) => Err(ApiError::from_status(&rejection.status(&rt.group, &rt.kind, &name))),
    }
}

/// Decodes a built-in kind through its k8s-openapi type. A body that does not decode
/// is a 400, as on a real server; unknown fields are dropped.
fn normalize_builtin(rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    use k8s_openapi::api::{
        apps::v1 as apps, batch::v1 as batch, coordination::v1 as coord, core::v1 as core, policy::v1 as policy,
        scheduling::v1 as sched, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    let r = match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => roundtrip::<core::Pod>(obj),
        ("", "nodes") => roundtrip::<core::Node>(obj),
        ("", "namespaces") => roundtrip::<core::Namespace>(obj),
        ("", "events") => roundtrip::<core::Event>(obj),
        ("", "services") => roundtrip::<core::Service>(obj),
        ("", "configmaps") => roundtrip::<core::ConfigMap>(obj),
        ("", "secrets") => roundtrip::<core::Secret>(obj),
        ("", "serviceaccounts") => roundtrip::<core::ServiceAccount>(obj),
        ("apps", "deployments") => roundtrip::<apps::Deployment>(obj),
        ("apps", "replicasets") => roundtrip::<apps::ReplicaSet>(obj),
        ("apps", "daemonsets") => roundtrip::<apps::DaemonSet>(obj),
        ("apps", "statefulsets") => roundtrip::<apps::StatefulSet>(obj),
        ("batch", "jobs") => roundtrip::<batch::Job>(obj),
        ("", "persistentvolumeclaims") => roundtrip::<core::PersistentVolumeClaim>(obj),
        ("", "persistentvolumes") => roundtrip::<core::PersistentVolume>(obj),
        ("storage.k8s.io", "storageclasses") => roundtrip::<storage::StorageClass>(obj),
        ("storage.k8s.io", "volumeattachments") => roundtrip::<storage::VolumeAttachment>(obj),
        ("policy", "poddisruptionbudgets") => roundtrip::<policy::PodDisruptionBudget>(obj),
        ("coordination.k8s.io", "leases") => roundtrip::<coord::Lease>(obj),
        ("scheduling.k8s.io", "priorityclasses") => roundtrip::<sched::PriorityClass>(obj),
        ("apiextensions.k8s.io", "customresourcedefinitions") => roundtrip::<apiext::CustomResourceDefinition>(obj),
        _ => return Ok(()),
    };
    match r {
        Ok(v) => {
            *obj = v;
            Ok(())
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: {e}",
            kind = rt.kind,
            v = rt.version
        ))),
    }
}

fn roundtrip<T: DeserializeOwned + Serialize>(obj: &Value) -> Result<Value, String> {
    let t: T = serde_path_to_error::deserialize(obj).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) }
    })?;
    serde_json::to_value(t).map_err(|e| e.to_string())
}

/// The defaults the real admission chain gives a pod.
fn default_pod(store: &Store, pod: &mut Value) {
    if pod.pointer("/status/phase").is_none() {
        pod["status"] = json!({"phase": "Pending"});
    }
    let spec = &mut pod["spec"];
    if spec.get("terminationGracePeriodSeconds").is_none() {
        spec["terminationGracePeriodSeconds"] = json!(30);
    }
    if spec.get("schedulerName").is_none() {
        spec["schedulerName"] = json!("default-scheduler");
    }
    if spec.get("restartPolicy").is_none() {
        spec["restartPolicy"] = json!("Always");
    }
    if spec.get("priority").is_none() {
        let class = spec.get("priorityClassName").and_then(Value::as_str).map(String::from);
        let pcs = store.registry().get("scheduling.k8s.io", "priorityclasses");
        let priority = pcs
            .and_then(|t| {
                let mut all = store.iter(&t.key(), None);
                match &class {
                    Some(c) => all.find(|pc| pc["metadata"]["name"].as_str() == Some(c)).cloned(),
                    None => all.find(|pc| pc["globalDefault"].as_bool() == Some(true)).cloned(),
                }
            })
            .and_then(|pc| pc["value"].as_i64())
            .unwrap_or(0);
        spec["priority"] = json!(priority);
    }
    // DefaultTolerationSeconds admission: tolerate not-ready/unreachable for 300 s.
    let tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
    let mut added = tolerations.clone();
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let has = tolerations.iter().any(|t| {
            (t["key"].as_str() == Some(key) || (t["key"].is_null() && t["operator"].as_str() == Some("Exists")))
                && (t["effect"].is_null() || t["effect"].as_str() == Some("NoExecute"))
        });
        if !has {
            added.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    spec["tolerations"] = json!(added);
}
