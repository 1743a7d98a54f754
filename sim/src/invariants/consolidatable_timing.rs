//! `consolidatableTiming`: a NodeClaim becomes `Consolidatable=True` on time. Once a
//! NodeClaim of a pool with a `consolidateAfter` (not `Never`) is initialized and
//! `consolidateAfter` has passed since the later of its initialization and its last pod
//! event, it carries `Consolidatable=True` within [`SLACK`] (plus the API server's watch
//! delay in force).
//!
//! Upstream: core `pkg/controllers/nodeclaim/disruption/consolidation.go:63-80` counts from
//! `LastPodEventTime`, else the Initialized condition's transition, and while the window
//! has not elapsed requeues for exactly the remainder (`RequeueAfter:
//! consolidatableTime.Sub(c.clock.Now())`, l. 76-77), then sets the condition (l. 80).
//! Static pools (`spec.replicas`) are never consolidatable (`controller.go`
//! `runReconcilers`) and are not judged.
//!
//! "Last pod event" is modelled from the pods seen in the store, not from the controller:
//! core `pkg/controllers/nodeclaim/podevents/controller.go` stamps `LastPodEventTime` when a
//! non-DaemonSet pod bound to the claim's node is created bound, binds, goes terminal, goes
//! terminating or is deleted (its event filter, l. 113-126; DaemonSet pods are skipped,
//! l. 65), deduplicating events within 10 s of the last stamp (`dedupeTimeout`, l. 42): a
//! dropped event only makes the stamp earlier, so the oracle's time (the tick the set of
//! active non-DaemonSet pods on the node last changed) is never earlier than upstream's by
//! more than the controller's reaction time, which [`SLACK`] covers. Initialization is the
//! first tick the claim is seen `Initialized`.
//!
//! Not judged while faults are live, nor before [`SLACK`] after they heal or after a window
//! in which the controller was cut off: a controller that cannot write cannot set it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::over_provisioning::consolidate_after;
use super::{Ctx, Invariant, Violation, format_duration};
use crate::apiserver::ApiServer;
use crate::apiserver::store::{ObjRef, Store};
use crate::oracle::view::{PodView, condition_true, key};

/// How late after its due time a claim may still lack the condition: the oracle's 1 s
/// ticks (it sees initialization and pod events up to a tick late, which only moves its
/// due time later), the controller noticing a pod event on its next paced pass, and one
/// retried status write. Unmutated, the library's claims are found Consolidatable 1-2 s
/// after the unslacked due time (seed 1 of every story).
pub const SLACK: Duration = Duration::from_secs(5);

/// What the oracle knows of one claim's clock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimClock {
    /// First tick seen initialized.
    pub initialized: Option<Duration>,
    /// The due time already judged: found Consolidatable, or reported (once per due time).
    pub settled: Option<Duration>,
}

/// The pod-event clock: each node's active non-DaemonSet pods, and when they last changed.
#[derive(Default)]
pub struct PodEvents {
    pods: BTreeMap<String, BTreeSet<String>>,
    last: BTreeMap<String, Duration>,
}

impl PodEvents {
    /// Reads the pods at `now`: a node whose pod set changed since the last reading had a
    /// pod event now (a node first seen with pods had one now too).
    pub fn observe(&mut self, pods: &[PodView], now: Duration) {
        let mut on: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for p in pods.iter().filter(|p| p.active() && !p.daemonset) {
            if let Some(n) = p.node_name.as_deref() {
                on.entry(n.to_string()).or_default().insert(p.uid.clone());
            }
        }
        let empty = BTreeSet::new();
        let nodes: BTreeSet<&String> = on.keys().chain(self.pods.keys()).collect();
        for n in nodes {
            if on.get(n).unwrap_or(&empty) != self.pods.get(n).unwrap_or(&empty) {
                self.last.insert(n.clone(), now);
            }
        }
        self.pods = on;
    }

    /// The last pod event on `node`, if any was seen.
    pub fn last(&self, node: &str) -> Option<Duration> {
        self.last.get(node).copied()
    }
}

/// When the claim must be Consolidatable: `consolidateAfter` after the later of its
/// initialization and last pod event, not before `not_before` (the heal), plus slack.
pub fn due(initialized: Duration, last_pod_event: Option<Duration>, after: Duration, not_before: Duration) -> Duration {
    (initialized.max(last_pod_event.unwrap_or_default()) + after).max(not_before) + SLACK
}

/// The invariant.
pub struct ConsolidatableTiming {
    store: Arc<Mutex<Store>>,
    claims: BTreeMap<String, ClaimClock>,
    events: PodEvents,
}

impl ConsolidatableTiming {
    /// Reads NodeClaims' conditions from `server`'s store when a claim is due.
    pub fn new(server: &ApiServer) -> Self {
        Self { store: server.store.clone(), claims: BTreeMap::new(), events: PodEvents::default() }
    }
}

