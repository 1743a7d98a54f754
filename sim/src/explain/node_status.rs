//! Why a node is still there: the typed status `explain` gives each NodeClaim, from what
//! Karpenter published (its Events and the claim's conditions) and, where Karpenter publishes
//! nothing by design (do-not-disrupt, core `disruption/events/events.go` `Blocked`: "an
//! intentional user action"), from the objects themselves.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::events::EventIndex;
use super::karpenter_message::KarpenterReason;
use crate::oracle::protection::do_not_disrupt_active;
use crate::oracle::timestamp::sim_time;
use crate::oracle::view::{PodView, condition, condition_true};

/// How long a `DisruptionBlocked` event about a node is taken as current: Karpenter
/// re-publishes it every disruption poll and dedupes it for 2 minutes; 30 s of slack.
pub const BLOCKED_CURRENT_FOR: Duration = Duration::from_secs(150);
/// The same for a NodePool's budget block (deduped for 1 minute).
pub const BUDGET_BLOCKED_CURRENT_FOR: Duration = Duration::from_secs(90);

/// Why one NodeClaim is not being disrupted (or that it is). Serialised with its variant
/// as `kind`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum NodeStatus {
    /// Being deleted: Karpenter's disruption reason (or `deleted` without one) and since when.
    Disrupting {
        /// `Underutilized`, `Empty`, `Drifted`, `Expired`, an interruption, or `deleted`.
        reason: String,
        /// The claim's deletionTimestamp.
        #[serde(serialize_with = "super::as_sim_duration")]
        since: Duration,
    },
    /// Launched but not initialized yet: never a disruption candidate.
    Initializing,
    /// The Node or NodeClaim carries `karpenter.sh/do-not-disrupt: "true"`.
    DoNotDisruptNode,
    /// A running pod on it carries `karpenter.sh/do-not-disrupt: "true"`.
    DoNotDisruptPod {
        /// `namespace/name`.
        pod: String,
    },
    /// Karpenter published a reason (a `DisruptionBlocked` event within the last
    /// [`BLOCKED_CURRENT_FOR`], a budget block on its NodePool, or `Unconsolidatable`).
    Karpenter {
        /// The reason, typed.
        reason: KarpenterReason,
        /// When it was last published.
        #[serde(serialize_with = "super::as_sim_duration")]
        at: Duration,
    },
    /// Its NodePool has `consolidateAfter: Never`: Karpenter never marks it Consolidatable
    /// (core `nodeclaim/disruption/consolidation.go`), so only drift, expiry and interruption
    /// can remove it.
    ConsolidationDisabled,
    /// The `Consolidatable` condition is not True: `consolidateAfter` has not elapsed since
    /// the last pod change on the node.
    ConsolidateAfterPending,
    /// No reason published: a candidate Karpenter has not acted on (yet).
    NoReasonPublished,
}

impl fmt::Display for NodeStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Disrupting { reason, since } => {
                write!(f, "being disrupted: {reason} (deleting since {})", dovetail_world::SimDuration(*since))
            }
            Self::Initializing => write!(f, "initializing: not a disruption candidate yet"),
            Self::DoNotDisruptNode => write!(f, "karpenter.sh/do-not-disrupt on the node"),
            Self::DoNotDisruptPod { pod } => write!(f, "pod {pod} has karpenter.sh/do-not-disrupt"),
            Self::Karpenter { reason, at } => write!(f, "{reason} (Karpenter, {})", dovetail_world::SimDuration(*at)),
            Self::ConsolidationDisabled => write!(f, "its NodePool has consolidateAfter: Never"),
            Self::ConsolidateAfterPending => write!(f, "consolidateAfter has not elapsed since its last pod change"),
            Self::NoReasonPublished => write!(f, "no reason published: a candidate Karpenter has not acted on"),
        }
    }
}

/// What `status_of` needs about a claim's surroundings.
pub struct NodeContext<'a> {
    /// The NodeClaim.
    pub claim: &'a Value,
    /// Its Node, if registered.
    pub node: Option<&'a Value>,
    /// Its NodePool, if it exists.
    pub pool: Option<&'a Value>,
    /// The active pods bound to its Node.
    pub pods: Vec<&'a PodView>,
    /// Every Event.
    pub events: &'a EventIndex,
    /// Simulated now.
    pub now: Duration,
}

