//! Scheduler metrics (core `pkg/controllers/provisioning/scheduling/metrics.go`): how long each
//! scheduling simulation takes, for provisioning and for disruption.

use std::time::Duration;

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Histograms, duration_histogram, histogram, secs};

/// The scheduling histogram family.
pub(super) struct SchedulingMetrics {
    duration: Histograms,
}

impl SchedulingMetrics {
    /// Registers the family in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let duration = histogram(
            r,
            "karpenter_scheduler_scheduling_duration_seconds",
            "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
            duration_histogram,
        );
        Self { duration }
    }
}

impl Metrics {
    /// One scheduling simulation took `took` (`controller`: `provisioner` or `disruption`).
    pub fn scheduling_duration(&self, controller: &str, took: Duration) {
        self.0.scheduling.duration.get_or_create(&vec![("controller", controller.into())]).observe(secs(took));
    }
}
