//! The drift condition controller (core `nodeclaim/disruption` drift sub-reconciler, with the
//! nodepool and nodeclass hash controllers): keeps `Drifted=True` with the reason on every
//! launched NodeClaim that no longer matches its NodePool or node class, and removes it once the
//! claim matches again. The disruption loop reads the condition; this controller never deletes.
//!
//! A claim is re-evaluated when one of its inputs changes (its labels or annotations, its
//! NodePool's spec generation, its node class's spec generation or resolved status) and at least
//! every [`DRIFT_RECHECK`], as Karpenter requeues drift every 5 minutes. Along the way it keeps
//! the hash annotations on NodePools and EC2NodeClasses current and re-stamps claims whose hash
//! version is outdated ([`super::hash_version`]). Drift emits no Event (as in Karpenter); newly
//! drifted claims count in `karpenter_nodeclaims_drifted_total{type,nodepool,capacity_type}`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::time::Instant;

use super::hash_version::{missing, node_class_annotations, node_pool_annotations, restamp};
use super::rules::{INSTANCE_TYPE_CHECK_MIN_AGE, core_drift};
use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::labels::CAPACITY_TYPE_LABEL;
use crate::apis::nodeclaim::{CONDITION_DRIFTED, CONDITION_LAUNCHED};
use crate::apis::{EC2NodeClass, NodeClaim, NodePool};
use crate::cloudprovider::{CloudError, CloudProvider, DriftReason};
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::runtime::{Metrics, SharedClock};
use crate::state::Snapshot;

/// Every launched claim is re-evaluated at least this often (core: `RequeueAfter: 5m`).
pub const DRIFT_RECHECK: Duration = Duration::from_secs(300);
/// A claim whose evaluation failed (instance not described yet, node class not resolved) is
/// tried again after this long.
pub const DRIFT_RETRY: Duration = Duration::from_secs(30);
/// Bursts of cluster changes are coalesced into one pass.
pub const COALESCE: Duration = Duration::from_secs(1);

/// The drift controller, a [`Reconciler`].
pub struct DriftController {
    client: Client,
    cloud: Arc<dyn CloudProvider>,
    clock: SharedClock,
    metrics: Metrics,
    /// Claim UID → (inputs evaluated, when the evaluation is due again).
    checked: BTreeMap<String, (String, Instant)>,
}

impl DriftController {
    /// A drift controller over the shared state.
    pub fn new(client: Client, cloud: Arc<dyn CloudProvider>, clock: SharedClock, metrics: Metrics) -> Self {
        Self { client, cloud, clock, metrics, checked: BTreeMap::new() }
    }

    /// One walk over every NodePool, EC2NodeClass and NodeClaim; returns when a re-check is due.
    pub async fn pass(&mut self, snapshot: &Snapshot) -> Option<Duration> {
        if !snapshot.is_synced() {
            return Some(COALESCE);
        }
        self.annotate_owners(snapshot).await;
        let uids: Vec<String> = snapshot.node_claims.values().filter_map(|c| c.metadata.uid.clone()).collect();
        self.checked.retain(|uid, _| uids.contains(uid));
        let mut soonest: Option<Duration> = None;
        for claim in snapshot.node_claims.values() {
            if claim.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let pool = claim.node_pool_name().and_then(|name| snapshot.node_pools.get(name)).map(AsRef::as_ref);
            let class = snapshot.node_classes.get(&claim.spec.node_class_ref.name).map(AsRef::as_ref);
            let launched = claim.is_condition_true(CONDITION_LAUNCHED);
            if let Some(annotations) = restamp(claim, pool, class, launched) {
                tracing::info!(
                    nodeclaim = claim.name_any(),
                    ?annotations,
                    "re-stamping hash annotations of an older hash version"
                );
                patch_annotations(&self.client, claim.as_ref(), annotations).await;
                continue;
            }
            if !launched {
                // Core: a claim that has not launched cannot be drifted.
                if claim.condition(CONDITION_DRIFTED).is_some() {
                    self.write(claim, pool, None).await;
                }
                continue;
            }
            let Some(pool) = pool else { continue };
            let uid = claim.metadata.uid.clone().unwrap_or_default();
            let inputs = inputs(claim, pool, class);
            let now = Instant::now();
            if let Some((seen, due)) = self.checked.get(&uid)
                && *seen == inputs
                && *due > now
            {
                soonest = Some(soonest.map_or(*due - now, |s| s.min(*due - now)));
                continue;
            }
            let due = match self.evaluate(claim, pool, class).await {
                Ok(reason) => {
                    if self.write(claim, Some(pool), reason).await {
                        now + DRIFT_RECHECK
                    } else {
                        // The write lost a race; evaluate again on the next pass.
                        now
                    }
                }
                Err(error) => {
                    tracing::debug!(nodeclaim = claim.name_any(), %error, "evaluating drift (will retry)");
                    now + DRIFT_RETRY
                }
            };
            self.checked.insert(uid, (inputs, due));
            let after = due.saturating_duration_since(now).max(COALESCE);
            soonest = Some(soonest.map_or(after, |s| s.min(after)));
        }
        soonest
    }

