//! The NodeOverlay reconciler (core `pkg/controllers/nodeoverlay/controller.go`): lists the
//! NodeOverlays and NodePools, evaluates the overlays against each pool's instance types from
//! the undecorated cloud provider ([`super::evaluate`]), writes each overlay's
//! `ValidationSucceeded` (False with reason `RuntimeValidation` or `Conflict`) when it changed,
//! swaps the new evaluation into the [`InstanceTypeStore`] and looks again in 6 h.
//!
//! It runs on NodePool and EC2NodeClass changes (controller.go l. 143-161) and, through
//! [`watch_overlays`], on NodeOverlay generation changes (`GenerationChangedPredicate`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use serde_json::json;

use crate::apis::NodeOverlay;
use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::cloudprovider::CloudProvider;
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler, Trigger};
use crate::state::Snapshot;

use super::evaluate::{Evaluation, PoolTypes, evaluate};
use super::store::InstanceTypeStore;

/// controller.go l. 140: the periodic re-evaluation.
pub const REEVALUATE: Duration = Duration::from_secs(6 * 3600);
/// How soon to look again after a status write lost a race (controller.go l. 121-123).
const RETRY: Duration = Duration::from_secs(1);
/// The condition the reconciler owns.
pub const CONDITION_VALIDATION_SUCCEEDED: &str = "ValidationSucceeded";

/// Why a reconcile failed; retried with the driver's backoff (`reasonable.RateLimiter`).
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    /// Listing NodeOverlays failed.
    #[error("listing nodeoverlays, {0}")]
    List(#[from] kube::Error),
    /// Some NodePools' instance types could not be listed; the others were evaluated.
    #[error("{0}")]
    Pools(String),
}

/// The reconciler. `cloud` is the provider without overlays (core `controllers.go` l. 188
/// passes `overlayUndecoratedCloudProvider`).
pub struct NodeOverlayController {
    cloud: Arc<dyn CloudProvider>,
    store: Arc<InstanceTypeStore>,
    trigger: Trigger,
}

impl NodeOverlayController {
    /// A reconciler writing `store`; `trigger` is fired by [`watch_overlays`].
    pub fn new(cloud: Arc<dyn CloudProvider>, store: Arc<InstanceTypeStore>, trigger: Trigger) -> Self {
        Self { cloud, store, trigger }
    }

    /// Every NodePool's instance types; pools that fail are left out and reported.
    async fn pool_types(&self, snapshot: &Snapshot) -> (Vec<PoolTypes>, Vec<String>) {
        let mut pools = Vec::new();
        let mut errors = Vec::new();
        for pool in snapshot.node_pools.values() {
            let name = pool.metadata.name.clone().unwrap_or_default();
            let class_name = &pool.node_class_ref().name;
            let Some(class) = snapshot.node_classes.get(class_name) else {
                errors.push(format!(
                    "listing instance types for nodepool {name:?}, EC2NodeClass {class_name:?} not found"
                ));
                continue;
            };
            match self.cloud.instance_types(pool, class).await {
                Ok(types) => pools.push((pool.clone(), types)),
                Err(error) => errors.push(format!("listing instance types for nodepool {name:?}, {error}")),
            }
        }
        (pools, errors)
    }
}

/// The overlay with `ValidationSucceeded` as the evaluation says (controller.go l. 274-280).
pub fn with_validation_status(
    overlay: &NodeOverlay,
    evaluation: &Evaluation,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> NodeOverlay {
    let mut updated = overlay.clone();
    let name = overlay.metadata.name.clone().unwrap_or_default();
    if let Some(message) = evaluation.runtime_failures.get(&name) {
        updated.set_condition(
            CONDITION_VALIDATION_SUCCEEDED,
            ConditionStatus::False,
            "RuntimeValidation",
            message,
            now,
        );
    } else if evaluation.conflicts.contains(&name) {
        updated.set_condition(
            CONDITION_VALIDATION_SUCCEEDED,
            ConditionStatus::False,
            "Conflict",
            "conflict with another overlay",
            now,
        );
    } else {
        updated.set_true(CONDITION_VALIDATION_SUCCEEDED, now);
    }
    updated
}

impl Reconciler for NodeOverlayController {
    type Error = OverlayError;

    fn name(&self) -> &'static str {
        "nodeoverlay.controller"
    }

    fn watches(&self) -> Kinds {
        Kinds::of(&[Kind::NodePool, Kind::NodeClass])
    }

    fn trigger(&self) -> Option<Trigger> {
        Some(self.trigger.clone())
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        if !snapshot.is_synced() {
            return Ok(Action::requeue(RETRY));
        }
        let api: Api<NodeOverlay> = Api::all(env.kube.clone());
        let mut overlays = api.list(&ListParams::default()).await?.items;
        let (pools, errors) = self.pool_types(snapshot).await;
        let evaluation = evaluate(&mut overlays, &pools);
        let now = env.clock.now_time();
        for overlay in &overlays {
            let updated = with_validation_status(overlay, &evaluation, &now);
            if updated.status == overlay.status {
                continue;
            }
            let name = overlay.metadata.name.as_deref().unwrap_or_default();
            // Optimistic lock: a conflict or a vanished overlay re-evaluates (l. 286-293).
            let patch =
                json!({"metadata": {"resourceVersion": overlay.metadata.resource_version}, "status": updated.status});
            match api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {
                    return Ok(Action::requeue(RETRY));
                }
                Err(error) => return Err(error.into()),
            }
        }
        self.store.update(evaluation.store);
        if !errors.is_empty() {
            return Err(OverlayError::Pools(errors.join("; ")));
        }
        Ok(Action::requeue(REEVALUATE))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        tracing::warn!(%error, "evaluating nodeoverlays");
        Action::requeue(Duration::from_secs(5))
    }
}

/// Fires `trigger` whenever a NodeOverlay is added, deleted or its generation changes
/// (controller-runtime's `GenerationChangedPredicate`: status writes do not re-run it).
pub async fn watch_overlays(client: Client, trigger: Trigger, jitter_seed: u64) {
    let api: Api<NodeOverlay> = Api::all(client);
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .backoff(crate::state::watch::watch_backoff(jitter_seed))
        .boxed();
    let mut generations: BTreeMap<String, Option<i64>> = BTreeMap::new();
    let mut listing: BTreeMap<String, Option<i64>> = BTreeMap::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(o)) => {
                listing.insert(o.metadata.name.clone().unwrap_or_default(), o.metadata.generation);
            }
            Ok(Event::InitDone) => {
                if listing != generations {
                    generations = std::mem::take(&mut listing);
                    trigger.fire();
                }
            }
            Ok(Event::Apply(o)) => {
                let name = o.metadata.name.clone().unwrap_or_default();
                if generations.insert(name, o.metadata.generation) != Some(o.metadata.generation) {
                    trigger.fire();
                }
            }
            Ok(Event::Delete(o)) => {
                generations.remove(o.metadata.name.as_deref().unwrap_or_default());
                trigger.fire();
            }
            Err(error) => tracing::warn!(%error, "nodeoverlay watch failed, retrying"),
        }
    }
}
