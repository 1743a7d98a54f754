//! The instance status controller (aws/karpenter-provider-aws v1.14.1
//! `pkg/controllers/interruption/instancestatus_controller.go`, with the handler it shares with
//! the SQS controller, `utils.go`): once a minute it asks EC2 which instances fail their status
//! checks or have scheduled events ([`aws::instance_status::list`]) and acts on the NodeClaims
//! of those instances, with or without an interruption queue (upstream registers it
//! unconditionally, `pkg/controllers/controllers.go` l. 115; there is no feature gate).
//!
//! | category | kind (`reason` of the disrupted counter) | action (`utils.go` l. 207–216) |
//! |---|---|---|
//! | `InstanceStatus` check failed ≥ 2 min | `instance_status` | ForcefulTermination |
//! | `SystemStatus` check failed ≥ 2 min | `system_status` | ForcefulTermination |
//! | a scheduled event (`EventStatus`) | `event_status` | CordonAndDrain |
//!
//! Both actions publish `InstanceUnhealthy` on the claim and its Node (l. 193–194) and delete
//! the NodeClaim unless it is already deleting (`deleteNodeClaim`, l. 153–168:
//! `TerminatingOnInterruption` events, `karpenter_nodeclaims_disrupted_total{reason=kind}`).
//! ForcefulTermination first sets `karpenter.sh/nodeclaim-termination-timestamp` to now when
//! the claim has none (l. 117–124, 174–186), so the drain that follows does not wait for
//! PodDisruptionBudgets: the instance is already broken. Categories are handled forceful
//! first (upstream iterates a Go map; its suite requires "forceful termination should win").
//!
//! `karpenter_interruption_instance_status_unhealthy_total{category}` counts an (instance,
//! category) the first poll it is seen with a NodeClaim, and again only after a poll that did
//! not report it (l. 104–119, 149–164). With [`InstanceStatusController::dry_run`] (upstream's
//! `InstanceStatusDryRun`, a package variable its tests set, default false) only the counter
//! moves. A caller without `ec2:DescribeInstanceStatus` gets one error log and no further
//! polls (l. 97–100: the singleton is not requeued).

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::messages::instance_id_of;
use crate::apis::NodeClaim;
use crate::apis::labels::{NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION, NODE_POOL_LABEL};
use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::instance_status::{self as aws, Category, HealthStatus};
use crate::runtime::reconcile::{self, Env, Kinds, Reconciler};
use crate::runtime::{Event, EventType};
use crate::state::Snapshot;
use crate::termination::node_claim::format_deadline;

/// How often EC2 is polled (`InstanceStatusInterval = 1 * time.Minute`, l. 51).
pub const INTERVAL: Duration = Duration::from_secs(60);
/// How often to check whether the cluster state has synced before the first poll.
pub const SYNC_POLL: Duration = Duration::from_secs(1);
/// controller-runtime's per-item failure backoff for a failed reconcile (client-go
/// `DefaultTypedControllerRateLimiter`: 5 ms doubling, at most 1000 s).
const BACKOFF_BASE: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1000);

/// What upstream does about a category (`actionForMessage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusAction {
    /// Stamp the termination timestamp, then delete the NodeClaim.
    ForcefulTermination,
    /// Delete the NodeClaim (a graceful drain).
    CordonAndDrain,
}

/// The message kind of a category (`categoryToKind`, l. 57–61; EBS has none) and what is done
/// about it.
pub fn kind_of(category: Category) -> Option<(&'static str, StatusAction)> {
    match category {
        Category::InstanceStatus => Some(("instance_status", StatusAction::ForcefulTermination)),
        Category::SystemStatus => Some(("system_status", StatusAction::ForcefulTermination)),
        Category::EventStatus => Some(("event_status", StatusAction::CordonAndDrain)),
        Category::EbsStatus => None,
    }
}

/// One (instance, category) to act on, with the NodeClaims of the instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// `i-…`
    pub instance_id: String,
    /// The category.
    pub category: Category,
    /// Its kind.
    pub kind: &'static str,
    /// The claims whose providerID names the instance, by name.
    pub claims: Vec<String>,
    /// What to do to them; `None` in dry run.
    pub action: Option<StatusAction>,
}

