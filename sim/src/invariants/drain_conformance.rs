//! `drainConformance`: each pod eviction or delete the controller sends while draining a node
//! follows Karpenter's drain rules, judged on the cluster as it was just before the request
//! (the API server's audit hook, as [`super::disruptions`] judges PDBs and do-not-disrupt):
//!
//! - **tolerating**: no pod that tolerates `karpenter.sh/disrupted:NoSchedule` is evicted or
//!   deleted. Drain waits only on `IsWaitingEviction` pods (core
//!   `pkg/controllers/node/termination/terminator/terminator.go:97`, `Drain`), the eviction
//!   queue evicts only `IsEvictable` ones (`terminator/eviction.go:214`), and both refuse a pod
//!   for which `ToleratesDisruptedNoScheduleTaint` holds (`pkg/utils/pod/scheduling.go:58-83`,
//!   `:255`): it would only be scheduled back onto the draining node.
//! - **taint first**: the pod's Node carries `karpenter.sh/disrupted:NoSchedule` (key and
//!   effect, as `Taint`'s `MatchTaint` compares them) before any of its pods is evicted or
//!   deleted: the termination controller taints (`pkg/controllers/node/termination/controller.go:134`,
//!   `terminator/terminator.go:53` `Taint`) and only then drains (`controller.go:207`).
//! - **group order**: a graceful eviction of a pod in drain group g happens only when no pod of
//!   an earlier group on that node still waits for eviction. The groups
//!   (`terminator.go:146-168`, `groupPodsByPriority`): non-critical non-DaemonSet,
//!   non-critical DaemonSet, critical non-DaemonSet, critical DaemonSet, where critical is
//!   `priorityClassName` `system-cluster-critical` or `system-node-critical` and DaemonSet is
//!   `IsOwnedByDaemonSet`. `Drain` enqueues a group only when every earlier group is empty
//!   of waiting pods (`terminator.go:128-134`); waiting is `IsWaitingEviction`: not
//!   Succeeded/Failed, not tolerating the disrupted taint, not stuck terminating (deleted
//!   more than a minute ago, `scheduling.go:154`), not a mirror pod. A terminating pod still
//!   waits. Pods past the terminationGracePeriod force-delete threshold (`needsForceDelete`)
//!   are outside the groups on both sides: their deletes are not judged and they block
//!   nothing (computed from the claim's deletionTimestamp and its pool, never from the
//!   controller's annotation).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::controller_writes::{ControllerWrites, WriteJudge};
use super::{Ctx, Invariant, Violation};
use crate::apiserver::audit::AuditRequest;
use crate::apiserver::store::{ObjRef, Store};
use crate::oracle::protection::{forced_off, owned_by_node, termination_deadline, tolerates_disrupted_taint};
use crate::oracle::view::{is_daemonset_pod, key, sim_time};
use crate::scenario::invariants::InvariantConfig;

/// The invariant's name in reports.
pub const NAME: &str = "drainConformance";

/// How long after its deletionTimestamp a terminating pod counts as stuck (core
/// `IsStuckTerminating`).
const STUCK_AFTER: Duration = Duration::from_secs(60);

/// The taint a draining node carries.
const DISRUPTED_KEY: &str = "karpenter.sh/disrupted";

/// A drain rule one request broke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Breach {
    /// When.
    pub at: Duration,
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Its node.
    pub node: Option<String>,
    /// Other objects involved (the earlier-group pod still waiting).
    pub others: Vec<String>,
    /// What rule, and how.
    pub message: String,
    /// Trace length after the request.
    pub trace_position: u64,
}

/// The drain group of a pod (core `groupPodsByPriority`): 0 non-critical non-DaemonSet,
/// 1 non-critical DaemonSet, 2 critical non-DaemonSet, 3 critical DaemonSet.
pub fn group(pod: &Value) -> u8 {
    let critical =
        matches!(pod["spec"]["priorityClassName"].as_str(), Some("system-cluster-critical" | "system-node-critical"));
    u8::from(critical) * 2 + u8::from(is_daemonset_pod(pod))
}

const GROUPS: [&str; 4] =
    ["non-critical non-DaemonSet", "non-critical DaemonSet", "critical non-DaemonSet", "critical DaemonSet"];

fn terminal(pod: &Value) -> bool {
    matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
}

fn deleted_at(pod: &Value) -> Option<Duration> {
    pod["metadata"].get("deletionTimestamp").filter(|v| !v.is_null()).map(|v| sim_time(v).unwrap_or_default())
}

/// Whether drain still waits on `pod` at `now` (core `IsWaitingEviction`).
pub fn waiting(pod: &Value, now: Duration) -> bool {
    let stuck = deleted_at(pod).is_some_and(|d| now > d + STUCK_AFTER);
    !terminal(pod) && !tolerates_disrupted_taint(pod) && !stuck && !owned_by_node(pod)
}

fn has_disrupted_taint(node: &Value) -> bool {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .is_some_and(|ts| ts.iter().any(|t| t["key"] == DISRUPTED_KEY && t["effect"] == "NoSchedule"))
}

