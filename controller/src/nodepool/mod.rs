//! NodePool status (core nodepool/readiness, nodepool/counter): `ValidationSucceeded` from the
//! runtime validation, `NodeClassReady` from the referenced EC2NodeClass, the `Ready` roll-up,
//! and `status.resources` / `status.nodes` summed over the pool's NodeClaims.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::nodepool::{CONDITION_NODE_CLASS_READY, CONDITION_VALIDATION_SUCCEEDED};
use crate::apis::{NodePool, NodePoolStatus};
use crate::provisioning::provisioner::pool_usage;
use crate::runtime::SharedClock;
use crate::state::{Cluster, Snapshot};

/// The status the pool should have now.
pub fn desired_status(
    snapshot: &Snapshot,
    pool: &NodePool,
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
    status.resources = Some(usage.to_resource_list());
    status.nodes = Some(nodes);
    status
}

/// Runs forever: recompute on every change (at most every second) and at least every 30 s.
pub async fn run(client: Client, cluster: Arc<Cluster>, clock: SharedClock) {
    let mut changes = cluster.subscribe();
    let api: Api<NodePool> = Api::all(client);
    loop {
        let snapshot = cluster.snapshot();
        if snapshot.is_synced() {
            let now = clock.now_time();
            for pool in snapshot.node_pools.values() {
                if pool.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let status = desired_status(&snapshot, pool, &now);
                if pool.status.as_ref() == Some(&status) {
                    continue;
                }
                let patch = json!({"status": status});
                let name = pool.metadata.name.as_deref().unwrap_or_default();
                if let Err(error) = api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    tracing::debug!(nodepool = name, %error, "writing nodepool status");
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        tokio::select! {
            biased;
            changed = changes.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
    }
}