fn consolidatable(store: &Store, claim: &str) -> bool {
    let r = ObjRef { key: key("karpenter.sh", "nodeclaims"), namespace: String::new(), name: claim.to_string() };
    store.get_ref(&r).is_some_and(|c| condition_true(&c, "Consolidatable"))
}

impl Invariant for ConsolidatableTiming {
    fn name(&self) -> &'static str {
        "consolidatableTiming"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let (view, now) = (ctx.view, ctx.view.now);
        self.events.observe(ctx.pods, now);
        self.claims.retain(|name, _| view.claims.contains_key(name));
        let Some(healed) = ctx.healed_at else { return };
        let cut_heal = ctx.controller_cut_off.iter().filter(|(start, _)| *start <= now).map(|(_, h)| *h).max();
        let not_before = healed.max(cut_heal.unwrap_or_default());
        let mut pending = Vec::new();
        for c in view.claims.values() {
            let clock = self.claims.entry(c.name.clone()).or_default();
            if c.initialized && clock.initialized.is_none() {
                clock.initialized = Some(now);
            }
            let Some(initialized) = clock.initialized else { continue };
            let Some(pool) = view.pools.get(&c.nodepool) else { continue };
            if c.deleting_since.is_some() || pool.object.pointer("/spec/replicas").is_some_and(|r| !r.is_null()) {
                continue;
            }
            let Some(after) = consolidate_after(&pool.object) else { continue };
            let event = c.node_name.as_deref().and_then(|n| self.events.last(n));
            let due = due(initialized, event, after, not_before) + ctx.watch_delay;
            if now + SLACK > due && clock.settled != Some(due) {
                pending.push((c.name.clone(), c.node_name.clone(), due, after, event, initialized));
            }
        }
        if pending.is_empty() {
            return;
        }
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        for (name, node, due, after, event, initialized) in pending {
            let on_time = consolidatable(&store, &name);
            if on_time || now <= due {
                if on_time && let Some(clock) = self.claims.get_mut(&name) {
                    clock.settled = Some(due);
                }
                continue;
            }
            if let Some(clock) = self.claims.get_mut(&name) {
                clock.settled = Some(due);
            }
            let mut objects = vec![format!("NodeClaim {name}")];
            objects.extend(node.map(|n| format!("Node {n}")));
            out.push(Violation {
                invariant: self.name().into(),
                at: now,
                objects,
                message: format!(
                    "NodeClaim {name} is not Consolidatable=True at {}: initialized at {}, last pod event {}, consolidateAfter {}, due by {} (slack {})",
                    format_duration(now),
                    format_duration(initialized),
                    event.map_or_else(|| "none".into(), format_duration),
                    format_duration(after),
                    format_duration(due),
                    format_duration(SLACK)
                ),
                trace_position: view.trace_position,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn pod(uid: &str, node: &str, daemonset: bool) -> PodView {
        let mut p = crate::oracle::view::read_pod(&Arc::new(serde_json::json!({
            "metadata": {"name": uid, "namespace": "default", "uid": uid},
            "spec": {"nodeName": node, "containers": []},
            "status": {"phase": "Running"}
        })));
        p.daemonset = daemonset;
        p
    }

    #[test]
    fn the_due_time_counts_from_the_later_of_initialization_and_the_last_pod_event() {
        assert_eq!(due(secs(100), None, secs(30), secs(0)), secs(135));
        assert_eq!(due(secs(100), Some(secs(200)), secs(30), secs(0)), secs(235));
        assert_eq!(due(secs(100), Some(secs(50)), secs(30), secs(0)), secs(135));
        // A heal after the window: due at the heal plus slack.
        assert_eq!(due(secs(100), None, secs(30), secs(400)), secs(405));
    }

    #[test]
    fn pod_events_are_changes_of_the_nodes_active_non_daemonset_pods() {
        let mut e = PodEvents::default();
        e.observe(&[pod("a", "n1", false), pod("d", "n2", true)], secs(1));
        assert_eq!((e.last("n1"), e.last("n2")), (Some(secs(1)), None));
        e.observe(&[pod("a", "n1", false), pod("d", "n2", true)], secs(2));
        assert_eq!(e.last("n1"), Some(secs(1)));
        // A DaemonSet pod leaving is no event; the last pod leaving n1 is one.
        e.observe(&[], secs(3));
        assert_eq!((e.last("n1"), e.last("n2")), (Some(secs(3)), None));
        let mut terminating = pod("b", "n1", false);
        terminating.terminating = true;
        e.observe(&[terminating], secs(4));
        assert_eq!(e.last("n1"), Some(secs(3)));
    }
}
