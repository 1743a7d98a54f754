//! The orchestration queue (karpenter-behaviour.md §5.10; core queue.go): taint the candidates
//! `karpenter.sh/disrupted:NoSchedule` and record the `DisruptionReason` condition, pre-spin
//! the replacement NodeClaims, mark the candidates for deletion in state, wait until every
//! replacement is Initialized, then delete the candidate NodeClaims (termination drains them).
//! A replacement that is deleted (ICE, liveness) or not initialized within
//! [`REPLACEMENT_TIMEOUT`] aborts the command: the candidates are untainted and released.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::time::Instant;

use super::command::{Command, Decision};
use super::{QUEUE_POLL, REPLACEMENT_TIMEOUT};
use crate::apis::NodeClaim;
use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::labels::{DISRUPTED_TAINT_EFFECT, DISRUPTED_TAINT_KEY};
use crate::apis::nodeclaim::{CONDITION_DISRUPTION_REASON, CONDITION_INITIALIZED};
use crate::lifecycle::conditions::set_condition;
use crate::provisioning::node_claim_template::to_node_claim;
use crate::runtime::{Event, EventRecorder, EventType, Metrics, SharedClock};
use crate::state::Cluster;

/// How long to wait for a created replacement to show up in cluster state before marking the
/// candidates (so the provisioner sees the in-flight claim and does not launch a second one).
const SEEN_TIMEOUT: Duration = Duration::from_secs(10);

/// The queue: starts commands and finishes them in the background.
#[derive(Clone)]
pub struct Queue {
    client: Client,
    cluster: Arc<Cluster>,
    clock: SharedClock,
    events: EventRecorder,
    metrics: Metrics,
    queued: Arc<Mutex<BTreeSet<String>>>,
}

impl Queue {
    /// An empty queue.
    pub fn new(
        client: Client,
        cluster: Arc<Cluster>,
        clock: SharedClock,
        events: EventRecorder,
        metrics: Metrics,
    ) -> Self {
        Self { client, cluster, clock, events, metrics, queued: Arc::default() }
    }

    /// NodeClaims with a command in flight.
    pub fn queued(&self) -> BTreeSet<String> {
        self.queued.lock().expect("queue lock").clone()
    }