    /// Core's checks, then the provider's (core `Drift.isDrifted`).
    async fn evaluate(
        &self,
        claim: &NodeClaim,
        pool: &NodePool,
        class: Option<&EC2NodeClass>,
    ) -> Result<Option<DriftReason>, CloudError> {
        let age = claim.metadata.creation_timestamp.as_ref().map_or(Duration::ZERO, |t| self.clock.since(t));
        let types = match class {
            Some(class) if age >= INSTANCE_TYPE_CHECK_MIN_AGE => Some(self.cloud.instance_types(pool, class).await?),
            _ => None,
        };
        if let Some(reason) = core_drift(pool, claim, types.as_deref(), age) {
            return Ok(Some(reason));
        }
        // Without its node class there is nothing the provider can compare (core: no drift).
        let Some(class) = class else { return Ok(None) };
        if !class.is_ready() {
            // The resolved status may be partial; keep whatever the claim says until it is Ready.
            return Err(CloudError::NodeClassNotReady(format!("EC2NodeClass {:?} is not Ready", class.name_any())));
        }
        self.cloud.is_drifted(claim, pool, class).await
    }

    /// Sets `Drifted=True` with `reason` (reason and message are the drift reason, as core writes
    /// them), or removes the condition; returns false when the write failed.
    async fn write(&self, claim: &NodeClaim, pool: Option<&NodePool>, reason: Option<DriftReason>) -> bool {
        let current = claim.condition(CONDITION_DRIFTED);
        let mut updated = claim.clone();
        match reason {
            Some(reason) => {
                if current.is_some_and(|c| c.is_true() && c.reason() == reason.as_str()) {
                    return true;
                }
                updated.set_condition(
                    CONDITION_DRIFTED,
                    ConditionStatus::True,
                    reason.as_str(),
                    reason.as_str(),
                    &self.clock.now_time(),
                );
            }
            None => {
                if current.is_none() {
                    return true;
                }
                updated.clear_condition(CONDITION_DRIFTED);
            }
        }
        let patch = json!({
            "metadata": {"resourceVersion": claim.metadata.resource_version},
            "status": {"conditions": updated.conditions()},
        });
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        if let Err(error) = api.patch_status(&claim.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::debug!(nodeclaim = claim.name_any(), %error, "writing the Drifted condition (will retry)");
            return false;
        }
        let pool_name = pool.map(ResourceExt::name_any).unwrap_or_default();
        match reason {
            Some(reason) => {
                tracing::info!(nodeclaim = claim.name_any(), nodepool = %pool_name, reason = %reason, "marking drifted");
                if current.is_none_or(|c| !c.is_true()) {
                    let capacity_type = claim.labels().get(CAPACITY_TYPE_LABEL).cloned().unwrap_or_default();
                    self.metrics.nodeclaim_drifted(reason.as_str(), &pool_name, &capacity_type);
                }
            }
            None => tracing::info!(nodeclaim = claim.name_any(), "removing the Drifted condition, no longer drifted"),
        }
        true
    }

    /// Keeps every NodePool's and EC2NodeClass's hash and hash-version annotations current.
    async fn annotate_owners(&self, snapshot: &Snapshot) {
        for pool in snapshot.node_pools.values().filter(|p| p.metadata.deletion_timestamp.is_none()) {
            if let Some(annotations) = missing(pool.as_ref(), node_pool_annotations(pool)) {
                patch_annotations(&self.client, pool.as_ref(), annotations).await;
            }
        }
        for class in snapshot.node_classes.values().filter(|c| c.metadata.deletion_timestamp.is_none()) {
            if let Some(annotations) = missing(class.as_ref(), node_class_annotations(class)) {
                patch_annotations(&self.client, class.as_ref(), annotations).await;
            }
        }
    }
}

impl Reconciler for DriftController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "nodeclaim.drift"
    }

    fn watches(&self) -> Kinds {
        // A claim drifts from its NodePool or its EC2NodeClass (spec or resolved status).
        Kinds::of(&[Kind::NodeClaim, Kind::NodePool, Kind::NodeClass])
    }

    fn debounce(&self) -> Duration {
        COALESCE
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, _env: &Env) -> Result<Action, Self::Error> {
        Ok(Action::requeue(self.pass(snapshot).await.unwrap_or(DRIFT_RECHECK)))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

/// What a claim's drift depends on, as text: a change re-evaluates it before the periodic check.
fn inputs(claim: &NodeClaim, pool: &NodePool, class: Option<&EC2NodeClass>) -> String {
    let class_status = class.and_then(|c| {
        let s = c.status.as_ref()?;
        Some(serde_json::to_string(&(&s.amis, &s.subnets, &s.security_groups, c.is_ready())).unwrap_or_default())
    });
    format!(
        "{:?}|{:?}|{:?}|{}|{:?}|{:?}",
        pool.metadata.generation,
        class.map(|c| c.metadata.generation),
        class.map(|c| c.metadata.uid.clone()),
        class_status.unwrap_or_default(),
        claim.labels(),
        claim.annotations(),
    )
}

/// Merge-patches annotations onto a cluster-scoped object, guarded by its resourceVersion (a lost
/// race is retried on the next pass).
async fn patch_annotations<K>(client: &Client, object: &K, annotations: BTreeMap<String, String>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = json!({"metadata": {"annotations": annotations, "resourceVersion": object.resource_version()}});
    let api: Api<K> = Api::all(client.clone());
    if let Err(error) = api.patch(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
        tracing::debug!(name = object.name_any(), %error, "writing hash annotations (will retry)");
    }
}
