//! The `pods/binding` subresource: how a scheduler assigns a pod to a node.

use serde_json::{Value, json};

use super::error::{ApiError, ApiResult};
use super::store::{Part, Store, WriteOptions};

/// Binds `namespace/name` to `node`, as the pod registry's `assignPod` does: sets
/// `spec.nodeName` and the `PodScheduled=True` condition; refuses a pod that is already
/// bound or being deleted.
pub fn bind(store: &mut Store, namespace: &str, name: &str, node: &str) -> ApiResult<()> {
    if node.is_empty() {
        return Err(ApiError::invalid(
            "Binding",
            "",
            name,
            &[("FieldValueRequired".into(), "target.name".into(), "Required value".into())],
        ));
    }
    let rt = store.registry().get("", "pods").expect("pods is built in");
    let pod = store.get(&rt, namespace, name)?;
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(ApiError::conflict("pods", "", name, "pod is being deleted, cannot be assigned to a host"));
    }
    if let Some(cur) = pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        return Err(ApiError::conflict("pods", "", name, &format!("pod {name} is already assigned to node \"{cur}\"")));
    }
    let mut new = (*pod).clone();
    new["spec"]["nodeName"] = json!(node);
    let now = store.clock().now_rfc3339();
    let mut conditions: Vec<Value> =
        new.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    conditions.retain(|c| c["type"] != "PodScheduled");
    conditions
        .push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
    new["status"]["conditions"] = json!(conditions);
    let spec_written = store.update(&rt, namespace, name, new.clone(), Part::Main, WriteOptions::default())?;
    let mut with_status = (*spec_written).clone();
    with_status["status"] = new["status"].clone();
    store.update(&rt, namespace, name, with_status, Part::Status, WriteOptions::default())?;
    Ok(())
}
