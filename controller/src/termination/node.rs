//! The Node side of termination (core `node/termination` finalize): make sure the NodeClaim is
//! deleting, let a dead node go at once, taint `karpenter.sh/disrupted:NoSchedule`, drain, wait
//! out [`MIN_DRAIN_TIME`], terminate the instance, then remove the Node's finalizer.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::time::Instant;

use super::node_claim::recorded_deadline;
use super::{DRAIN_REQUEUE, InstanceState, MIN_DRAIN_TIME, Termination, drain, remove_finalizer};
use crate::apis::NodeClaim;
use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::labels::{DISRUPTED_TAINT_EFFECT, DISRUPTED_TAINT_KEY};
use crate::apis::nodeclaim::{CONDITION_DRAINED, CONDITION_VOLUMES_DETACHED};
use crate::cloudprovider::CloudError;
use crate::lifecycle::conditions::set_condition;
use crate::provisioning::input::node_is_ready;
use crate::runtime::clock::elapsed;
use crate::runtime::{Event, EventType};
use crate::state::Snapshot;

/// The label that takes a draining node out of external load balancers (core terminator.go,
/// aws-node-termination-handler#316).
pub const EXCLUDE_FROM_LOAD_BALANCERS_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// The reason of `Drained=Unknown` while draining; its transition time is when drain began.
pub const DRAINING_REASON: &str = "Draining";

/// Whether the node already carries the disrupted taint (key, empty value, NoSchedule).
pub fn has_disrupted_taint(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|taints| {
        taints.iter().any(|t| t.key == DISRUPTED_TAINT_KEY && t.effect == DISRUPTED_TAINT_EFFECT && t.value.is_none())
    })
}

/// When drain began, per the claim's `Drained=Unknown/Draining` condition.
pub fn drain_started(claim: &NodeClaim) -> Option<jiff::Timestamp> {
    claim
        .condition(CONDITION_DRAINED)
        .filter(|c| c.status == ConditionStatus::Unknown && c.reason() == DRAINING_REASON)
        .map(|c| c.last_transition_time.0)
}

impl Termination {
    /// The provider IDs of deleting NotReady nodes whose instance the cloud no longer knows
    /// (step 2 of [`Termination::finalize_node`]). Core asks the cloud once per reconcile of such
    /// a node (node/termination/controller.go l. 121-128), and a draining node is reconciled once
    /// a second (`awaitDrain`, `RequeueAfter: 1s`) by concurrent workers; the AWS provider answers
    /// from its instance cache or one batched DescribeInstances. This pass also runs on every pod
    /// change, so each node is asked about at most once per [`DRAIN_REQUEUE`], all due nodes at
    /// once.
    pub(super) async fn dead_instances(&self, snapshot: &Snapshot) -> BTreeSet<String> {
        let now = Instant::now();
        let due: Vec<String> = {
            let mut checks = self.instance_checks.lock().expect("instance checks");
            let dying: Vec<(String, String)> = snapshot
                .nodes
                .values()
                .filter(|n| n.metadata.deletion_timestamp.is_some() && super::has_termination_finalizer(n.as_ref()))
                .filter(|n| !node_is_ready(n) && snapshot.node_claim_for_node(n).is_some())
                .filter_map(|n| Some((n.name_any(), n.spec.as_ref()?.provider_id.clone()?)))
                .collect();
            checks.retain(|name, _| dying.iter().any(|(n, _)| n == name));
            let mut due = Vec::new();
            for (name, provider_id) in dying {
                if checks.get(&name).is_none_or(|at| *at <= now) {
                    checks.insert(name, now + DRAIN_REQUEUE);
                    due.push(provider_id);
                }
            }
            due
        };
        let answers = futures::future::join_all(due.iter().map(|id| self.cloud.get(id))).await;
        due.into_iter()
            .zip(answers)
            .filter(|(_, a)| matches!(a, Err(CloudError::NotFound(_))))
            .map(|(id, _)| id)
            .collect()
    }

