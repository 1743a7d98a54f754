//! The kubelets' pod lifecycle: pods bound to a Ready node start after a seeded delay
//! and report Ready; job pods finish after their run duration; terminating pods stop
//! within their grace period and are then removed (the kubelet's final delete with
//! grace 0). One actor plays every node's kubelet: nodes are state, not hosts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};

use super::runtime::Reconciler;
use super::workloads::{RUN_DURATION, at};
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{DeleteOptions, EventType, Part, Store, WriteOptions};
use crate::scenario::SimDuration;
use crate::world::SimRng;
use crate::world::clock::{parse_rfc3339, sim_epoch};

/// Seeded delays of the pod lifecycle.
#[derive(Clone, Debug)]
pub struct KubeletTiming {
    /// Image pull + container start, uniform in this range.
    pub start: (Duration, Duration),
    /// How long containers take to stop after SIGTERM (capped by the grace period).
    pub stop: (Duration, Duration),
}

impl Default for KubeletTiming {
    fn default() -> Self {
        Self {
            start: (Duration::from_secs(1), Duration::from_secs(5)),
            stop: (Duration::from_millis(500), Duration::from_secs(10)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Start,
    Complete,
    Stop,
}

/// Every node's kubelet (pod side).
pub struct Kubelets {
    timing: KubeletTiming,
    rng: SimRng,
    /// (namespace, name, uid) -> what happens next and when.
    timers: BTreeMap<(String, String, String), (Duration, Action)>,
}

impl Kubelets {
    /// Kubelets drawing delays from `rng`.
    pub fn new(timing: KubeletTiming, rng: SimRng) -> Self {
        Self { timing, rng, timers: BTreeMap::new() }
    }

    fn draw(&mut self, (lo, hi): (Duration, Duration)) -> Duration {
        if hi <= lo { lo } else { lo + (hi - lo).mul_f64(self.rng.random::<f64>()) }
    }
}

fn node_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

impl Reconciler for Kubelets {
    fn name(&self) -> &'static str {
        "kubelet"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("", "pods"), ("", "nodes")]
    }

    /// Only bound pods (and deletions) concern a kubelet; the scheduler's condition writes
    /// on pending pods do not.
    fn wakes_on(&mut self, key: &ResourceKey, event: EventType, obj: &Value) -> bool {
        key.plural != "pods"
            || event == EventType::Deleted
            || at(obj, &["spec", "nodeName"]).and_then(Value::as_str).is_some_and(|n| !n.is_empty())
    }

    fn reconcile(&mut self, store: &mut Store, now: Duration) -> Option<Duration> {
        let pods_t = store.registry().get("", "pods").expect("built in");
        let nodes_t = store.registry().get("", "nodes").expect("built in");
        let ready_nodes: BTreeMap<String, bool> = store
            .iter(&nodes_t.key(), None)
            .map(|n| (n["metadata"]["name"].as_str().unwrap_or("").to_string(), node_ready(n)))
            .collect();
        // Shared handles, not deep copies: this runs on every pod change.
        let pods: Vec<Arc<Value>> = store
            .iter(&pods_t.key(), None)
            .filter(|p| at(p, &["spec", "nodeName"]).and_then(Value::as_str).is_some_and(|n| !n.is_empty()))
            .cloned()
            .collect();
        let mut live = BTreeSet::new();
        for pod in pods {
            let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
            let Some(&ready) = ready_nodes.get(node) else { continue };
            let phase = at(&pod, &["status", "phase"]).and_then(Value::as_str).unwrap_or("Pending");
            let want = if at(&pod, &["metadata", "deletionTimestamp"]).is_some() {
                Some(Action::Stop)
            } else if phase == "Pending" && ready {
                Some(Action::Start)
            } else if phase == "Running" && at(&pod, &["metadata", "annotations", RUN_DURATION]).is_some() {
                Some(Action::Complete)
            } else {
                None
            };
            // Most bound pods are running with nothing to do: the key (three strings) is
            // built only for pods with a pending action.
            let Some(want) = want else { continue };
            let key = (
                pod["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
                pod["metadata"]["name"].as_str().unwrap_or("").to_string(),
                pod["metadata"]["uid"].as_str().unwrap_or("").to_string(),
            );
            let due = match self.timers.get(&key) {
                Some((due, action)) if *action == want => *due,
                _ => {
                    let due = match want {
                        Action::Start => now + self.draw(self.timing.start),
                        Action::Stop => {
                            let grace = pod
                                .pointer("/metadata/deletionGracePeriodSeconds")
                                .and_then(Value::as_u64)
                                .unwrap_or(0);
                            now + self.draw(self.timing.stop).min(Duration::from_secs(grace))
                        }
                        Action::Complete => completion_time(&pod).unwrap_or(now),
                    };
                    self.timers.insert(key.clone(), (due, want));
                    due
                }
            };
            if due <= now {
                self.timers.remove(&key);
                act(store, &pod, want);
            } else {
                live.insert(key);
            }
        }
        self.timers.retain(|k, _| live.contains(k));
        self.timers.values().map(|(d, _)| *d).min()
    }
}

/// When a job pod that started at `status.startTime` finishes.
fn completion_time(pod: &Value) -> Option<Duration> {
    let started = pod.pointer("/status/startTime").and_then(Value::as_str).and_then(parse_rfc3339)?;
    let run = at(pod, &["metadata", "annotations", RUN_DURATION])?.as_str()?;
    let run = SimDuration::parse(run).ok()?.0;
    Some(started.duration_since(sim_epoch()).unwrap_or_default() + run)
}

fn act(store: &mut Store, pod: &Value, action: Action) {
    let pods_t = store.registry().get("", "pods").expect("built in");
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let now = store.clock().now_rfc3339();
    let mut new = pod.clone();
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let statuses = |ready: bool, state: Value| -> Value {
        json!(
            containers
                .iter()
                .map(|c| json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": ready,
            "restartCount": 0, "started": ready, "state": state.clone()}))
                .collect::<Vec<_>>()
        )
    };
    let mut conditions: Vec<Value> =
        pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut set = |t: &str, s: &str| {
        conditions.retain(|c| c["type"] != t);
        conditions.push(json!({"type": t, "status": s, "lastProbeTime": null, "lastTransitionTime": now}));
    };
    match action {
        Action::Stop => {
            let opts = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
            let _ = store.delete(&pods_t, ns, name, &opts);
            return;
        }
        Action::Start => {
            for t in ["Initialized", "ContainersReady", "Ready"] {
                set(t, "True");
            }
            new["status"]["phase"] = json!("Running");
            new["status"]["startTime"] = json!(now);
            new["status"]["hostIP"] = json!("10.0.0.1");
            new["status"]["containerStatuses"] = statuses(true, json!({"running": {"startedAt": now}}));
        }
        Action::Complete => {
            for t in ["ContainersReady", "Ready"] {
                set(t, "False");
            }
            new["status"]["phase"] = json!("Succeeded");
            new["status"]["containerStatuses"] =
                statuses(false, json!({"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": now}}));
        }
    }
    new["status"]["conditions"] = json!(conditions);
    let _ = store.update(&pods_t, ns, name, new, Part::Status, WriteOptions::default());
}
