//! NodePool status (core nodepool/readiness, nodepool/counter, nodepool/registrationhealth):
//! `ValidationSucceeded` from the runtime validation, `NodeClassReady` from the referenced
//! EC2NodeClass, the `Ready` roll-up, `NodeRegistrationHealthy` reset on a pool or class change
//! ([`registration_health`]), and `status.resources` / `status.nodes` summed over the pool's
//! NodeClaims.

pub mod registration_health;

use std::time::Duration;

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::nodepool::{CONDITION_NODE_CLASS_READY, CONDITION_VALIDATION_SUCCEEDED};
use crate::apis::{NodePool, NodePoolStatus};
use crate::provisioning::provisioner::pool_usage;
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::state::Snapshot;
use registration_health::RegistrationHealth;

/// The status the pool should have now. Resetting `NodeRegistrationHealthy` also empties the
/// pool's outcome buffer in `health`, and a restarted controller's empty buffer is re-filled
/// from the condition (core `registrationhealth/controller.go`).
pub fn desired_status(
    snapshot: &Snapshot,
    pool: &NodePool,
    health: &RegistrationHealth,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> NodePoolStatus {
    let mut updated = pool.clone();
    match pool.runtime_validate() {
        Ok(()) => updated.set_condition(
            CONDITION_VALIDATION_SUCCEEDED,
            ConditionStatus::True,
            CONDITION_VALIDATION_SUCCEEDED,
            "",
            now,
        ),
        Err(e) => updated.set_condition(
            CONDITION_VALIDATION_SUCCEEDED,
            ConditionStatus::False,
            "NodePoolValidationFailed",
            &e.to_string(),
            now,
        ),
    };
    let reference = pool.node_class_ref();
    if let Some(class) = snapshot.node_classes.get(&reference.name) {
        registration_health::reconcile_condition(
            health,
            &mut updated,
            class.metadata.generation.unwrap_or_default(),
            now,
        );
    }
    match snapshot.node_classes.get(&reference.name) {
        Some(class) if class.is_ready() => updated.set_condition(
            CONDITION_NODE_CLASS_READY,
            ConditionStatus::True,
            CONDITION_NODE_CLASS_READY,
            "",
            now,
        ),
        Some(_) => updated.set_condition(
            CONDITION_NODE_CLASS_READY,
            ConditionStatus::False,
            "NodeClassNotReady",
            "EC2NodeClass not ready",
            now,
        ),
        None => updated.set_condition(
            CONDITION_NODE_CLASS_READY,
            ConditionStatus::False,
            "NodeClassNotFound",
            &format!("EC2NodeClass {:?} not found", reference.name),
            now,
        ),
    };
    let mut usage = pool_usage(snapshot, pool.metadata.name.as_deref().unwrap_or_default());
    let nodes = usage.get("nodes");
    usage.set("nodes", 0);
    let mut status = updated.status.unwrap_or_default();
    status.resources = Some(with_base_resources(usage.to_resource_list()));
    status.nodes = Some(nodes);
    status
}

/// The usage with every base resource listed, zero when unused: core's counter starts from
/// `BaseResources` (cpu, memory, pods, ephemeral-storage and nodes at 0,
/// `pkg/controllers/nodepool/counter/controller.go:52-58`, `lo.Assign` l. 88). A key left out
/// instead would survive in the stored status, since a merge patch removes nothing it omits,
/// and the status would be re-sent, unchanged, on every pass.
pub fn with_base_resources(mut list: crate::apis::ResourceList) -> crate::apis::ResourceList {
    for key in ["cpu", "memory", "pods", "ephemeral-storage", "nodes"] {
        list.entry(key.to_owned()).or_insert_with(|| crate::apis::IntOrQuantity::String("0".to_owned()));
    }
    list
}

/// Bursts of changes are acted on at most once a second.
pub const PACE: Duration = Duration::from_secs(1);
/// Every pool's status is recomputed at least this often after the pace.
pub const RESYNC: Duration = Duration::from_secs(30);

/// The NodePool status controller: recomputes every pool's status on a change (at most once a
/// [`PACE`]) and at least every [`RESYNC`]. Its writes are guarded by the pool's
/// resourceVersion: the lifecycle controller writes `NodeRegistrationHealthy` into the same
/// condition list, and a merge patch replaces the whole list.
#[derive(Debug, Default)]
pub struct NodePoolStatusController {
    health: RegistrationHealth,
}

impl NodePoolStatusController {
    /// A status controller sharing the lifecycle controller's registration outcomes.
    pub fn new(health: RegistrationHealth) -> Self {
        Self { health }
    }
}

impl Reconciler for NodePoolStatusController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "nodepool.status"
    }

    fn watches(&self) -> Kinds {
        // Conditions read the pool and its class; resources and node counts its NodeClaims.
        Kinds::of(&[Kind::NodePool, Kind::NodeClass, Kind::NodeClaim])
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        let api: Api<NodePool> = Api::all(env.kube.clone());
        if snapshot.is_synced() {
            let now = env.clock.now_time();
            for pool in snapshot.node_pools.values() {
                if pool.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let status = desired_status(snapshot, pool, &self.health, &now);
                if pool.status.as_ref() == Some(&status) {
                    continue;
                }
                let patch = json!({"metadata": {"resourceVersion": pool.metadata.resource_version}, "status": status});
                let name = pool.metadata.name.as_deref().unwrap_or_default();
                if let Err(error) = api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    tracing::debug!(nodepool = name, %error, "writing nodepool status");
                }
            }
        }
        Ok(Action::requeue(PACE + RESYNC).paced(PACE))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::IntOrQuantity;

    #[test]
    fn an_unused_pool_lists_every_base_resource_at_zero() {
        let used: crate::apis::ResourceList = [("cpu".to_owned(), IntOrQuantity::String("4".to_owned()))].into();
        let list = with_base_resources(used);
        assert_eq!(list.get("cpu"), Some(&IntOrQuantity::String("4".to_owned())));
        for key in ["memory", "pods", "ephemeral-storage", "nodes"] {
            assert_eq!(list.get(key), Some(&IntOrQuantity::String("0".to_owned())), "{key}");
        }
    }
}
