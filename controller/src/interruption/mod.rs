//! Interruption handling (karpenter-behaviour.md §4, aws `pkg/controllers/interruption`): EC2 and
//! AWS Health events reach an SQS queue through EventBridge rules; the [`controller`] long-polls
//! it, [`messages`] parses each body, and the NodeClaims of the instances named are acted on.
//!
//! | Kind | Action |
//! |---|---|
//! | spot interruption warning | CordonAndDrain, and the (spot, type, zone) offering is ICE-cached for 3 min |
//! | rebalance recommendation | event only |
//! | AWS Health EC2 scheduled change | CordonAndDrain |
//! | state change to stopping/stopped/shutting-down/terminated | CordonAndDrain |
//! | capacity reservation interruption | CordonAndDrain |
//!
//! The [`instance_status`] controller polls EC2 `DescribeInstanceStatus` once a minute, queue or
//! no queue: failed instance/system status checks are a ForcefulTermination, scheduled events
//! CordonAndDrain.
//!
//! CordonAndDrain is deleting the NodeClaim: termination then taints, drains and terminates it.
//! Every message is deleted once handled, and unparseable ones are deleted and counted, never
//! retried. Counters live in [`InterruptionStats`] until they are wired to Prometheus.

pub mod controller;
pub mod instance_status;
pub mod messages;

use std::collections::BTreeMap;
use std::sync::Mutex;

pub use controller::Interruption;
pub use messages::{Kind, Message};

/// What the controller does about a message (aws `actionForMessage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Delete the NodeClaim (graceful termination, no disruption budget).
    CordonAndDrain,
    /// Publish events only.
    NoAction,
}

impl Action {
    /// The action for a kind of message.
    pub fn for_kind(kind: Kind) -> Self {
        match kind {
            Kind::SpotInterrupted
            | Kind::ScheduledChange
            | Kind::InstanceStopped
            | Kind::InstanceTerminated
            | Kind::CapacityReservationInterrupted => Self::CordonAndDrain,
            Kind::RebalanceRecommendation | Kind::NoOp => Self::NoAction,
        }
    }

    /// The metric label value (`action_type`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CordonAndDrain => "CordonAndDrain",
            Self::NoAction => "NoAction",
        }
    }
}

/// The interruption counters, as Karpenter's metrics count them:
/// `karpenter_interruption_received_messages_total{message_type}`,
/// `karpenter_interruption_deleted_messages_total`, `karpenter_interruption_actions_performed_total{action_type}`,
/// plus the unparseable messages Karpenter only logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterruptionCounts {
    /// Parsed messages by kind.
    pub received: BTreeMap<Kind, u64>,
    /// Messages deleted from the queue (handled or unparseable).
    pub deleted: u64,
    /// Messages that failed to parse (also deleted).
    pub unparseable: u64,
    /// Actions taken on NodeClaims, by action.
    pub actions: BTreeMap<Action, u64>,
    /// NodeClaims deleted because of a message.
    pub node_claims_deleted: u64,
    /// Event-time → handled latency of each message handled since the metrics sync last
    /// drained them ([`InterruptionStats::take_latencies`], every 10 s, so this stays small
    /// in a long-running controller); `karpenter_interruption_message_queue_duration_seconds`
    /// observes each one.
    pub latencies: Vec<std::time::Duration>,
}

impl InterruptionCounts {
    /// Received messages of one kind.
    pub fn received_of(&self, kind: Kind) -> u64 {
        self.received.get(&kind).copied().unwrap_or(0)
    }
}

/// Shared, thread-safe counters; [`InterruptionStats::counts`] reads a copy.
#[derive(Debug, Default)]
pub struct InterruptionStats(Mutex<InterruptionCounts>);

impl InterruptionStats {
    /// A copy of the current counts.
    pub fn counts(&self) -> InterruptionCounts {
        self.0.lock().expect("interruption stats").clone()
    }

    /// The latencies recorded since the last call, in handling order (drained).
    pub fn take_latencies(&self) -> Vec<std::time::Duration> {
        std::mem::take(&mut self.0.lock().expect("interruption stats").latencies)
    }

    fn update(&self, f: impl FnOnce(&mut InterruptionCounts)) {
        f(&mut self.0.lock().expect("interruption stats"));
    }

    pub(crate) fn received(&self, kind: Kind) {
        self.update(|c| *c.received.entry(kind).or_default() += 1);
    }

    pub(crate) fn deleted(&self) {
        self.update(|c| c.deleted += 1);
    }

    pub(crate) fn unparseable(&self) {
        self.update(|c| c.unparseable += 1);
    }

    pub(crate) fn action(&self, action: Action) {
        self.update(|c| *c.actions.entry(action).or_default() += 1);
    }

    pub(crate) fn latency(&self, latency: std::time::Duration) {
        self.update(|c| c.latencies.push(latency));
    }

    pub(crate) fn node_claim_deleted(&self) {
        self.update(|c| c.node_claims_deleted += 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rebalance_and_no_op_messages_leave_nodes_alone() {
        assert_eq!(Action::for_kind(Kind::SpotInterrupted), Action::CordonAndDrain);
        assert_eq!(Action::for_kind(Kind::ScheduledChange), Action::CordonAndDrain);
        assert_eq!(Action::for_kind(Kind::InstanceStopped), Action::CordonAndDrain);
        assert_eq!(Action::for_kind(Kind::InstanceTerminated), Action::CordonAndDrain);
        assert_eq!(Action::for_kind(Kind::CapacityReservationInterrupted), Action::CordonAndDrain);
        assert_eq!(Action::for_kind(Kind::RebalanceRecommendation), Action::NoAction);
        assert_eq!(Action::for_kind(Kind::NoOp), Action::NoAction);
    }

    #[test]
    fn stats_count_by_kind() {
        let stats = InterruptionStats::default();
        stats.received(Kind::SpotInterrupted);
        stats.received(Kind::SpotInterrupted);
        stats.unparseable();
        stats.deleted();
        let counts = stats.counts();
        assert_eq!(counts.received_of(Kind::SpotInterrupted), 2);
        assert_eq!(counts.received_of(Kind::NoOp), 0);
        assert_eq!((counts.unparseable, counts.deleted), (1, 1));
    }
}