    /// Starts `command`: taints, conditions, replacements, marks; a replace then finishes in
    /// the background, a delete at once.
    ///
    /// # Errors
    /// Why the command could not start (its candidates are released again).
    pub async fn start(&self, command: Command) -> Result<(), String> {
        let reason = command.reason().as_str();
        {
            let mut queued = self.queued.lock().expect("queue lock");
            queued.extend(command.candidates.iter().map(|c| c.name.clone()));
        }
        for candidate in &command.candidates {
            if let Err(error) = self.taint(&candidate.node_name, true).await {
                self.abort(&command, &format!("tainting node {}: {error}", candidate.node_name)).await;
                return Err(error);
            }
            self.set_reason(&candidate.name, Some(reason)).await;
        }
        let mut replacements = Vec::new();
        let snapshot = self.cluster.snapshot();
        for planned in &command.replacements {
            let Some(pool) = snapshot.node_pools.get(&planned.node_pool) else {
                self.abort(&command, "replacement NodePool is gone").await;
                return Err(format!("NodePool {:?} not found", planned.node_pool));
            };
            let claim = to_node_claim(pool, planned);
            let api: Api<NodeClaim> = Api::all(self.client.clone());
            match api.create(&PostParams::default(), &claim).await {
                Ok(created) => {
                    let name = created.name_any();
                    self.events.publish(
                        Event::about(
                            &created,
                            EventType::Normal,
                            "DisruptionLaunching",
                            format!("Launching NodeClaim: {reason}/{}", command.decision().as_str()),
                        )
                        .deduped_also_by(reason),
                    );
                    self.metrics.nodeclaim_created(reason, &planned.node_pool);
                    self.cluster.nominate(&name, self.clock.now());
                    tracing::info!(nodeclaim = %name, instance_types = planned.instance_type_options.len(), "launching replacement");
                    replacements.push(name);
                }
                Err(error) => {
                    self.abort(&command, &format!("creating replacement: {error}")).await;
                    return Err(error.to_string());
                }
            }
        }
        let seen_by = Instant::now() + SEEN_TIMEOUT;
        while Instant::now() < seen_by {
            let snapshot = self.cluster.snapshot();
            if replacements.iter().all(|r| snapshot.node_claims.contains_key(r)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.cluster.remember(|m| m.marked_for_deletion.extend(command.candidates.iter().map(|c| c.name.clone())));
        if command.decision() == Decision::Delete {
            self.finish(&command, &replacements).await;
        } else {
            let queue = self.clone();
            tokio::spawn(async move { queue.finish(&command, &replacements).await });
        }
        Ok(())
    }

    /// Waits for the replacements, then deletes the candidates (or aborts).
    async fn finish(&self, command: &Command, replacements: &[String]) {
        let deadline = Instant::now() + REPLACEMENT_TIMEOUT;
        let mut announced = false;
        loop {
            match self.replacements_state(replacements).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(error) => {
                    self.abort(command, &error).await;
                    return;
                }
            }
            if Instant::now() >= deadline {
                self.abort(command, "timed out waiting for the replacement to initialize").await;
                return;
            }
            if !announced {
                for candidate in &command.candidates {
                    self.events.publish(Event::about(
                        candidate.claim.as_ref(),
                        EventType::Normal,
                        "DisruptionWaitingReadiness",
                        "Waiting on readiness to continue disruption",
                    ));
                }
                announced = true;
            }
            tokio::time::sleep(QUEUE_POLL).await;
        }
        let reason = command.reason().as_str();
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        for candidate in &command.candidates {
            // Core disruption/events/events.go Terminating: one message per object kind.
            let decision = command.decision().as_str();
            self.events.publish(
                Event::about(
                    candidate.node.as_ref(),
                    EventType::Normal,
                    "DisruptionTerminating",
                    format!("Disrupting Node: {reason}/{decision}"),
                )
                .deduped_also_by(reason),
            );
            self.events.publish(
                Event::about(
                    candidate.claim.as_ref(),
                    EventType::Normal,
                    "DisruptionTerminating",
                    format!("Disrupting NodeClaim: {reason}/{decision}"),
                )
                .deduped_also_by(reason),
            );
            self.metrics.nodeclaim_disrupted(reason, &candidate.pool);
            match api.delete(&candidate.name, &DeleteParams::default()).await {
                Ok(_) => tracing::info!(nodeclaim = %candidate.name, reason, "disrupting nodeclaim"),
                Err(error) => tracing::warn!(nodeclaim = %candidate.name, %error, "deleting disrupted nodeclaim"),
            }
        }
        let mut queued = self.queued.lock().expect("queue lock");
        for candidate in &command.candidates {
            queued.remove(&candidate.name);
        }
    }

    /// `Ok(true)` when every replacement is Initialized, `Err` when one is gone or deleting.
    async fn replacements_state(&self, replacements: &[String]) -> Result<bool, String> {
        let snapshot = self.cluster.snapshot();
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let mut all = true;
        for name in replacements {
            let claim = match snapshot.node_claims.get(name) {
                Some(claim) => claim.clone(),
                None => match api.get_opt(name).await {
                    Ok(Some(claim)) => Arc::new(claim),
                    Ok(None) => return Err(format!("replacement {name} was deleted")),
                    Err(_) => {
                        all = false;
                        continue;
                    }
                },
            };
            if claim.metadata.deletion_timestamp.is_some() {
                return Err(format!("replacement {name} is being deleted"));
            }
            all &= claim.is_condition_true(CONDITION_INITIALIZED);
        }
        Ok(all)
    }

    /// Releases the candidates of a command that will not run.
    async fn abort(&self, command: &Command, why: &str) {
        tracing::warn!(candidates = ?command.candidate_names(), why, "aborting disruption command");
        for candidate in &command.candidates {
            self.events.publish(Event::about(
                candidate.node.as_ref(),
                EventType::Warning,
                "DisruptionBlocked",
                format!("Disruption command aborted: {why}"),
            ));
            if let Err(error) = self.taint(&candidate.node_name, false).await {
                tracing::debug!(node = %candidate.node_name, %error, "untainting (the next loop retries)");
            }
            self.set_reason(&candidate.name, None).await;
        }
        let names: Vec<String> = command.candidates.iter().map(|c| c.name.clone()).collect();
        self.cluster.remember(|m| {
            for name in &names {
                m.marked_for_deletion.remove(name);
            }
        });
        let mut queued = self.queued.lock().expect("queue lock");
        for name in &names {
            queued.remove(name);
        }
    }

    /// Adds (`on`) or removes the disrupted taint.
    async fn taint(&self, node_name: &str, on: bool) -> Result<(), String> {
        set_disrupted_taint(&self.client, node_name, on).await
    }

    /// Sets (`Some(reason)`) or clears the `DisruptionReason` condition, on a fresh read.
    async fn set_reason(&self, claim_name: &str, reason: Option<&str>) {
        set_disruption_reason(&self.client, &self.clock, claim_name, reason).await;
    }
}

/// Adds or removes `karpenter.sh/disrupted:NoSchedule` on a Node (fresh read, guarded patch).
///
/// # Errors
/// API errors; a Node that is gone is fine when removing.
pub async fn set_disrupted_taint(client: &Client, node_name: &str, on: bool) -> Result<(), String> {
    let api: Api<Node> = Api::all(client.clone());
    let node = match api.get_opt(node_name).await {
        Ok(Some(node)) => node,
        Ok(None) if !on => return Ok(()),
        Ok(None) => return Err(format!("node {node_name} not found")),
        Err(error) => return Err(error.to_string()),
    };
    let current = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    let has = current.iter().any(|t| t.key == DISRUPTED_TAINT_KEY);
    if has == on {
        return Ok(());
    }
    let mut taints: Vec<serde_json::Value> = current
        .iter()
        .filter(|t| t.key != DISRUPTED_TAINT_KEY)
        .map(|t| serde_json::to_value(t).unwrap_or_default())
        .collect();
    if on {
        taints.push(json!({"key": DISRUPTED_TAINT_KEY, "effect": DISRUPTED_TAINT_EFFECT}));
    }
    let patch = json!({"metadata": {"resourceVersion": node.resource_version()}, "spec": {"taints": taints}});
    api.patch(node_name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ()).map_err(|e| e.to_string())
}

/// Sets (`Some(reason)`) or removes the claim's `DisruptionReason` condition on a fresh read.
pub async fn set_disruption_reason(client: &Client, clock: &SharedClock, claim_name: &str, reason: Option<&str>) {
    let api: Api<NodeClaim> = Api::all(client.clone());
    for _ in 0..3 {
        let Ok(Some(claim)) = api.get_opt(claim_name).await else { return };
        let result = match reason {
            Some(reason) => set_condition(
                client,
                clock,
                &claim,
                CONDITION_DISRUPTION_REASON,
                ConditionStatus::True,
                reason,
                "",
                json!({}),
            )
            .await
            .map(|_| ()),
            None => {
                if claim.condition(CONDITION_DISRUPTION_REASON).is_none() {
                    return;
                }
                let conditions: Vec<_> =
                    claim.conditions().iter().filter(|c| c.type_ != CONDITION_DISRUPTION_REASON).cloned().collect();
                let patch = json!({
                    "metadata": {"resourceVersion": claim.metadata.resource_version},
                    "status": {"conditions": conditions},
                });
                api.patch_status(claim_name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => return,
            Err(error) => tracing::debug!(nodeclaim = claim_name, %error, "writing DisruptionReason (retrying)"),
        }
    }
}