/// What a poll's statuses call for against `snapshot` (`handleHealthStatus` + `handleMessage`
/// up to the action).
pub fn plan(statuses: &[HealthStatus], snapshot: &Snapshot, dry_run: bool) -> Vec<Planned> {
    let mut out = Vec::new();
    for status in statuses {
        let claims: Vec<String> = snapshot
            .node_claims
            .iter()
            .filter(|(_, c)| c.provider_id().and_then(instance_id_of) == Some(status.instance_id.as_str()))
            .map(|(name, _)| name.clone())
            .collect();
        for category in status.categories() {
            let Some((kind, action)) = kind_of(category) else { continue };
            out.push(Planned {
                instance_id: status.instance_id.clone(),
                category,
                kind,
                claims: claims.clone(),
                action: (!dry_run).then_some(action),
            });
        }
    }
    out
}

/// The unhealthy-counter's memory: which (instance, category) pairs were counted and are still
/// reported.
#[derive(Debug, Default)]
pub struct Seen(BTreeSet<(String, Category)>);

impl Seen {
    /// Takes in one poll's found pairs; returns those counted for the first time
    /// (`recordUnhealthyInstance`) and forgets those the poll no longer reports.
    pub fn poll(&mut self, found: &BTreeSet<(String, Category)>) -> Vec<(String, Category)> {
        let new: Vec<(String, Category)> = found.difference(&self.0).cloned().collect();
        self.0 = found.clone();
        new
    }
}

/// The instance status controller, a [`Reconciler`].
pub struct InstanceStatusController {
    ec2: aws_sdk_ec2::Client,
    /// Count only; touch no NodeClaim (upstream `InstanceStatusDryRun`).
    pub dry_run: bool,
    seen: Seen,
    /// UIDs of claims this controller deleted, so a category handled after another in the same
    /// poll (or a poll before the watch shows the deletionTimestamp) does not delete twice.
    deleted: BTreeSet<String>,
    /// Names of claims it stamped, likewise.
    stamped: BTreeSet<String>,
    /// Polling stopped for good (no permission).
    stopped: bool,
    failures: u32,
}

/// Why a poll failed (retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum InstanceStatusError {
    /// DescribeInstanceStatus failed.
    #[error("getting instance statuses, {0}")]
    List(CloudError),
    /// Acting on a NodeClaim failed.
    #[error("handling instance status check message, {0}")]
    Act(String),
}

impl InstanceStatusController {
    /// A controller polling through `ec2`.
    pub fn new(ec2: aws_sdk_ec2::Client) -> Self {
        Self {
            ec2,
            dry_run: false,
            seen: Seen::default(),
            deleted: BTreeSet::new(),
            stamped: BTreeSet::new(),
            stopped: false,
            failures: 0,
        }
    }

