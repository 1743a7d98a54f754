//! NodeRepair (core `pkg/controllers/node/health`, kubernetes-sigs/karpenter main after
//! v1.14.1): a Node whose condition matches one of the cloud provider's
//! [`RepairPolicy`](crate::cloudprovider::RepairPolicy)s for longer than the policy's toleration
//! gets its NodeClaim deleted forcefully: the claim's `karpenter.sh/nodeclaim-termination-timestamp`
//! is set to now first, so the drain that follows ignores PodDisruptionBudgets, and neither
//! disruption budgets nor `karpenter.sh/do-not-disrupt` stop it. Unless more than 20% (rounded
//! up) of the claim's NodePool is unhealthy (of the cluster, for a claim without a NodePool):
//! then nothing is repaired and a `NodeRepairBlocked` warning is published on the Node. A
//! broken pool is more likely a bad AMI or a network problem than bad hardware, and replacing
//! every node at once would only make it worse.
//!
//! The controller runs only with the `NodeRepair` feature gate on (default off, as upstream)
//! and a cloud provider with repair policies (core `pkg/controllers/controllers.go` l. 178).
//! The decisions are in [`decision`]; this file acts on them.

pub mod decision;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::apis::NodeClaim;
use crate::apis::labels::{NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION, NODE_POOL_LABEL};
use crate::cloudprovider::RepairPolicy;
use crate::runtime::clock::{add, elapsed};
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::runtime::{Event, EventType};
use crate::state::Snapshot;
use decision::{BLOCKED_REQUEUE, Verdict, termination_stamp, verdict};

/// The `reason` label of the disrupted counter for repairs (core `metrics.UnhealthyReason`,
/// `pkg/metrics/constants.go` l. 41).
pub const UNHEALTHY_REASON: &str = "unhealthy";
/// The warning published when the guard holds (core `events.NodeRepairBlocked`).
pub const NODE_REPAIR_BLOCKED: &str = "NodeRepairBlocked";
/// How long a `NodeRepairBlocked` event suppresses its repeats (core `events.go`:
/// `DedupeTimeout: time.Minute * 15`).
pub const BLOCKED_DEDUPE: Duration = Duration::from_secs(15 * 60);
/// The longest the loop sleeps with nothing unhealthy (a safety net: condition changes wake it).
pub const IDLE: Duration = Duration::from_secs(3600);
/// A failed write is tried again after this long.
pub const RETRY: Duration = Duration::from_secs(1);

/// The NodeRepair controller, a [`Reconciler`].
#[derive(Debug)]
pub struct NodeHealth {
    policies: Vec<RepairPolicy>,
    /// UIDs of claims this controller deleted, so a pass that runs before the watch shows the
    /// deletionTimestamp does not delete (and count) the same claim twice.
    repaired: BTreeSet<String>,
    /// Nodes whose repair the guard blocked, by name: their conditions then and when to look
    /// at them again. Core requeues a blocked Node after 5 minutes (l. 146, 155) and its watch
    /// predicate (l. 82–101) wakes it earlier only when its own conditions change, not when
    /// another Node recovers; judging it on every pass would repair the last sick Node of a
    /// pool the moment the others recover one by one.
    blocked: BTreeMap<String, (String, jiff::Timestamp)>,
}

/// What core's update predicate compares (l. 85–100): each condition's type, status and
/// lastTransitionTime.
fn conditions_print(node: &Node) -> String {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions
        .into_iter()
        .flatten()
        .map(|c| format!("{}={}@{:?};", c.type_, c.status, c.last_transition_time.as_ref().map(|t| t.0)))
        .collect()
}

impl NodeHealth {
    /// A controller judging Nodes by `policies` (the cloud provider's).
    pub fn new(policies: Vec<RepairPolicy>) -> Self {
        Self { policies, repaired: BTreeSet::new(), blocked: BTreeMap::new() }
    }

