//! The `Consolidatable` condition (karpenter-behaviour.md §5.3; core
//! nodeclaim/disruption/consolidation.go and nodeclaim/podevents): an initialized NodeClaim is
//! Consolidatable once `consolidateAfter` has passed since the last pod event on its node
//! (`status.lastPodEventTime`), or since it was initialized when no pod ever came or went.
//! `consolidateAfter: Never` clears the condition, so neither Emptiness nor consolidation
//! ever considers the node.
//!
//! This controller also keeps `lastPodEventTime` current, as core's `nodeclaim/podevents`
//! controller does: a non-DaemonSet pod bound to the node (created bound or binding), going
//! terminal or starting to terminate bumps it to now (`podevents/controller.go` event filter
//! l. 113-126; DaemonSet pods skipped, l. 65). Each pass compares every node's pods with their
//! state at the last pass, terminating and terminal ones included, so a pod that binds and is
//! deleted between two passes is still seen (it shows up terminating). A stamp less than
//! [`DEDUPE`] old is not moved (`dedupeTimeout`, l. 42): fewer writes on a busy node.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::apis::condition::{Condition, StatusConditions};
use crate::apis::nodeclaim::{CONDITION_CONSOLIDATABLE, CONDITION_INITIALIZED};
use crate::apis::{NodeClaim, NodePool};
use crate::provisioning::pending::{is_daemon_set_pod, is_terminal, is_terminating};
use crate::runtime::clock::elapsed;
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::state::Snapshot;

/// How often the controller looks at least, and the floor between passes.
const MAX_WAIT: Duration = Duration::from_secs(10);
const MIN_WAIT: Duration = Duration::from_secs(1);

/// Pod events this soon after the last stamp do not move it (core `podevents/controller.go`
/// `dedupeTimeout`, shorter than the 15 s consolidation validation so a command decided
/// meanwhile is still invalidated).
pub const DEDUPE: Duration = Duration::from_secs(10);

/// What the Consolidatable condition of a claim should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consolidatable {
    /// Not initialized: remove the condition, which only an initialized claim carries (core
    /// `nodeclaim/disruption/consolidation.go` `Reconcile` l. 52-59).
    NotInitialized,
    /// Remove the condition (consolidateAfter `Never`).
    Never,
    /// Not yet; it will be after this long.
    NotYet(Duration),
    /// Set `Consolidatable=True`.
    Yes,
}

/// The time consolidateAfter counts from: the last pod event, else the Initialized transition.
pub fn consolidation_base(claim: &NodeClaim) -> Option<jiff::Timestamp> {
    let initialized = claim.condition(CONDITION_INITIALIZED).filter(|c| c.is_true())?.last_transition_time.0;
    Some(claim.status.as_ref().and_then(|s| s.last_pod_event_time.as_ref()).map_or(initialized, |t| t.0))
}

/// The pure rule, in core's order (`consolidation.go` l. 40-80): consolidation disabled, then
/// not initialized, then the consolidateAfter window.
pub fn consolidatable(claim: &NodeClaim, pool: &NodePool, now: jiff::Timestamp) -> Consolidatable {
    let Some(after) = pool.spec.consolidate_after().duration() else { return Consolidatable::Never };
    let Some(base) = consolidation_base(claim) else { return Consolidatable::NotInitialized };
    let since = elapsed(base, now);
    if since >= after { Consolidatable::Yes } else { Consolidatable::NotYet(after - since) }
}

/// Where a bound pod is in its life, as far as pod events go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// Running or waiting to run.
    Active,
    /// Has a deletion timestamp.
    Terminating,
    /// Succeeded or failed.
    Terminal,
}

