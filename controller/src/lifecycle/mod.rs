//! The NodeClaim lifecycle (karpenter-behaviour.md §3.3–3.6): [`launch`] → [`registration`] →
//! [`initialization`], with [`liveness`] deleting claims that stall. One loop walks every claim
//! in name order whenever a claim, node, pool or class changes or a deadline passes; launches run as their own
//! tasks so a slow CreateFleet never holds up registration of other nodes.

pub mod conditions;
pub mod initialization;
pub mod launch;
pub mod liveness;
pub mod registration;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;
use tokio::time::Instant;

use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::labels;
use crate::apis::{NodeClaim, NodePool};
use crate::cloudprovider::CloudProvider;
use crate::nodepool::registration_health::{RegistrationHealth, condition_for_outcome};
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler, Trigger};
use crate::runtime::{Event, EventRecorder, EventType, SharedClock};
use crate::state::Snapshot;
use conditions::{INITIALIZED, LAUNCHED, REGISTERED, set_condition};
use launch::{LAUNCH_BACKOFF, LaunchCache, LaunchOutcome, Launcher};

/// Without a deadline, claims are walked again after this long.
const IDLE_REQUEUE: Duration = Duration::from_secs(60);

/// Per-claim launch bookkeeping.
#[derive(Debug, Default)]
struct LaunchState {
    in_flight: BTreeSet<String>,
    /// uid → (next attempt, current backoff).
    backoff: BTreeMap<String, (Instant, Duration)>,
    /// uid → when its launch was recorded: until the watch shows `Launched=True` the claim in
    /// the snapshot is older than our own write, and launching it again would only re-send
    /// what the server has (core's cache has the same gap; its optimistic lock turns the
    /// second write into a conflict).
    recorded: BTreeMap<String, Instant>,
}

/// How long a recorded launch waits for the watch before the claim is looked at again.
const RECORD_SETTLE: Duration = Duration::from_secs(10);

/// The lifecycle controller.
#[derive(Clone)]
pub struct Lifecycle {
    client: Client,
    clock: SharedClock,
    events: EventRecorder,
    launcher: Launcher,
    state: Arc<Mutex<LaunchState>>,
    /// Fired when a launch task ends, so its outcome (or its backoff) is looked at.
    trigger: Trigger,
    /// Each NodePool's recent launch/registration outcomes (`NodeRegistrationHealthy`).
    health: RegistrationHealth,
}