fn name_of(pod: &Value) -> String {
    format!(
        "{}/{}",
        pod["metadata"]["namespace"].as_str().unwrap_or_default(),
        pod["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// The rules `verb` (`evict` or `delete`) of `pod` breaks, given its Node (`None` when gone),
/// the other pods bound to that node, the node's termination deadline and the time.
pub fn judge(
    verb: &str,
    pod: &Value,
    node: Option<&Value>,
    on_node: &[&Value],
    deadline: Option<Duration>,
    now: Duration,
) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    if terminal(pod) || deleted_at(pod).is_some() {
        return out;
    }
    let name = name_of(pod);
    if tolerates_disrupted_taint(pod) {
        out.push((
            format!(
                "{verb} of pod {name}, which tolerates karpenter.sh/disrupted:NoSchedule (Karpenter never drains it)"
            ),
            Vec::new(),
        ));
    }
    if let Some(node) = node.filter(|n| !has_disrupted_taint(n)) {
        out.push((
            format!(
                "{verb} of pod {name} while its Node {} was not yet tainted karpenter.sh/disrupted:NoSchedule",
                node["metadata"]["name"].as_str().unwrap_or_default()
            ),
            Vec::new(),
        ));
    }
    let g = group(pod);
    if verb != "evict" || g == 0 || forced_off(pod, deadline, now) {
        return out;
    }
    let blockers: Vec<&Value> = on_node
        .iter()
        .copied()
        .filter(|q| name_of(q) != name && group(q) < g && waiting(q, now) && !forced_off(q, deadline, now))
        .collect();
    if let Some(first) = blockers.first() {
        out.push((
            format!(
                "eviction of {} pod {name} while {} pod(s) of an earlier drain group still waited on the node, first {} ({})",
                GROUPS[usize::from(g)],
                blockers.len(),
                name_of(first),
                GROUPS[usize::from(group(first))]
            ),
            blockers.iter().map(|q| format!("Pod {}", name_of(q))).collect(),
        ));
    }
    out
}

/// The node's termination deadline: the deletionTimestamp of the NodeClaim whose Node it is,
/// plus its pool's terminationGracePeriod.
fn deadline(store: &Store, node: &str) -> Option<Duration> {
    store.iter(&key("karpenter.sh", "nodeclaims"), None).filter(|c| c["status"]["nodeName"] == node).find_map(|c| {
        let pool = c.pointer("/metadata/labels/karpenter.sh~1nodepool").and_then(Value::as_str).and_then(|p| {
            store.get_ref(&ObjRef { key: key("karpenter.sh", "nodepools"), namespace: String::new(), name: p.into() })
        });
        termination_deadline(sim_time(&c["metadata"]["deletionTimestamp"]), pool.as_deref())
    })
}

/// The judge: each controller pod eviction or delete, judged before it is applied on the
/// store it acts on; the breaches of the ones that succeed are kept.
pub struct DrainRules;

impl WriteJudge for DrainRules {
    /// The breaches, judged before the request.
    type Before = Vec<Breach>;
    type Finding = Breach;

    fn before(&self, store: &Store, r: &AuditRequest) -> Option<Vec<Breach>> {
        if r.resource != "pods" || !r.group.is_empty() || !matches!(r.verb, "evict" | "delete") {
            return None;
        }
        let pod =
            store.get_ref(&ObjRef { key: key("", "pods"), namespace: r.namespace.clone(), name: r.name.clone() })?;
        let node_name = pod["spec"]["nodeName"].as_str().filter(|s| !s.is_empty()).map(String::from);
        let node = node_name
            .as_ref()
            .and_then(|n| store.get_ref(&ObjRef { key: key("", "nodes"), namespace: String::new(), name: n.clone() }));
        let on_node: Vec<&Value> = match &node_name {
            Some(n) => store
                .iter(&key("", "pods"), None)
                .filter(|p| p["spec"]["nodeName"] == n.as_str())
                .map(|p| &**p)
                .collect(),
            None => Vec::new(),
        };
        let deadline = node_name.as_deref().and_then(|n| deadline(store, n));
        let breaches: Vec<Breach> = judge(r.verb, &pod, node.as_deref(), &on_node, deadline, r.at)
            .into_iter()
            .map(|(message, others)| Breach {
                at: r.at,
                pod: format!("{}/{}", r.namespace, r.name),
                node: node_name.clone(),
                others,
                message,
                trace_position: 0,
            })
            .collect();
        (!breaches.is_empty()).then_some(breaches)
    }

    fn after(&self, _store: &Mutex<Store>, _r: &AuditRequest, breaches: Vec<Breach>, at: u64) -> Vec<Breach> {
        breaches.into_iter().map(|b| Breach { trace_position: at, ..b }).collect()
    }
}

/// The recorder of drain breaches.
pub type Recorder = ControllerWrites<DrainRules>;

/// The invariant: reports what its recorder saw.
pub struct DrainConformance {
    recorder: Arc<Recorder>,
}

impl DrainConformance {
    /// The invariant, with its recorder installed on `server`'s audit.
    pub fn new(config: &InvariantConfig, server: &crate::apiserver::ApiServer) -> Self {
        Self { recorder: ControllerWrites::install(server, config, DrainRules) }
    }
}

impl Invariant for DrainConformance {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, _ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        for b in self.recorder.drain() {
            let mut objects = vec![format!("Pod {}", b.pod)];
            objects.extend(b.node.map(|n| format!("Node {n}")));
            objects.extend(b.others);
            out.push(Violation {
                invariant: NAME.into(),
                at: b.at,
                objects,
                message: b.message,
                trace_position: b.trace_position,
            });
        }
    }
}

#[cfg(test)]
#[path = "drain_conformance_tests.rs"]
mod tests;
