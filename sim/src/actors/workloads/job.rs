//! The Job controller: run pods until `completions` succeed (`parallelism` at a time), or
//! give up after `backoffLimit` failures.
//!
//! How long a job pod runs is the workload's business: the simulated kubelet finishes a
//! pod annotated with [`RUN_DURATION`] after that long in Running.

use std::time::Duration;

use serde_json::{Value, json};

use super::pods::{create_from_template, is_active, owned_pods, phase, ty, write_status};
use crate::actors::runtime::Reconciler;
use crate::apiserver::store::Store;

/// Pod annotation: how long the pod runs before it succeeds (a Go duration, e.g. `12m`).
pub const RUN_DURATION: &str = "dovetail.dev/run-duration";

/// Reconciles every Job.
#[derive(Default)]
pub struct JobController;

impl Reconciler for JobController {
    fn name(&self) -> &'static str {
        "job-controller"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("batch", "jobs"), ("", "pods")]
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let jt = ty(store, "batch", "jobs");
        let all: Vec<Value> = store.iter(&jt.key(), None).map(|j| (**j).clone()).collect();
        for job in all {
            if job.pointer("/metadata/deletionTimestamp").is_none() {
                reconcile_one(store, &job);
            }
        }
        None
    }
}

fn reconcile_one(store: &mut Store, job: &Value) {
    let jt = ty(store, "batch", "jobs");
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    let name = job["metadata"]["name"].as_str().unwrap_or("").to_string();
    let uid = job["metadata"]["uid"].as_str().unwrap_or("");
    let finished = job
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"));
    let pods = owned_pods(store, &ns, uid);
    let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
    let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
    let active = pods.iter().filter(|p| is_active(p)).count() as i64;
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64).unwrap_or(1);
    let parallelism = job.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1);
    let backoff_limit = job.pointer("/spec/backoffLimit").and_then(Value::as_i64).unwrap_or(6);
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let now = store.clock().now_rfc3339();
    let mut status = json!({"active": active, "succeeded": succeeded, "failed": failed});
    status["startTime"] = job.pointer("/status/startTime").cloned().unwrap_or(json!(now));
    if let Some(c) = job.pointer("/status/conditions") {
        status["conditions"] = c.clone();
    }
    if let Some(c) = job.pointer("/status/completionTime") {
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
