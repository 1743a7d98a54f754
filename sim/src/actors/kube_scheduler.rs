//! The kube-scheduler actor: feeds the scheduler model from the store's watch, binds
//! what fits, and marks what does not `PodScheduled=False/Unschedulable` with
//! kube-scheduler's message, which is what Karpenter looks for.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::runtime::Reconciler;
use super::scheduler::{Cache, ClusterEvent, Outcome, PodFacts, PodKey, Scheduler, SchedulerConfig, SchedulingQueue};
use crate::apiserver::binding::bind;
use crate::apiserver::store::{EventType, Part, Store, WatchMsg, WatchStart, WriteOptions};
use crate::world::SimRng;

/// The scheduler name this actor serves.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// kube-scheduler, as an actor.
pub struct KubeScheduler {
    scheduler: Scheduler,
    queue: SchedulingQueue,
    rng: SimRng,
    watches: Option<(UnboundedReceiver<WatchMsg>, UnboundedReceiver<WatchMsg>)>,
    /// The queued pods as their last watch event delivered them, parsed once (issue 21: a
    /// `Pod` deserialised per attempt was a third of batch-burst's CPU). An attempt uses the
    /// entry only when the store's object has the same uid and resourceVersion (every write
    /// bumps it), so it sees what parsing the store's object would give.
    parsed: BTreeMap<PodKey, Parsed>,
    /// Pods bound so far (for reports).
    pub bound: u64,
}

impl KubeScheduler {
    /// A scheduler drawing tie-breaks from `rng`.
    pub fn new(config: SchedulerConfig, rng: SimRng) -> Self {
        Self {
            scheduler: Scheduler::new(config),
            queue: SchedulingQueue::new(Duration::ZERO),
            rng,
            watches: None,
            parsed: BTreeMap::new(),
            bound: 0,
        }
    }

    fn start(&mut self, store: &mut Store) {
        let nodes_t = store.registry().get("", "nodes").expect("built in");
        let pods_t = store.registry().get("", "pods").expect("built in");
        let all = Arc::new(|_: &Value| true);
        let nodes =
            store.watch(&nodes_t, None, all.clone(), WatchStart::Current).expect("watching from now never fails");
        let pods = store.watch(&pods_t, None, all, WatchStart::Current).expect("watching from now never fails");
        let now = store.elapsed();
        for m in nodes.initial {
            self.on_node(m, now);
        }
        for m in pods.initial {
            self.on_pod(m, now);
        }
        // The initial events were delivered inline; the channels carry what follows.
        self.watches = Some((nodes.rx, pods.rx));
    }

    fn on_node(&mut self, msg: WatchMsg, now: Duration) {
        let WatchMsg::Event(kind, obj, _) = msg else { return };
        let Ok(node) = Node::deserialize(&*obj) else { return };
        let name = node.metadata.name.clone().unwrap_or_default();
        let cache = self.scheduler.cache_mut();
        let event = match kind {
            EventType::Deleted => {
                cache.remove_node(&name);
                ClusterEvent::NodeDeleted
            }
            EventType::Added => {
                cache.upsert_node(&node);
                ClusterEvent::NodeAdded
            }
            EventType::Modified => {
                cache.upsert_node(&node);
                ClusterEvent::NodeUpdated
            }
        };
        self.queue.on_cluster_event(event, now);
    }

