//! The `pods/eviction` subresource: a delete that PodDisruptionBudgets may refuse.
//!
//! Mirrors kube-apiserver's eviction REST handler: pods that are pending, finished or
//! already terminating are evicted without consulting budgets; a pod covered by more than
//! one PDB is a 500; a budget with no disruptions allowed (or whose status the disruption
//! controller has not yet observed) answers 429 TooManyRequests; otherwise the budget's
//! `disruptionsAllowed` is decremented and the pod recorded in `disruptedPods` before the
//! pod is deleted.

use serde_json::{Value, json};

use super::error::{ApiError, ApiResult};
use super::labels_of;
use super::selector::LabelSelector;
use super::store::{DeleteOptions, Part, Propagation, Store, WriteOptions};

/// Evicts `namespace/name` according to the Eviction body `eviction`.
pub(crate) fn evict(store: &mut Store, namespace: &str, name: &str, eviction: &Value) -> ApiResult<()> {
    let pods = store.registry().get("", "pods").expect("pods is built in");
    let pdbs = store.registry().get("policy", "poddisruptionbudgets").expect("pdbs are built in");
    let pod = store.get(&pods, namespace, name)?;
    let opts = delete_options(eviction);
    if pod.pointer("/metadata/deletionTimestamp").is_some() || can_ignore_pdb(&pod) {
        store.delete(&pods, namespace, name, &opts)?;
        return Ok(());
    }
    let labels = labels_of(&pod);
    let matching: Vec<Value> = store
        .iter(&pdbs.key(), Some(namespace))
        .filter(|pdb| {
            pdb.pointer("/spec/selector")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .and_then(|s| LabelSelector::from_api(&s).ok())
                // A PDB with an empty selector matches every pod in its namespace (policy/v1).
                .is_some_and(|s| s.matches(&labels))
        })
        .map(|p| (**p).clone())
        .collect();
    match matching.as_slice() {
        [] => {
            store.delete(&pods, namespace, name, &opts)?;
            Ok(())
        }
        [pdb] => {
            let pdb_name = pdb["metadata"]["name"].as_str().unwrap_or("").to_string();
            let status = &pdb["status"];
            let observed = status["observedGeneration"].as_i64().unwrap_or(0);
            let generation = pdb["metadata"]["generation"].as_i64().unwrap_or(0);
            if observed < generation {
                return Err(refuse(&format!(
                    "The disruption budget {pdb_name} is still being processed by the server."
                )));
            }
            let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
            if allowed < 0 {
                return Err(ApiError::forbidden("pdb disruptions allowed is negative"));
            }
            let ready = pod_ready(&pod);
            let healthy = status["currentHealthy"].as_i64().unwrap_or(0);
            let desired = status["desiredHealthy"].as_i64().unwrap_or(0);
            let policy =
                pdb.pointer("/spec/unhealthyPodEvictionPolicy").and_then(Value::as_str).unwrap_or("IfHealthyBudget");
            if !ready && (policy == "AlwaysAllow" || healthy >= desired) {
                // An unready pod can go without spending the budget.
                store.delete(&pods, namespace, name, &opts)?;
                return Ok(());
            }
            if allowed == 0 {
                return Err(refuse(&format!(
                    "The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently"
                )));
            }
            let mut new = pdb.clone();
            new["status"]["disruptionsAllowed"] = json!(allowed - 1);
            let now = store.clock().now_rfc3339();
            if !new["status"]["disruptedPods"].is_object() {
                new["status"]["disruptedPods"] = json!({});
            }
            new["status"]["disruptedPods"][name] = json!(now);
            store.update(&pdbs, namespace, &pdb_name, new, Part::Status, WriteOptions::default())?;
            store.delete(&pods, namespace, name, &opts)?;
            Ok(())
        }
        _ => Err(ApiError::internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        )),
    }
}

fn refuse(cause: &str) -> ApiError {
    ApiError::too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.",
        json!([{"reason": "DisruptionBudget", "message": cause}]),
    )
}

/// Pods whose eviction never counts against a budget (kube-apiserver's canIgnorePDB).
fn can_ignore_pdb(pod: &Value) -> bool {
    matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed" | "Pending") | None)
}

fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn delete_options(eviction: &Value) -> DeleteOptions {
    let d = &eviction["deleteOptions"];
    DeleteOptions {
        grace_period_seconds: d["gracePeriodSeconds"].as_i64(),
        propagation: Propagation::Background,
        precondition_uid: d.pointer("/preconditions/uid").and_then(Value::as_str).map(String::from),
        precondition_rv: d.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(String::from),
        dry_run: d["dryRun"].as_array().is_some_and(|a| a.iter().any(|x| x == "All")),
    }
}
