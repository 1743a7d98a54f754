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
use crate::apiserver::resources::{ResourceKey, ResourceType};
use crate::apiserver::store::{DeleteOptions, EventType, Part, Store, WatchMsg, WatchStart, WatchStream, WriteOptions};
use crate::scenario::SimDuration;
use crate::world::SimRng;
use crate::world::clock::{parse_rfc3339, sim_epoch};
use tokio::sync::mpsc::error::TryRecvError;

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
    /// Timers taken out for the pods a pass reads again (empty between passes).
    stale: BTreeMap<(String, String, String), (Duration, Action)>,
    /// Pods acted on in the last pass, read again in the next whether or not the write
    /// changed them (a no-op or refused write leaves no watch event).
    acted: BTreeSet<(String, String)>,
    /// Each Node's readiness at the last pass: a change makes the next pass a full one.
    ready_nodes: BTreeMap<String, bool>,
    /// The pods written since the last pass.
    pod_changes: PodChanges,
}

impl Kubelets {
    /// Kubelets drawing delays from `rng`.
    pub fn new(timing: KubeletTiming, rng: SimRng) -> Self {
        Self {
            timing,
            rng,
            timers: BTreeMap::new(),
            stale: BTreeMap::new(),
            acted: BTreeSet::new(),
            ready_nodes: BTreeMap::new(),
            pod_changes: PodChanges::default(),
        }
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
        let changed = self.pod_changes.drain();
        let node_change = ready_nodes != self.ready_nodes;
        self.ready_nodes = ready_nodes;
        self.pod_changes.open(store, &pods_t);
        // Shared handles, not deep copies. A full pass reads every bound pod; otherwise only
        // the pods that changed, were acted on last time or have a timer due: every other
        // bound pod would find its timer as it left it (nothing it reads moved), so the
        // draws and writes, made in the same (namespace, name) order, are the same.
        let pods: Vec<Arc<Value>> = match (changed, node_change) {
            (Some(mut names), false) => {
                names.append(&mut self.acted);
                names.extend(
                    self.timers
                        .iter()
                        .filter(|(_, (due, _))| *due <= now)
                        .map(|((ns, n, _), _)| (ns.clone(), n.clone())),
                );
                for (ns, name) in &names {
                    self.forget(ns, name);
                }
                names
                    .iter()
                    .filter_map(|(ns, name)| store.get(&pods_t, ns, name).ok())
                    .filter(|p| is_bound(p))
                    .collect()
            }
            _ => {
                self.acted.clear();
                self.stale = std::mem::take(&mut self.timers);
                store.iter(&pods_t.key(), None).filter(|p| is_bound(p)).cloned().collect()
            }
        };
        for pod in pods {
            let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
            let Some(&ready) = self.ready_nodes.get(node) else { continue };
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
            let due = match self.stale.remove(&key) {
                Some((due, action)) if action == want => due,
                _ => match want {
                    Action::Start => now + self.draw(self.timing.start),
                    Action::Stop => {
                        let grace =
                            pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_u64).unwrap_or(0);
                        now + self.draw(self.timing.stop).min(Duration::from_secs(grace))
                    }
                    Action::Complete => completion_time(&pod).unwrap_or(now),
                },
            };
            if due <= now {
                self.acted.insert((key.0, key.1));
                act(store, &pod, want);
            } else {
                self.timers.insert(key, (due, want));
            }
        }
        // Timers of pods not read again (a full pass: gone, unbound or on an unknown node)
        // end here.
        self.stale.clear();
        self.timers.values().map(|(d, _)| *d).min()
    }
}

impl Kubelets {
    /// Moves the timers of `namespace/name` (any uid) to `stale`, for the pass to take back.
    fn forget(&mut self, namespace: &str, name: &str) {
        let from = (namespace.to_string(), name.to_string(), String::new());
        let keys: Vec<_> = self
            .timers
            .range(from..)
            .take_while(|((ns, n, _), _)| ns == namespace && n == name)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            if let Some(t) = self.timers.remove(&k) {
                self.stale.insert(k, t);
            }
        }
    }
}

/// The pods written since the last pass, from a watch the kubelets keep on the store (its
/// events are published as each write commits, so a pass sees every write before it, as a
/// read of the store would).
#[derive(Default)]
struct PodChanges(Option<WatchStream>);

impl PodChanges {
    /// The `(namespace, name)` of every pod written since the watch opened; `None` when
    /// there is no watch to read (the first pass, or the server expired it).
    fn drain(&mut self) -> Option<BTreeSet<(String, String)>> {
        let watch = self.0.as_mut()?;
        let mut names = BTreeSet::new();
        loop {
            match watch.rx.try_recv() {
                Ok(WatchMsg::Event(_, pod, _)) => {
                    let meta = &pod["metadata"];
                    let name = |k: &str| meta[k].as_str().unwrap_or("").to_string();
                    names.insert((name("namespace"), name("name")));
                }
                Ok(WatchMsg::Expired(_)) | Err(TryRecvError::Disconnected) => {
                    self.0 = None;
                    return None;
                }
                Err(TryRecvError::Empty) => return Some(names),
            }
        }
    }

    /// Opens the watch from the store's current version, unless one is open.
    fn open(&mut self, store: &mut Store, pods: &ResourceType) {
        if self.0.is_none() {
            let since = store.resource_version();
            self.0 = store.watch(pods, None, Arc::new(|_| true), WatchStart::After(since)).ok();
        }
    }
}

/// Whether a pod is bound to a node.
fn is_bound(pod: &Value) -> bool {
    at(pod, &["spec", "nodeName"]).and_then(Value::as_str).is_some_and(|n| !n.is_empty())
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
