//! The Job controller: run pods until `completions` succeed (`parallelism` at a time), or
//! give up after `backoffLimit` failures.
//!
//! How long a job pod runs is the workload's business: the simulated kubelet finishes a
//! pod annotated with [`RUN_DURATION`] after that long in Running.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use std::sync::Arc;

use super::pods::{
    at, controller_name, create_from_template, is_active, phase, pod_change_matters, pods_of_controller, ty,
    write_status,
};
use crate::actors::runtime::Reconciler;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{EventType, Store};

/// Pod annotation: how long the pod runs before it succeeds (a Go duration, e.g. `12m`).
pub const RUN_DURATION: &str = "dovetail.dev/run-duration";

/// Reconciles Jobs, each when it or one of its pods changed (as the real controller's
/// workqueue does): a burst of thousands of Jobs costs a pass per change over the changed
/// Jobs, not over all of them.
#[derive(Default)]
pub struct JobController {
    /// Jobs (namespace, name) to reconcile at the next pass.
    dirty: BTreeSet<(String, String)>,
    /// Every Job is reconciled at the first pass (state that existed before the watch).
    synced: bool,
}

impl Reconciler for JobController {
    fn name(&self) -> &'static str {
        "job-controller"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("batch", "jobs"), ("", "pods")]
    }

    fn wakes_on(&mut self, key: &ResourceKey, event: EventType, obj: &Value) -> bool {
        if !pod_change_matters("Job", key, event, obj) {
            return false;
        }
        let namespace = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
        let name = if key.plural == "pods" { controller_name(obj) } else { obj["metadata"]["name"].as_str() };
        if let Some(name) = name {
            self.dirty.insert((namespace, name.to_string()));
        }
        true
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let jt = ty(store, "batch", "jobs");
        let keys: Vec<(String, String)> = if self.synced {
            std::mem::take(&mut self.dirty).into_iter().collect()
        } else {
            self.synced = true;
            self.dirty.clear();
            store
                .iter(&jt.key(), None)
                .map(|j| {
                    let m = &j["metadata"];
                    (m["namespace"].as_str().unwrap_or("").to_string(), m["name"].as_str().unwrap_or("").to_string())
                })
                .collect()
        };
        // Finished Jobs never change again; deleted ones are the garbage collector's.
        let jobs: Vec<Arc<Value>> = keys
            .iter()
            .filter_map(|(ns, name)| store.get(&jt, ns, name).ok())
            .filter(|j| !finished(j) && at(j, &["metadata", "deletionTimestamp"]).is_none())
            .collect();
        if jobs.is_empty() {
            return None;
        }
        // A Job's pass creates only its own pods, so reading each Job's pods just before
        // its pass sees them as they were when the whole pass began.
        let pods_key = ty(store, "", "pods").key();
        for job in jobs {
            let uid = job["metadata"]["uid"].as_str().unwrap_or("");
            let pods = pods_of_controller(store, &pods_key, uid);
            reconcile_one(store, &job, &pods);
        }
        None
    }
}

/// The Job has a Complete or Failed condition.
fn finished(job: &Value) -> bool {
    at(job, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"))
}

/// One Job, given the pods it controls (as they were when this reconcile pass began).
fn reconcile_one(store: &mut Store, job: &Value, pods: &[Arc<Value>]) {
    let jt = ty(store, "batch", "jobs");
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    let name = job["metadata"]["name"].as_str().unwrap_or("").to_string();
    let finished = finished(job);
    let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
    let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
    let active = pods.iter().filter(|p| is_active(p)).count() as i64;
    let completions = at(job, &["spec", "completions"]).and_then(Value::as_i64).unwrap_or(1);
    let parallelism = at(job, &["spec", "parallelism"]).and_then(Value::as_i64).unwrap_or(1);
    let backoff_limit = at(job, &["spec", "backoffLimit"]).and_then(Value::as_i64).unwrap_or(6);
    let suspended = at(job, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);
    let now = store.clock().now_rfc3339();
    let mut status = json!({"active": active, "succeeded": succeeded, "failed": failed});
    status["startTime"] = at(job, &["status", "startTime"]).cloned().unwrap_or(json!(now));
    if let Some(c) = at(job, &["status", "conditions"]) {
        status["conditions"] = c.clone();
    }
    if let Some(c) = at(job, &["status", "completionTime"]) {
        status["completionTime"] = c.clone();
    }
    if !finished && !suspended {
        if succeeded >= completions {
            status["conditions"] = json!([{"type": "Complete", "status": "True", "lastTransitionTime": now}]);
            status["completionTime"] = json!(now);
        } else if failed > backoff_limit {
            status["conditions"] = json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                           "lastTransitionTime": now}]);
        } else {
            let want = parallelism.min(completions - succeeded);
            for _ in active..want {
                create_from_template(store, job, &job["spec"]["template"], None);
            }
            status["active"] = json!(want.max(active));
        }
    }
    if let Ok(current) = store.get(&jt, &ns, &name) {
        write_status(store, &jt, &current, status);
    }
}
