//! The `Consolidatable` condition (karpenter-behaviour.md §5.3; core
//! nodeclaim/disruption/consolidation.go and nodeclaim/podevents): an initialized NodeClaim is
//! Consolidatable once `consolidateAfter` has passed since the last pod event on its node
//! (`status.lastPodEventTime`), or since it was initialized when no pod ever came or went.
//! `consolidateAfter: Never` clears the condition, so neither Emptiness nor consolidation
//! ever considers the node.
//!
//! This controller also keeps `lastPodEventTime` current: a pod binding to the node or leaving
//! it (finishing or starting to terminate counts as leaving) bumps it to now.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::apis::condition::{Condition, StatusConditions};
use crate::apis::nodeclaim::{CONDITION_CONSOLIDATABLE, CONDITION_INITIALIZED};
use crate::apis::{NodeClaim, NodePool};
use crate::provisioning::pending::{is_terminal, is_terminating};
use crate::runtime::clock::elapsed;
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::state::Snapshot;

/// How often the controller looks at least, and the floor between passes.
const MAX_WAIT: Duration = Duration::from_secs(10);
const MIN_WAIT: Duration = Duration::from_secs(1);

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

/// Active pods (`namespace/name/uid`) bound to each node.
pub fn pods_by_node(snapshot: &Snapshot) -> BTreeMap<String, BTreeSet<String>> {
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (key, pod) in &snapshot.pods {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty()) else {
            continue;
        };
        if is_terminal(pod) || is_terminating(pod) {
            continue;
        }
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        map.entry(node.to_owned()).or_default().insert(format!("{key}/{uid}"));
    }
    map
}

/// The controller: remembers which pods were on each node at its last look, to see pods come
/// and go.
#[derive(Debug, Default)]
pub struct ConsolidatableController {
    previous: Option<BTreeMap<String, BTreeSet<String>>>,
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
        let empty = BTreeSet::new();
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
                (Some(before), Some(node)) => before.get(node).unwrap_or(&empty) != current.get(node).unwrap_or(&empty),
                _ => false,
            };
            if pod_event {
                claim.status.get_or_insert_with(Default::default).last_pod_event_time = Some(Time(now));
            }
            let Some(pool) = claim.node_pool_name().and_then(|p| snapshot.node_pools.get(p)) else {
                if pod_event {
                    write(env, &claim, None).await;
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
            if pod_event || conditions.is_some() {
                write(env, &claim, conditions).await;
            }
        }
        self.previous = Some(current);
        wait.max(MIN_WAIT)
    }
}

/// Writes `lastPodEventTime` and, when given, the condition list (status merge patch). A
/// condition list replaces the stored one, so that write is guarded by resourceVersion; if
/// it loses a race the pod event time is still written on its own and the condition is
/// retried next pass.
async fn write(env: &Env, claim: &NodeClaim, conditions: Option<Vec<Condition>>) {
    let api: Api<NodeClaim> = Api::all(env.kube.clone());
    let name = claim.name_any();
    let pod_event = claim.status.as_ref().and_then(|s| s.last_pod_event_time.as_ref());
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
