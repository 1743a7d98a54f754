//! The cloud's own record of what it published to the interruption queue: which instance
//! each EventBridge event named, when it was sent and when it became receivable (or that a
//! queue fault lost it). Oracles judge interruption handling against this record, not
//! against what the controller says it received.

use std::time::Duration;

/// The kind of an event published to the interruption queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PublishedKind {
    /// `EC2 Spot Instance Interruption Warning`.
    SpotInterruption,
    /// `EC2 Instance Rebalance Recommendation`.
    Rebalance,
    /// `EC2 Instance State-change Notification`, with the new state's name.
    StateChange(&'static str),
    /// `AWS Health Event`, scheduled maintenance.
    ScheduledChange,
}

/// One event the cloud sent to the interruption queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Published {
    /// What kind of event.
    pub kind: PublishedKind,
    /// The instance it names.
    pub instance_id: String,
    /// When the cloud sent it.
    pub sent_at: Duration,
    /// When its first copy became receivable (delivery delay included); `None` when the
    /// queue's loss fault dropped it.
    pub receivable_at: Option<Duration>,
}
