//! Interruption queue metrics (aws `pkg/controllers/interruption/metrics.go`): SQS messages
//! received by type, deleted, and how long they waited on the queue.

use std::time::Duration;

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Counters, Histograms, counter, duration_histogram, histogram, secs};

/// The interruption families.
pub(super) struct InterruptionMetrics {
    received: Counters,
    deleted: Counters,
    queue_duration: Histograms,
    instance_status_unhealthy: Counters,
}

impl InterruptionMetrics {
    /// Registers the families, in this order, in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let received = counter(
            r,
            "karpenter_interruption_received_messages",
            "Count of messages received from the SQS queue. Broken down by message type.",
        );
        let deleted =
            counter(r, "karpenter_interruption_deleted_messages", "Count of messages deleted from the SQS queue.");
        let queue_duration = histogram(
            r,
            "karpenter_interruption_message_queue_duration_seconds",
            "Amount of time an interruption message is on the queue before it is processed by karpenter.",
            duration_histogram,
        );
        let instance_status_unhealthy = counter(
            r,
            "karpenter_interruption_instance_status_unhealthy",
            "Count of unique unhealthy instance statuses detected from EC2 DescribeInstanceStatus. Broken down by status check category.",
        );
        Self { received, deleted, queue_duration, instance_status_unhealthy }
    }
}

impl Metrics {
    /// An SQS interruption message was received (`message_type`: `spot_interrupted`,
    /// `rebalance_recommendation`, `scheduled_change`, `state_change`, `noop`, ...).
    pub fn interruption_received(&self, message_type: &str) {
        self.0.interruption.received.get_or_create(&vec![("message_type", message_type.into())]).inc();
    }

    /// An SQS interruption message was deleted.
    pub fn interruption_deleted(&self) {
        self.0.interruption.deleted.get_or_create(&vec![]).inc();
    }

    /// A message was handled having waited `on_queue` since its event time.
    pub fn interruption_queue_duration(&self, on_queue: Duration) {
        self.0.interruption.queue_duration.get_or_create(&vec![]).observe(secs(on_queue));
    }

    /// An (instance, status check category) newly seen unhealthy by the instance status
    /// controller (`category`: `InstanceStatus`, `SystemStatus`, `EventStatus`).
    pub fn instance_status_unhealthy(&self, category: &str) {
        self.0.interruption.instance_status_unhealthy.get_or_create(&vec![("category", category.into())]).inc();
    }
}
