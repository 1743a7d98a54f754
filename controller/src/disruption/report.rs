//! What a disruption loop observed besides its command: per-node notes that become Kubernetes
//! events (`DisruptionBlocked`, `Unconsolidatable`) and eligible-node counts for the metrics.
//! Decision code fills a [`Report`]; the controller publishes it, so decisions stay pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;

use super::budgets::blocked_pools;
use super::candidates::{Blocked, Candidate};
use super::input::DisruptionInput;
use crate::apis::NodeClaim;
use crate::apis::nodepool::{DisruptionReason, NodePool};

/// The event reason for a candidate a consolidation simulation rejected.
pub const UNCONSOLIDATABLE: &str = "Unconsolidatable";
/// The event reason for a node that may not be disrupted now.
pub const DISRUPTION_BLOCKED: &str = "DisruptionBlocked";

/// One note about one node.
#[derive(Clone, Debug)]
pub struct Note {
    /// The claim.
    pub claim: Arc<NodeClaim>,
    /// Its Node.
    pub node: Arc<Node>,
    /// [`UNCONSOLIDATABLE`] or [`DISRUPTION_BLOCKED`].
    pub reason: &'static str,
    /// Why.
    pub message: String,
}

/// Notes and counts from one loop.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Per-node notes, in the order they were made.
    pub notes: Vec<Note>,
    /// Reason (`empty`, `drifted`, `underutilized`) → nodes that method could act on.
    pub eligible: BTreeMap<&'static str, usize>,
    /// NodePools whose budget allows no disruption for a reason although they have nodes.
    pub blocked_pools: Vec<(Arc<NodePool>, DisruptionReason)>,
}

impl Report {
    /// Notes that `candidate` could not be consolidated.
    pub fn unconsolidatable(&mut self, candidate: &Candidate, message: impl Into<String>) {
        self.notes.push(Note {
            claim: candidate.claim.clone(),
            node: candidate.node.clone(),
            reason: UNCONSOLIDATABLE,
            message: message.into(),
        });
    }

    /// Notes that `candidate` is blocked.
    pub fn blocked(&mut self, candidate: &Candidate, message: impl Into<String>) {
        self.notes.push(Note {
            claim: candidate.claim.clone(),
            node: candidate.node.clone(),
            reason: DISRUPTION_BLOCKED,
            message: message.into(),
        });
    }

    /// Notes every NodePool with nodes whose budget allows no disruption for `reason` now.
    pub fn budget_blocked(&mut self, input: &DisruptionInput, reason: DisruptionReason) {
        self.blocked_pools.extend(blocked_pools(input, reason).into_iter().map(|pool| (pool, reason)));
    }

    /// Notes every node that failed the candidate filters.
    pub fn blocked_nodes(&mut self, blocked: &[Blocked]) {
        for b in blocked {
            self.notes.push(Note {
                claim: b.claim.clone(),
                node: b.node.clone(),
                reason: DISRUPTION_BLOCKED,
                message: b.reason.to_string(),
            });
        }
    }
}