    /// Judges every Node once and acts; returns how long until a toleration ends (or a blocked
    /// repair is looked at again).
    pub async fn pass(&mut self, snapshot: &Snapshot, env: &Env) -> Duration {
        if !snapshot.is_synced() {
            return RETRY;
        }
        let live = snapshot.live_claim_uids();
        self.repaired.retain(|uid| live.contains(uid));
        let now = env.clock.now();
        let cluster: Vec<&Node> = snapshot.nodes.values().map(AsRef::as_ref).collect();
        self.blocked.retain(|name, _| snapshot.nodes.contains_key(name));
        let mut next = IDLE;
        for node in snapshot.nodes.values() {
            // No claim (or not launched by us): core ignores NodeClaimNotFound (l. 115–118).
            let Some(claim) = snapshot.node_claim_for_node(node) else { continue };
            let name = node.name_any();
            let print = conditions_print(node);
            if let Some((seen, until)) = self.blocked.get(&name)
                && *seen == print
                && now < *until
            {
                next = next.min(elapsed(now, *until));
                continue;
            }
            self.blocked.remove(&name);
            let verdict = verdict(node, claim, cluster.iter().copied(), &self.policies, now);
            if matches!(verdict, Verdict::BlockedNodePool(_) | Verdict::BlockedCluster) {
                self.blocked.insert(name, (print, add(now, BLOCKED_REQUEUE)));
            }
            match verdict {
                Verdict::Healthy => {}
                Verdict::Tolerated(after) => next = next.min(after),
                Verdict::BlockedNodePool(pool) => {
                    let pool_uid = snapshot.node_pools.get(&pool).and_then(|p| p.metadata.uid.clone());
                    // core publishNodePoolHealthEvent: nothing when the NodePool is gone.
                    if let Some(pool_uid) = pool_uid {
                        let message = format!(
                            "more than {}% nodes are unhealthy in the nodepool",
                            decision::ALLOWED_UNHEALTHY_PERCENT
                        );
                        publish_blocked(env, node, claim, Some(pool_uid), &message);
                    }
                    next = next.min(BLOCKED_REQUEUE);
                }
                Verdict::BlockedCluster => {
                    // Upstream's message, typo included (l. 154).
                    let message = format!(
                        "more then {}% nodes are unhealthy in the cluster",
                        decision::ALLOWED_UNHEALTHY_PERCENT
                    );
                    publish_blocked(env, node, claim, None, &message);
                    next = next.min(BLOCKED_REQUEUE);
                }
                Verdict::Repair(unhealthy) => {
                    if !self.repair(env, node, claim, &unhealthy.condition_type, now).await {
                        next = next.min(RETRY);
                    }
                }
            }
        }
        next
    }

    /// Stamps the claim's termination timestamp, then deletes it (core l. 158–197); returns
    /// false when a write failed and should be retried (NotFound counts as done).
    async fn repair(
        &mut self,
        env: &Env,
        node: &Node,
        claim: &NodeClaim,
        condition: &str,
        now: jiff::Timestamp,
    ) -> bool {
        let name = claim.name_any();
        let api: Api<NodeClaim> = Api::all(env.kube.clone());
        if let Some(stamp) = termination_stamp(claim, now) {
            let patch = json!({"metadata": {"annotations": {NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION: stamp}}});
            match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => tracing::info!(nodeclaim = %name, termination_timestamp = %stamp, "annotated nodeclaim"),
                Err(kube::Error::Api(status)) if status.code == 404 => return true,
                Err(error) => {
                    tracing::debug!(nodeclaim = %name, %error, "annotating unhealthy nodeclaim (will retry)");
                    return false;
                }
            }
        }
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        if claim.metadata.deletion_timestamp.is_some() || self.repaired.contains(&uid) {
            return true;
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return true,
            Err(error) => {
                tracing::debug!(nodeclaim = %name, %error, "deleting unhealthy nodeclaim (will retry)");
                return false;
            }
        }
        self.repaired.insert(uid);
        let pool = node.labels().get(NODE_POOL_LABEL).cloned().unwrap_or_default();
        tracing::info!(nodeclaim = %name, node = %node.name_any(), nodepool = %pool, condition, "deleting unhealthy node");
        env.metrics.nodeclaim_disrupted(UNHEALTHY_REASON, &pool);
        true
    }
}

/// Core's `NodeRepairBlocked` / `NodeRepairBlockedUnmanagedNodeClaim` (`events.go`): one
/// warning about the Node, deduped for 15 minutes by the Node's, the claim's and (with one)
/// the NodePool's UID in turn.
fn publish_blocked(env: &Env, node: &Node, claim: &NodeClaim, pool_uid: Option<String>, message: &str) {
    let keys = [node.metadata.uid.clone(), claim.metadata.uid.clone(), pool_uid];
    for key in keys.into_iter().flatten() {
        let mut event =
            Event::about(node, EventType::Warning, NODE_REPAIR_BLOCKED, message).deduped_for(BLOCKED_DEDUPE);
        event.dedupe_values = vec![key];
        env.events.publish(event);
    }
}

impl Reconciler for NodeHealth {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "node.health"
    }

    fn watches(&self) -> Kinds {
        // Node conditions, and the claims the Nodes belong to (a claim's NodePool label).
        Kinds::of(&[Kind::Node, Kind::NodeClaim])
    }

    /// A pass on every Node or claim change, and when the next toleration ends.
    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        Ok(Action::requeue(self.pass(snapshot, env).await))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}