    fn on_pod(&mut self, msg: WatchMsg, now: Duration) {
        let WatchMsg::Event(kind, obj, _) = msg else { return };
        let Ok(pod) = Pod::deserialize(&*obj) else { return };
        let key = PodKey::of(&pod);
        let spec = pod.spec.as_ref();
        let bound = spec.and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
        let ours = spec.and_then(|s| s.scheduler_name.as_deref()).unwrap_or(DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER;
        let terminating = pod.metadata.deletion_timestamp.is_some();
        if kind == EventType::Deleted || bound || !ours || terminating {
            self.parsed.remove(&key);
        }
        match kind {
            EventType::Deleted => {
                self.queue.delete(&key);
                if bound {
                    self.scheduler.cache_mut().remove_pod(&key);
                    self.queue.on_cluster_event(ClusterEvent::AssignedPodDeleted, now);
                }
            }
            _ if bound => {
                self.queue.delete(&key);
                let finished =
                    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"));
                self.scheduler.cache_mut().upsert_pod(&pod);
                let event = if finished {
                    ClusterEvent::AssignedPodDeleted
                } else if kind == EventType::Added {
                    ClusterEvent::AssignedPodAdded
                } else {
                    ClusterEvent::AssignedPodUpdated
                };
                self.queue.on_cluster_event(event, now);
            }
            _ if ours && !terminating => {
                let priority = spec.and_then(|s| s.priority).unwrap_or(0);
                let gated = spec.and_then(|s| s.scheduling_gates.as_ref()).is_some_and(|g| !g.is_empty());
                self.parsed.insert(key.clone(), Parsed::new(pod));
                self.queue.update(key, priority, gated, now);
            }
            _ => self.queue.delete(&key),
        }
    }

    /// Takes in what the watches delivered (starting them on first use). When the server
    /// ended them with 410 Gone (the `watchExpiry` fault), relists as kube-scheduler's
    /// informers do: the cache is rebuilt from the current nodes and pods and every unbound
    /// pod is queued again, instead of going deaf to every later pod and node.
    fn drain(&mut self, store: &mut Store, now: Duration) {
        let Some((mut nodes, mut pods)) = self.watches.take() else { return self.start(store) };
        let mut expired = false;
        while let Ok(m) = nodes.try_recv() {
            expired |= matches!(m, WatchMsg::Expired(_));
            self.on_node(m, now);
        }
        while let Ok(m) = pods.try_recv() {
            expired |= matches!(m, WatchMsg::Expired(_));
            self.on_pod(m, now);
        }
        if expired {
            *self.scheduler.cache_mut() = Cache::new();
            self.parsed.clear();
            self.start(store);
        } else {
            self.watches = Some((nodes, pods));
        }
    }
}

impl Reconciler for KubeScheduler {
    fn name(&self) -> &'static str {
        "kube-scheduler"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("", "pods"), ("", "nodes")]
    }

    fn reconcile(&mut self, store: &mut Store, now: Duration) -> Option<Duration> {
        self.drain(store, now);
        let pods_t = store.registry().get("", "pods").expect("built in");
        while let Some(key) = self.queue.pop(now) {
            let Ok(obj) = store.get(&pods_t, &key.namespace, &key.name) else {
                self.queue.delete(&key);
                continue;
            };
            let Some(mut parsed) = self.parsed.remove(&key).filter(|p| p.is_of(&obj)).or_else(|| Parsed::read(&obj))
            else {
                self.queue.delete(&key);
                continue;
            };
            let mut facts = parsed.facts.take().unwrap_or_else(|| PodFacts::new(&parsed.pod));
            // Claims change without the pod changing: resolved at every attempt.
            facts.volumes = super::volume_claims::resolve(store, &parsed.pod);
            match self.scheduler.schedule_facts(&facts, &mut self.rng) {
                Ok(result) => {
                    if let Some(volumes) = &facts.volumes {
                        super::volume_claims::select_node(store, volumes, &result.node);
                    }
                    self.scheduler.assume_facts(facts, &result.node);
                    match bind(store, &key.namespace, &key.name, &result.node) {
                        Ok(()) => {
                            self.bound += 1;
                            self.queue.done(&key, Outcome::Scheduled, now);
                        }
                        Err(_) => {
                            self.scheduler.cache_mut().forget_assumed(&key);
                            self.queue.done(&key, Outcome::Error, now);
                        }
                    }
                }
                Err(failure) => {
                    parsed.facts = Some(facts);
                    self.parsed.insert(key.clone(), parsed);
                    let time = Time(crate::world::clock::timestamp(store.clock().now()));
                    let condition = serde_json::to_value(failure.condition(time)).unwrap_or(Value::Null);
                    mark_unschedulable(store, &obj, condition);
                    self.queue.done(&key, Outcome::Unschedulable(failure.rejectors()), now);
                }
            }
            // Our own writes come back as watch events: account them before the next pod.
            self.drain(store, now);
        }
        self.queue.next_deadline()
    }
}

/// A queued pod parsed from one version of its object, and its scheduling facts once an
/// attempt compiled them (both pure functions of the object).
struct Parsed {
    uid: Option<String>,
    resource_version: Option<String>,
    pod: Pod,
    facts: Option<PodFacts>,
}

impl Parsed {
    fn new(pod: Pod) -> Self {
        Self {
            uid: pod.metadata.uid.clone(),
            resource_version: pod.metadata.resource_version.clone(),
            pod,
            facts: None,
        }
    }

    /// Parses a store object (`None` if it is not a Pod).
    fn read(obj: &Value) -> Option<Self> {
        Pod::deserialize(obj).ok().map(Self::new)
    }

    /// Whether this was parsed from the version of the pod `obj` is.
    fn is_of(&self, obj: &Value) -> bool {
        let meta = &obj["metadata"];
        self.resource_version.is_some()
            && meta["resourceVersion"].as_str() == self.resource_version.as_deref()
            && meta["uid"].as_str() == self.uid.as_deref()
    }
}

/// Writes the PodScheduled=False condition unless the same message is already there
/// (kube-scheduler does not rewrite an identical condition).
fn mark_unschedulable(store: &mut Store, pod: &Value, condition: Value) {
    let mut conditions: Vec<Value> =
        pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(existing) = conditions.iter().find(|c| c["type"] == "PodScheduled")
        && existing["status"] == condition["status"]
        && existing["reason"] == condition["reason"]
        && existing["message"] == condition["message"]
    {
        return;
    }
    conditions.retain(|c| c["type"] != "PodScheduled");
    conditions.push(condition);
    let mut new = pod.clone();
    new["status"]["conditions"] = json!(conditions);
    let pods_t = store.registry().get("", "pods").expect("built in");
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let _ = store.update(&pods_t, ns, name, new, Part::Status, WriteOptions::default());
}