/// Every non-DaemonSet pod (`namespace/name/uid`) bound to each node, with its state.
pub fn pods_by_node(snapshot: &Snapshot) -> BTreeMap<String, BTreeMap<String, PodState>> {
    let mut map: BTreeMap<String, BTreeMap<String, PodState>> = BTreeMap::new();
    for (key, pod) in &snapshot.pods {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty()) else {
            continue;
        };
        if is_daemon_set_pod(pod) {
            continue;
        }
        let state = if is_terminal(pod) {
            PodState::Terminal
        } else if is_terminating(pod) {
            PodState::Terminating
        } else {
            PodState::Active
        };
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        map.entry(node.to_owned()).or_default().insert(format!("{key}/{uid}"), state);
    }
    map
}

/// Whether a node's pods between two passes make a pod event: a pod newly bound (in any
/// state), or one that was active and is now terminating, terminal or gone. A terminating or
/// terminal pod disappearing is not an event (it already was one).
pub fn pod_event(before: &BTreeMap<String, PodState>, now: &BTreeMap<String, PodState>) -> bool {
    let arrived_or_changed = now.iter().any(|(pod, state)| match before.get(pod) {
        None => true,
        Some(PodState::Active) => *state != PodState::Active,
        Some(PodState::Terminating) => *state == PodState::Terminal,
        Some(PodState::Terminal) => false,
    });
    let active_gone = before.iter().any(|(pod, state)| *state == PodState::Active && !now.contains_key(pod));
    arrived_or_changed || active_gone
}

/// The controller: remembers which pods were on each node at its last look, to see pods come
/// and go.
#[derive(Debug, Default)]
pub struct ConsolidatableController {
    previous: Option<BTreeMap<String, BTreeMap<String, PodState>>>,
}