    /// One step of a deleting Node's finalizer; returns when to look again. `dead` holds the
    /// provider IDs [`Termination::dead_instances`] found gone.
    pub(super) async fn finalize_node(
        &self,
        snapshot: &Snapshot,
        node: &Node,
        dead: &BTreeSet<String>,
    ) -> Option<Duration> {
        let name = node.name_any();
        let Some(claim) = snapshot.node_claim_for_node(node) else {
            // Core treats this as a terminal error: the claim carries the deadline and the
            // instance, so without it there is nothing safe to do.
            tracing::debug!(node = %name, "deleting node has no nodeclaim; leaving its finalizer");
            return None;
        };
        // 1. Deleting a Node means deleting its claim (which then waits for this Node).
        if claim.metadata.deletion_timestamp.is_none() {
            let api: Api<NodeClaim> = Api::all(self.client.clone());
            if let Err(error) = api.delete(&claim.name_any(), &DeleteParams::default()).await {
                tracing::debug!(node = %name, %error, "deleting nodeclaim (will retry)");
                return Some(DRAIN_REQUEUE);
            }
        }
        // 2. A NotReady node whose instance is gone has nothing left to drain.
        if !node_is_ready(node)
            && let Some(provider_id) = node.spec.as_ref().and_then(|s| s.provider_id.as_deref())
            && dead.contains(provider_id)
        {
            return self.release(node).await;
        }
        let now = self.clock.now();
        let deadline = recorded_deadline(claim);
        if let Some(deadline) = deadline {
            self.events.publish(
                Event::about(
                    node,
                    EventType::Warning,
                    "TerminationGracePeriodExpiring",
                    format!("All pods will be deleted by {}", super::node_claim::format_deadline(deadline)),
                )
                .deduped_by_name(),
            );
        }
        // 3. Nothing new may land here while it drains.
        if !has_disrupted_taint(node) {
            return self.taint(node).await;
        }
        // 4. Drain.
        let pods: Vec<&Pod> = snapshot.pods_on_node(&name).map(AsRef::as_ref).collect();
        let plan = drain::plan(pods, now, deadline);
        for forced in &plan.force_delete {
            self.force_delete(forced, deadline).await;
        }
        self.queue.add(&name, plan.evict.iter().copied());
        if !plan.is_drained() {
            self.events.publish(
                Event::about(
                    node,
                    EventType::Warning,
                    "FailedDraining",
                    format!("Failed to drain node, {} pods are waiting to be evicted", plan.waiting),
                )
                .deduped_by_name(),
            );
            if drain_started(claim).is_none() {
                self.set_drained(claim, ConditionStatus::Unknown, DRAINING_REASON).await;
            }
            let until_forced = plan.next_force_delete.map(|at| elapsed(now, at) + Duration::from_millis(1));
            return Some(until_forced.map_or(DRAIN_REQUEUE, |d| d.min(DRAIN_REQUEUE)));
        }
        if !claim.is_condition_true(CONDITION_DRAINED) {
            let Some(started) = drain_started(claim) else {
                self.set_drained(claim, ConditionStatus::Unknown, DRAINING_REASON).await;
                return Some(MIN_DRAIN_TIME);
            };
            let drained_for = elapsed(started, now);
            if drained_for < MIN_DRAIN_TIME {
                return Some(MIN_DRAIN_TIME - drained_for);
            }
            self.set_drained(claim, ConditionStatus::True, "Drained").await;
            tracing::info!(node = %name, "drained node");
            return Some(DRAIN_REQUEUE);
        }
        // 5. Volume attachments: none are tracked (see the module doc), so they are detached.
        if !claim.is_condition_true(CONDITION_VOLUMES_DETACHED) {
            let _ = set_condition(
                &self.client,
                &self.clock,
                claim,
                CONDITION_VOLUMES_DETACHED,
                ConditionStatus::True,
                "VolumesDetached",
                "",
                json!({}),
            )
            .await;
            return Some(DRAIN_REQUEUE);
        }
        // 6. Terminate the instance and wait for NotFound.
        if let InstanceState::Terminating(after) = self.ensure_terminated(claim).await {
            return Some(after);
        }
        self.release(node).await
    }