    /// Acts on one planned (instance, category) against its claims (`handleNodeClaim`).
    async fn act(&mut self, snapshot: &Snapshot, env: &Env, planned: &Planned) -> Result<(), String> {
        let Some(action) = planned.action else { return Ok(()) };
        let mut errors = Vec::new();
        for name in &planned.claims {
            let Some(claim) = snapshot.node_claims.get(name) else { continue };
            let node = snapshot.nodes_for_node_claim(claim).into_iter().next().cloned();
            let text = "An unhealthy warning was triggered for the instance";
            env.events.publish(Event::about(claim.as_ref(), EventType::Warning, "InstanceUnhealthy", text));
            if let Some(node) = &node {
                env.events.publish(Event::about(node.as_ref(), EventType::Warning, "InstanceUnhealthy", text));
            }
            if action == StatusAction::ForcefulTermination
                && let Err(e) = self.stamp(env, claim).await
            {
                errors.push(e);
                continue;
            }
            if let Err(e) = self.delete(env, claim, node.as_deref(), planned.kind).await {
                errors.push(e);
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    }

    /// `annotateTerminationTimestamp`: now, unless the claim already has one.
    async fn stamp(&mut self, env: &Env, claim: &NodeClaim) -> Result<(), String> {
        let name = claim.name_any();
        if claim.annotations().contains_key(NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION) || self.stamped.contains(&name)
        {
            return Ok(());
        }
        // Go's `Format(time.RFC3339)`: whole seconds.
        let stamp = format_deadline(env.clock.now());
        let patch = json!({"metadata": {"annotations": {NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION: stamp}}});
        let api: Api<NodeClaim> = Api::all(env.kube.clone());
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {
                self.stamped.insert(name);
                Ok(())
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(format!("annotating nodeclaim {name}, {error}")),
        }
    }

    /// `deleteNodeClaim`.
    async fn delete(&mut self, env: &Env, claim: &NodeClaim, node: Option<&Node>, kind: &str) -> Result<(), String> {
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        if claim.metadata.deletion_timestamp.is_some() || self.deleted.contains(&uid) {
            return Ok(());
        }
        let name = claim.name_any();
        let api: Api<NodeClaim> = Api::all(env.kube.clone());
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(error) => return Err(format!("deleting the node on interruption message, {error}")),
        }
        self.deleted.insert(uid);
        tracing::info!(nodeclaim = %name, message_kind = kind, "initiating delete from interruption message");
        env.events.publish(Event::about(
            claim,
            EventType::Warning,
            "TerminatingOnInterruption",
            "Interruption triggered termination for the NodeClaim",
        ));
        if let Some(node) = node {
            env.events.publish(Event::about(
                node,
                EventType::Warning,
                "TerminatingOnInterruption",
                "Interruption triggered termination for the Node",
            ));
        }
        let pool = claim.labels().get(NODE_POOL_LABEL).cloned().unwrap_or_default();
        env.metrics.nodeclaim_disrupted(kind, &pool);
        Ok(())
    }
}

impl Reconciler for InstanceStatusController {
    type Error = InstanceStatusError;

    fn name(&self) -> &'static str {
        "interruption.instancestatus"
    }

    fn watches(&self) -> Kinds {
        // A singleton on a timer (upstream `singleton.Source()`, `RequeueAfter: 1m`).
        Kinds::NONE
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<reconcile::Action, Self::Error> {
        if self.stopped {
            return Ok(reconcile::Action::await_change());
        }
        if !snapshot.is_synced() {
            return Ok(reconcile::Action::requeue(SYNC_POLL));
        }
        let statuses = match aws::list(&self.ec2, env.clock.now()).await {
            Ok(statuses) => statuses,
            Err(CloudError::Other { reason, message }) if reason == aws::UNAUTHORIZED_OPERATION => {
                tracing::error!(%message, "ec2:DescribeInstanceStatus permission is not allowed, update the IAM policy and restart the Karpenter deployment to enable instance status health checks");
                self.stopped = true;
                return Ok(reconcile::Action::await_change());
            }
            Err(error) => return Err(InstanceStatusError::List(error)),
        };
        let live: BTreeSet<String> = snapshot.node_claims.values().filter_map(|c| c.metadata.uid.clone()).collect();
        self.deleted.retain(|uid| live.contains(uid));
        self.stamped.retain(|name| snapshot.node_claims.contains_key(name));
        let mut found = BTreeSet::new();
        let mut errors = Vec::new();
        for planned in plan(&statuses, snapshot, self.dry_run) {
            match self.act(snapshot, env, &planned).await {
                Ok(()) if !planned.claims.is_empty() => {
                    found.insert((planned.instance_id.clone(), planned.category));
                }
                Ok(()) => {}
                Err(e) => errors.push(e),
            }
        }
        for (instance_id, category) in self.seen.poll(&found) {
            tracing::info!(instance_id, category = category.as_str(), "detected unhealthy instance owned by cluster");
            env.metrics.instance_status_unhealthy(category.as_str());
        }
        if !errors.is_empty() {
            return Err(InstanceStatusError::Act(errors.join("; ")));
        }
        self.failures = 0;
        Ok(reconcile::Action::requeue(INTERVAL))
    }

    fn error_policy(&mut self, error: &Self::Error) -> reconcile::Action {
        let backoff = BACKOFF_BASE.saturating_mul(1 << self.failures.min(30)).min(BACKOFF_MAX);
        self.failures = self.failures.saturating_add(1);
        tracing::warn!(%error, ?backoff, "instance status poll failed");
        reconcile::Action::requeue(backoff)
    }
}

#[cfg(test)]
#[path = "instance_status_tests.rs"]
mod tests;