impl Reconciler for Lifecycle {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "nodeclaim.lifecycle"
    }

    fn watches(&self) -> Kinds {
        // Claims and their nodes; a launch reads the claim's NodePool and EC2NodeClass.
        Kinds::of(&[Kind::NodeClaim, Kind::Node, Kind::NodePool, Kind::NodeClass])
    }

    fn trigger(&self) -> Option<Trigger> {
        Some(self.trigger.clone())
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, _env: &Env) -> Result<Action, Self::Error> {
        let wake = self.pass(snapshot).await.unwrap_or_else(|| Instant::now() + IDLE_REQUEUE);
        Ok(Action::requeue(wake.saturating_duration_since(Instant::now())))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

impl Lifecycle {
    /// A lifecycle controller recording each claim's registration or timeout in `health`.
    pub fn new(
        client: Client,
        cloud: Arc<dyn CloudProvider>,
        clock: SharedClock,
        events: EventRecorder,
        health: RegistrationHealth,
    ) -> Self {
        let launcher = Launcher {
            client: client.clone(),
            cloud,
            clock: clock.clone(),
            events: events.clone(),
            cache: Arc::new(LaunchCache::default()),
        };
        Self { client, clock, events, launcher, state: Arc::default(), trigger: Trigger::new(), health }
    }

    /// One walk over every claim; returns the earliest deadline to wake for.
    pub async fn pass(&self, snapshot: &Snapshot) -> Option<Instant> {
        if !snapshot.is_synced() {
            return Some(Instant::now() + Duration::from_secs(1));
        }
        let now = self.clock.now();
        let mut wake: Option<Instant> = None;
        let mut wake_at = |at: Instant| wake = Some(wake.map_or(at, |w: Instant| w.min(at)));
        for claim in snapshot.node_claims.values() {
            if claim.metadata.deletion_timestamp.is_some() {
                continue;
            }
            match liveness::check(claim, now) {
                liveness::Liveness::Expired(reason) => {
                    // Upstream records the failure on the NodePool before deleting, and retries
                    // the whole step when that write conflicts (liveness.go l. 85-93, 103-111).
                    if self.record_outcome(snapshot, claim, false).await {
                        self.delete_claim(claim, reason).await;
                    } else {
                        wake_at(Instant::now() + Duration::from_secs(1));
                    }
                    continue;
                }
                liveness::Liveness::Alive(Some(after)) => wake_at(Instant::now() + after),
                liveness::Liveness::Alive(None) => {}
            }
            if !claim.is_condition_true(LAUNCHED) {
                if let Some(at) = self.start_launch(snapshot, claim) {
                    wake_at(at);
                }
                continue;
            }
            if !claim.is_condition_true(REGISTERED) {
                self.register(snapshot, claim).await;
                continue;
            }
            if !claim.is_condition_true(INITIALIZED) {
                self.initialize(snapshot, claim).await;
            }
        }
        wake
    }

    /// Starts a launch task unless one is running or backing off; returns the backoff deadline.
    fn start_launch(&self, snapshot: &Snapshot, claim: &Arc<NodeClaim>) -> Option<Instant> {
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        {
            let mut state = self.state.lock().expect("launch state");
            if state.in_flight.contains(&uid) {
                return None;
            }
            let now = Instant::now();
            state.recorded.retain(|_, at| *at + RECORD_SETTLE > now);
            if let Some(at) = state.recorded.get(&uid) {
                return Some(*at + RECORD_SETTLE);
            }
            if let Some((at, _)) = state.backoff.get(&uid)
                && *at > now
            {
                return Some(*at);
            }
            state.in_flight.insert(uid.clone());
        }
        let pool = claim.node_pool_name().and_then(|name| snapshot.node_pools.get(name)).cloned();
        let class = snapshot.node_classes.get(&claim.spec.node_class_ref.name).cloned();
        let this = self.clone();
        let claim = claim.clone();
        tokio::spawn(async move {
            let outcome = this.launcher.launch(&claim, pool.as_deref(), class.as_deref()).await;
            let mut state = this.state.lock().expect("launch state");
            state.in_flight.remove(&uid);
            match outcome {
                LaunchOutcome::Retry(reason) => {
                    let backoff =
                        state.backoff.get(&uid).map_or(LAUNCH_BACKOFF.0, |(_, b)| (*b * 2).min(LAUNCH_BACKOFF.1));
                    tracing::warn!(nodeclaim = claim.metadata.name.as_deref().unwrap_or_default(), %reason, ?backoff, "launch failed, retrying");
                    state.backoff.insert(uid, (Instant::now() + backoff, backoff));
                }
                LaunchOutcome::Launched => {
                    state.backoff.remove(&uid);
                    state.recorded.insert(uid, Instant::now());
                }
                LaunchOutcome::Deleted(_) => {
                    state.backoff.remove(&uid);
                }
            }
            drop(state);
            // Wake the loop: the claim's own update arrives through the watch, but a retry
            // deadline must be seen too.
            this.trigger.fire();
        });
        None
    }

    async fn register(&self, snapshot: &Snapshot, claim: &NodeClaim) {
        let nodes = snapshot.nodes_for_node_claim(claim);
        let node = match nodes.as_slice() {
            [] => return,
            [node] => node,
            _ => {
                let _ = set_condition(
                    &self.client,
                    &self.clock,
                    claim,
                    REGISTERED,
                    ConditionStatus::False,
                    "MultipleNodesFound",
                    "multiple nodes share the claim's providerID",
                    json!({}),
                )
                .await;
                return;
            }
        };
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = registration::registration_patch(claim, node);
        if registration::registration_changes(claim, node)
            && let Err(error) = api.patch(&node_name, &PatchParams::default(), &Patch::Merge(&patch)).await
        {
            tracing::debug!(node = %node_name, %error, "registering node (will retry)");
            return;
        }
        if !self.record_outcome(snapshot, claim, true).await {
            return;
        }
        match set_condition(
            &self.client,
            &self.clock,
            claim,
            REGISTERED,
            ConditionStatus::True,
            "Registered",
            "",
            json!({"nodeName": node_name}),
        )
        .await
        {
            Ok(_) => {
                tracing::info!(nodeclaim = claim.metadata.name.as_deref().unwrap_or_default(), node = %node_name, "registered nodeclaim")
            }
            Err(error) => tracing::debug!(%error, "recording registration (will retry)"),
        }
    }

    async fn initialize(&self, snapshot: &Snapshot, claim: &NodeClaim) {
        let Some(node) = snapshot.nodes_for_node_claim(claim).into_iter().next() else { return };
        if let Some(reason) = initialization::not_initialized_reason(claim, node) {
            if claim.condition(INITIALIZED).is_none_or(|c| c.message() != reason) {
                let _ = set_condition(
                    &self.client,
                    &self.clock,
                    claim,
                    INITIALIZED,
                    ConditionStatus::Unknown,
                    "NotInitialized",
                    &reason,
                    json!({}),
                )
                .await;
            }
            return;
        }
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = json!({"metadata": {"labels": {labels::NODE_INITIALIZED_LABEL: "true"}}});
        // Core patches only on change (`initialization.go:93-95`): a retry after a lost status
        // write finds the label already there.
        if !initialization::has_initialized_label(node)
            && api.patch(&node_name, &PatchParams::default(), &Patch::Merge(&patch)).await.is_err()
        {
            return;
        }
        if set_condition(
            &self.client,
            &self.clock,
            claim,
            INITIALIZED,
            ConditionStatus::True,
            "Initialized",
            "",
            json!({}),
        )
        .await
        .is_ok()
        {
            tracing::info!(nodeclaim = claim.metadata.name.as_deref().unwrap_or_default(), node = %node_name, "initialized nodeclaim");
        }
    }

    /// Records a registration (`success`) or a launch/registration timeout for the claim's
    /// NodePool, moving its `NodeRegistrationHealthy` condition first when the outcome does
    /// (core `updateNodePoolRegistrationHealth` in registration.go and liveness.go). A claim
    /// whose pool is gone or does not own it records nothing. Returns false when the pool's
    /// status write failed (a conflict: the caller retries the whole step on its next pass).
    async fn record_outcome(&self, snapshot: &Snapshot, claim: &NodeClaim, success: bool) -> bool {
        let Some(pool) = claim.node_pool_name().and_then(|name| snapshot.node_pools.get(name)) else { return true };
        let Some(uid) = pool.metadata.uid.as_deref() else { return true };
        let owned = claim.metadata.owner_references.iter().flatten().any(|o| o.kind == "NodePool" && o.uid == uid);
        if !owned {
            return true;
        }
        if let Some((status, reason, message)) = condition_for_outcome(&self.health, pool, claim, success) {
            let mut updated: NodePool = (**pool).clone();
            updated.set_condition(
                crate::apis::nodepool::CONDITION_NODE_REGISTRATION_HEALTHY,
                status,
                &reason,
                &message,
                &self.clock.now_time(),
            );
            let patch = json!({
                "metadata": {"resourceVersion": pool.metadata.resource_version},
                "status": {"conditions": updated.conditions()},
            });
            let api: Api<NodePool> = Api::all(self.client.clone());
            let name = pool.metadata.name.as_deref().unwrap_or_default();
            if let Err(error) = api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                tracing::debug!(nodepool = name, %error, "recording registration health (will retry)");
                return false;
            }
            tracing::info!(nodepool = name, ?status, %reason, "nodepool registration health changed");
        }
        self.health.record(uid, success);
        true
    }

    async fn delete_claim(&self, claim: &NodeClaim, reason: &str) {
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let name = claim.metadata.name.clone().unwrap_or_default();
        if api.delete(&name, &DeleteParams::default()).await.is_ok() {
            tracing::info!(nodeclaim = %name, reason, "deleted nodeclaim");
            self.events.publish(Event::about(
                claim,
                EventType::Warning,
                "Liveness",
                format!("NodeClaim deleted: {reason}"),
            ));
        }
    }
}