/// The status of one claim, most decisive reason first.
pub fn status_of(cx: &NodeContext<'_>) -> NodeStatus {
    let claim_name = cx.claim["metadata"]["name"].as_str().unwrap_or_default();
    if let Some(since) = sim_time(&cx.claim["metadata"]["deletionTimestamp"]) {
        let reason = condition(cx.claim, "DisruptionReason")
            .filter(|c| c["status"] == "True")
            .and_then(|c| c["reason"].as_str())
            .map(String::from)
            .or_else(|| terminating_reason(cx.events, claim_name))
            .unwrap_or_else(|| "deleted".into());
        return NodeStatus::Disrupting { reason, since };
    }
    if !condition_true(cx.claim, "Initialized") {
        return NodeStatus::Initializing;
    }
    let annotated = |o: &Value| o["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true";
    if annotated(cx.claim) || cx.node.is_some_and(annotated) {
        return NodeStatus::DoNotDisruptNode;
    }
    if let Some(pod) = cx.pods.iter().find(|p| do_not_disrupt_active(&p.object, cx.now)) {
        return NodeStatus::DoNotDisruptPod { pod: pod.key.clone() };
    }
    let node_name = cx.node.and_then(|n| n["metadata"]["name"].as_str());
    let published = |reasons: &[&str], within: Duration| {
        let on_claim = cx.events.latest("NodeClaim", claim_name, reasons, cx.now, within);
        let on_node = node_name.and_then(|n| cx.events.latest("Node", n, reasons, cx.now, within));
        [on_claim, on_node].into_iter().flatten().max_by_key(|e| e.last).cloned()
    };
    if let Some(e) = published(&["DisruptionBlocked"], BLOCKED_CURRENT_FOR) {
        return NodeStatus::Karpenter { reason: KarpenterReason::parse(&e.message), at: e.last };
    }
    if let Some(block) = budget_block(cx) {
        return block;
    }
    if cx.pool.is_some_and(|p| p["spec"]["disruption"]["consolidateAfter"] == "Never") {
        return NodeStatus::ConsolidationDisabled;
    }
    if !condition_true(cx.claim, "Consolidatable") {
        return NodeStatus::ConsolidateAfterPending;
    }
    if let Some(e) = published(&["Unconsolidatable"], Duration::MAX) {
        return NodeStatus::Karpenter { reason: KarpenterReason::parse(&e.message), at: e.last };
    }
    NodeStatus::NoReasonPublished
}

/// A current budget block on the claim's NodePool for a reason that would apply to it:
/// `Drifted` if it drifted, `Empty` if it has no pods, `Underutilized` otherwise.
fn budget_block(cx: &NodeContext<'_>) -> Option<NodeStatus> {
    let pool = cx.pool?;
    let pool_name = pool["metadata"]["name"].as_str()?;
    let mut reasons = Vec::new();
    if condition_true(cx.claim, "Drifted") {
        reasons.push("Drifted");
    }
    reasons.push(if cx.pods.iter().all(|p| p.daemonset) { "Empty" } else { "Underutilized" });
    cx.events
        .about("NodePool", pool_name)
        .iter()
        .rev()
        .filter(|e| e.reason == "DisruptionBlocked" && e.last <= cx.now)
        .filter(|e| cx.now.saturating_sub(e.last) <= BUDGET_BLOCKED_CURRENT_FOR)
        .map(|e| (KarpenterReason::parse(&e.message), e.last))
        .find(|(r, _)| matches!(r, KarpenterReason::BudgetBlocked { reason } if reasons.contains(&reason.as_str())))
        .map(|(reason, at)| NodeStatus::Karpenter { reason, at })
}

/// The reason in the claim's latest `DisruptionTerminating` event ("Disrupting NodeClaim:
/// Underutilized/delete" → `Underutilized/delete`).
fn terminating_reason(events: &EventIndex, claim: &str) -> Option<String> {
    let e = events.about("NodeClaim", claim).iter().rev().find(|e| e.reason == "DisruptionTerminating")?;
    Some(e.message.split_once(": ").map_or(e.message.as_str(), |(_, r)| r).to_string())
}