impl Reconciler for ConsolidatableController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "nodeclaim.consolidatable"
    }

    fn watches(&self) -> Kinds {
        // Pods coming and going; claims and their nodes; the pool's consolidateAfter.
        Kinds::of(&[Kind::Pod, Kind::Node, Kind::NodeClaim, Kind::NodePool])
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        let wait = if snapshot.is_synced() { self.pass(snapshot, env).await } else { MIN_WAIT };
        Ok(Action::requeue(wait).paced(MIN_WAIT))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

impl ConsolidatableController {
    /// A controller that has not looked yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One pass: bump lastPodEventTime where pods came or went, then reconcile the condition.
    /// Returns when to look again.
    async fn pass(&mut self, snapshot: &Snapshot, env: &Env) -> Duration {
        let now = env.clock.now();
        let current = pods_by_node(snapshot);
        let empty = BTreeMap::new();
        let mut wait = MAX_WAIT;
        for claim in snapshot.node_claims.values() {
            if claim.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let node_name = claim
                .status
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .or_else(|| snapshot.nodes_for_node_claim(claim).first().map(|n| n.name_any()));
            let mut claim = claim.as_ref().clone();
            let pod_event = match (self.previous.as_ref(), node_name.as_deref()) {
                (Some(before), Some(node)) => {
                    pod_event(before.get(node).unwrap_or(&empty), current.get(node).unwrap_or(&empty))
                        && !stamped_within(&claim, now, DEDUPE)
                }
                _ => false,
            };
            let stamp = pod_event.then_some(Time(now));
            if let Some(stamp) = &stamp {
                claim.status.get_or_insert_with(Default::default).last_pod_event_time = Some(stamp.clone());
            }
            let Some(pool) = claim.node_pool_name().and_then(|p| snapshot.node_pools.get(p)) else {
                if let Some(stamp) = &stamp {
                    write(env, &claim, Some(stamp), None).await;
                }
                continue;
            };
            let has = claim.condition(CONDITION_CONSOLIDATABLE).cloned();
            let conditions = match consolidatable(&claim, pool, now) {
                Consolidatable::Never | Consolidatable::NotInitialized | Consolidatable::NotYet(_) if has.is_some() => {
                    Some(claim.conditions().iter().filter(|c| c.type_ != CONDITION_CONSOLIDATABLE).cloned().collect())
                }
                Consolidatable::Yes if !has.as_ref().is_some_and(Condition::is_true) => {
                    let mut updated = claim.clone();
                    updated.set_true(CONDITION_CONSOLIDATABLE, &Time(now));
                    Some(updated.conditions().to_vec())
                }
                _ => None,
            };
            if let Consolidatable::NotYet(remaining) = consolidatable(&claim, pool, now) {
                wait = wait.min(remaining + Duration::from_millis(1));
            }
            if stamp.is_some() || conditions.is_some() {
                write(env, &claim, stamp.as_ref(), conditions).await;
            }
        }
        self.previous = Some(current);
        wait.max(MIN_WAIT)
    }
}

/// Whether the claim's `lastPodEventTime` is less than `window` before `now`.
fn stamped_within(claim: &NodeClaim, now: jiff::Timestamp, window: Duration) -> bool {
    claim.status.as_ref().and_then(|s| s.last_pod_event_time.as_ref()).is_some_and(|t| elapsed(t.0, now) < window)
}

/// Writes a new `lastPodEventTime` and, when given, the condition list (status merge patch).
/// A condition list replaces the stored one, so that write is guarded by resourceVersion; if
/// it loses a race a new pod event time is still written on its own (never the stored one
/// again: that write would change nothing) and the condition is retried next pass.
async fn write(env: &Env, claim: &NodeClaim, pod_event: Option<&Time>, conditions: Option<Vec<Condition>>) {
    let api: Api<NodeClaim> = Api::all(env.kube.clone());
    let name = claim.name_any();
    let mut status = json!({});
    if let Some(t) = pod_event {
        status["lastPodEventTime"] = json!(t);
    }
    let guarded = conditions.is_some();
    if let Some(conditions) = conditions {
        status["conditions"] = json!(conditions);
    }
    let mut patch = json!({"status": status});
    if guarded {
        patch["metadata"] = json!({"resourceVersion": claim.metadata.resource_version});
    }
    match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => {}
        Err(error) if guarded && pod_event.is_some() => {
            tracing::debug!(nodeclaim = %name, %error, "updating consolidatable condition (will retry)");
            let only_time = json!({"status": {"lastPodEventTime": pod_event}});
            if let Err(error) = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&only_time)).await {
                tracing::debug!(nodeclaim = %name, %error, "recording last pod event time");
            }
        }
        Err(error) => tracing::debug!(nodeclaim = %name, %error, "updating consolidatable status (will retry)"),
    }
}

#[cfg(test)]
mod pod_event_tests {
    use super::{PodState, pod_event};
    use std::collections::BTreeMap;

    fn pods(entries: &[(&str, PodState)]) -> BTreeMap<String, PodState> {
        entries.iter().map(|(k, s)| (k.to_string(), *s)).collect()
    }

    #[test]
    fn a_pod_that_binds_and_starts_terminating_between_passes_is_an_event() {
        let before = pods(&[("a", PodState::Active)]);
        let now = pods(&[("a", PodState::Active), ("b", PodState::Terminating)]);
        assert!(pod_event(&before, &now));
    }

    #[test]
    fn an_active_pod_terminating_finishing_or_vanishing_is_an_event() {
        let before = pods(&[("a", PodState::Active)]);
        assert!(pod_event(&before, &pods(&[("a", PodState::Terminating)])));
        assert!(pod_event(&before, &pods(&[("a", PodState::Terminal)])));
        assert!(pod_event(&before, &pods(&[])));
    }

    #[test]
    fn a_terminating_pod_going_away_or_no_change_is_not_an_event() {
        let before = pods(&[("a", PodState::Active), ("b", PodState::Terminating), ("c", PodState::Terminal)]);
        assert!(!pod_event(&before, &before));
        assert!(!pod_event(&before, &pods(&[("a", PodState::Active)])));
        assert!(pod_event(&before, &pods(&[("a", PodState::Active), ("b", PodState::Terminal)])));
    }
}