    /// Removes the Node's finalizer.
    async fn release(&self, node: &Node) -> Option<Duration> {
        match remove_finalizer(&self.client, node).await {
            Ok(()) => {
                tracing::info!(node = %node.name_any(), "deleted node");
                None
            }
            Err(error) => {
                tracing::debug!(node = %node.name_any(), %error, "removing node finalizer (will retry)");
                Some(DRAIN_REQUEUE)
            }
        }
    }

    /// Adds the disrupted taint (replacing another taint with the same key) and the
    /// load-balancer exclusion label, guarded by the Node's resourceVersion.
    async fn taint(&self, node: &Node) -> Option<Duration> {
        let mut taints: Vec<serde_json::Value> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .filter(|t| t.key != DISRUPTED_TAINT_KEY)
            .map(|t| serde_json::to_value(t).unwrap_or_default())
            .collect();
        taints.push(json!({"key": DISRUPTED_TAINT_KEY, "effect": DISRUPTED_TAINT_EFFECT}));
        let patch = json!({
            "metadata": {
                "resourceVersion": node.resource_version(),
                "labels": {EXCLUDE_FROM_LOAD_BALANCERS_LABEL: "karpenter"},
            },
            "spec": {"taints": taints},
        });
        let api: Api<Node> = Api::all(self.client.clone());
        match api.patch(&node.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {
                tracing::info!(node = %node.name_any(), taint = DISRUPTED_TAINT_KEY, "tainted node");
                None
            }
            Err(error) => {
                tracing::debug!(node = %node.name_any(), %error, "tainting node (will retry)");
                Some(DRAIN_REQUEUE)
            }
        }
    }

    /// Deletes a pod whose node's deadline is near, bypassing PDBs and do-not-disrupt.
    async fn force_delete(&self, forced: &drain::ForceDelete<'_>, deadline: Option<jiff::Timestamp>) {
        let pod = forced.pod;
        let grace_seconds = u32::try_from(forced.grace.as_secs()).unwrap_or(u32::MAX);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default());
        let params = DeleteParams { grace_period_seconds: Some(grace_seconds), ..DeleteParams::default() };
        match api.delete(&pod.name_any(), &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return,
            Err(error) => {
                tracing::debug!(pod = %pod.name_any(), %error, "deleting pod (will retry)");
                return;
            }
        }
        let deadline = deadline.map(super::node_claim::format_deadline).unwrap_or_default();
        tracing::info!(pod = %pod.name_any(), namespace = %pod.namespace().unwrap_or_default(), grace_seconds, %deadline, "deleting pod");
        self.events.publish(Event::about(
            pod,
            EventType::Normal,
            "Disrupted",
            format!(
                "Deleting the pod to accommodate the terminationTime {deadline} of the node. The pod was granted {grace_seconds} seconds of grace-period of its {} terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.",
                drain::pod_grace(pod).as_secs()
            ),
        ).deduped_by_name());
    }

    async fn set_drained(&self, claim: &NodeClaim, status: ConditionStatus, reason: &str) {
        if let Err(error) =
            set_condition(&self.client, &self.clock, claim, CONDITION_DRAINED, status, reason, reason, json!({})).await
        {
            tracing::debug!(nodeclaim = %claim.name_any(), %error, "recording Drained (will retry)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disrupted_taint_is_recognised_only_with_its_effect() {
        let mut node: Node = serde_json::from_value(json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "karpenter.sh/disrupted", "effect": "NoExecute"}
        ]}}))
        .expect("node");
        assert!(!has_disrupted_taint(&node));
        node.spec.as_mut().unwrap().taints.as_mut().unwrap()[0].effect = "NoSchedule".into();
        assert!(has_disrupted_taint(&node));
    }
}
