//! What NodeRepair decides about one Node, as pure functions of the Node, its NodeClaim, the
//! other Nodes, the cloud provider's [`RepairPolicy`]s and the time. The reconciler
//! (`super::NodeHealth`) only acts on these answers. Each function cites the lines of
//! kubernetes-sigs/karpenter `pkg/controllers/node/health/controller.go` it follows.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeCondition};

use crate::apis::NodeClaim;
use crate::apis::labels::NODE_POOL_LABEL;
use crate::cloudprovider::RepairPolicy;
use crate::runtime::clock::{add, elapsed};
use crate::termination::node_claim::{format_deadline, recorded_deadline};

/// Share of a NodePool's (or, for a claim without a pool, the cluster's) Nodes that may be
/// unhealthy before repair stops (core `allowedUnhealthyPercent = intstr.FromString("20%")`,
/// l. 54), as a percentage.
pub const ALLOWED_UNHEALTHY_PERCENT: usize = 20;

/// How long a blocked repair waits before it looks again (l. 146 and l. 155:
/// `RequeueAfter: 5 * time.Minute`).
pub const BLOCKED_REQUEUE: Duration = Duration::from_secs(5 * 60);

/// The unhealthy condition a Node is judged by and when its toleration ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unhealthy {
    /// The condition's type (`Ready`).
    pub condition_type: String,
    /// The policy's toleration.
    pub toleration: Duration,
    /// `lastTransitionTime + toleration`; `None` when the condition has no transition time
    /// (Go's zero time: long past, so the node is due at once).
    pub due: Option<jiff::Timestamp>,
}

/// What to do about one Node now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No policy's condition holds (l. 121–124).
    Healthy,
    /// Unhealthy but still within its toleration: look again after this long (l. 126–131).
    Tolerated(Duration),
    /// Past its toleration, but more than [`ALLOWED_UNHEALTHY_PERCENT`] of the claim's NodePool
    /// is unhealthy (l. 136–147): nothing is repaired, look again in [`BLOCKED_REQUEUE`].
    BlockedNodePool(String),
    /// The same for a claim without a NodePool, judged over every Node of the cluster
    /// (l. 148–156).
    BlockedCluster,
    /// Replace it: annotate the claim's termination timestamp and delete it (l. 158–162).
    Repair(Unhealthy),
}

fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// The policy condition closest to the end of its toleration (core `findUnhealthyConditions`,
/// l. 199–217): among policies whose condition type has the policy's status on the Node, the
/// one with the earliest `lastTransitionTime + toleration`; on a tie the first in policy order.
pub fn find_unhealthy_condition(node: &Node, policies: &[RepairPolicy]) -> Option<Unhealthy> {
    let mut best: Option<Unhealthy> = None;
    for policy in policies {
        let Some(c) = condition(node, &policy.condition_type) else { continue };
        if c.status != policy.condition_status {
            continue;
        }
        let due = c.last_transition_time.as_ref().map(|t| add(t.0, policy.toleration));
        let sooner = match &best {
            None => true,
            // `requeueTime.After(terminationTime)`: strictly later only; Go's zero time first.
            Some(b) => match (b.due, due) {
                (Some(b), Some(d)) => b > d,
                (Some(_), None) => true,
                (None, _) => false,
            },
        };
        if sooner {
            best =
                Some(Unhealthy { condition_type: policy.condition_type.clone(), toleration: policy.toleration, due });
        }
    }
    best
}

/// Whether any policy's condition holds on the Node, however recently (core `areNodesHealthy`'s
/// count, l. 257–263: no toleration applies to the count).
pub fn is_unhealthy(node: &Node, policies: &[RepairPolicy]) -> bool {
    policies.iter().any(|p| condition(node, &p.condition_type).is_some_and(|c| c.status == p.condition_status))
}

/// How many of `total` Nodes may be unhealthy: 20% rounded up (core
/// `intstr.GetScaledValueFromIntOrPercent(20%, total, true)`, l. 264), so one of three may be.
pub fn allowed_unhealthy(total: usize) -> usize {
    (total * ALLOWED_UNHEALTHY_PERCENT).div_ceil(100)
}

/// Whether the group of Nodes is healthy enough to repair in: unhealthy ≤ allowed (l. 265).
pub fn nodes_healthy<'a>(nodes: impl IntoIterator<Item = &'a Node>, policies: &[RepairPolicy]) -> bool {
    let (mut total, mut unhealthy) = (0usize, 0usize);
    for node in nodes {
        total += 1;
        unhealthy += usize::from(is_unhealthy(node, policies));
    }
    unhealthy <= allowed_unhealthy(total)
}

fn node_pool_of(node: &Node) -> Option<&str> {
    node.metadata.labels.as_ref()?.get(NODE_POOL_LABEL).map(String::as_str)
}

/// The verdict on `node` (whose NodeClaim is `claim`) at `now`, with `cluster` every Node of
/// the cluster (core `Reconcile`, l. 111–163). The NodePool count lists Nodes by their
/// `karpenter.sh/nodepool` label (l. 244–246), deleting ones included, as upstream's List does.
///
/// Which Nodes are judged at all: upstream's watch predicate takes Nodes carrying its node
/// class label (`nodeutils.IsManaged`, `pkg/utils/node/node.go` l. 218–223) and then needs
/// their NodeClaim (l. 115–118). The caller judges every Node that has a NodeClaim: ours all
/// carry `karpenter.k8s.aws/ec2nodeclass` (core `nodeclaimtemplate.go` l. 81), so on a
/// cluster with only EC2NodeClasses it is the same set.
pub fn verdict<'a>(
    node: &Node,
    claim: &NodeClaim,
    cluster: impl IntoIterator<Item = &'a Node> + Clone,
    policies: &[RepairPolicy],
    now: jiff::Timestamp,
) -> Verdict {
    let Some(unhealthy) = find_unhealthy_condition(node, policies) else { return Verdict::Healthy };
    if let Some(due) = unhealthy.due
        && now < due
    {
        return Verdict::Tolerated(elapsed(now, due));
    }
    match claim.node_pool_name() {
        Some(pool) => {
            let members = cluster.into_iter().filter(|n| node_pool_of(n) == Some(pool));
            if !nodes_healthy(members, policies) {
                return Verdict::BlockedNodePool(pool.to_owned());
            }
        }
        None => {
            if !nodes_healthy(cluster, policies) {
                return Verdict::BlockedCluster;
            }
        }
    }
    Verdict::Repair(unhealthy)
}

/// The `karpenter.sh/nodeclaim-termination-timestamp` to write before the delete, or `None`
/// to leave the claim as it is (core `annotateTerminationGracePeriod`, l. 219–237): a stamp
/// already in the past stays; anything else (absent, unparseable, now or later, e.g. from the
/// NodePool's terminationGracePeriod) becomes `now`, so the drain that follows does not wait
/// for PodDisruptionBudgets.
pub fn termination_stamp(claim: &NodeClaim, now: jiff::Timestamp) -> Option<String> {
    if recorded_deadline(claim).is_some_and(|at| at < now) {
        return None;
    }
    let stamp = format_deadline(now);
    let current = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(crate::apis::labels::NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION));
    // `equality.Semantic.DeepEqual(stored, nodeClaim)`: no patch when nothing changes.
    (current != Some(&stamp)).then_some(stamp)
}
