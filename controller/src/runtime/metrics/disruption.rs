//! Voluntary disruption metrics (core `pkg/controllers/disruption/metrics.go`): decisions,
//! eligible nodes per reason, and how long each method's evaluation takes.

use std::time::Duration;

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Counters, Gauges, Histograms, counter, duration_histogram, gauge, histogram, secs};

/// The disruption families.
pub(super) struct DisruptionMetrics {
    decisions: Counters,
    eligible_nodes: Gauges,
    evaluation_duration: Histograms,
}

impl DisruptionMetrics {
    /// Registers the families, in this order, in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let decisions = counter(
            r,
            "karpenter_voluntary_disruption_decisions",
            "Number of disruption decisions performed. Labeled by disruption decision, reason, and consolidation type.",
        );
        let eligible_nodes = gauge(
            r,
            "karpenter_voluntary_disruption_eligible_nodes",
            "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
        );
        let evaluation_duration = histogram(
            r,
            "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
            "Duration of the disruption decision evaluation process in seconds. Labeled by method and consolidation type.",
            duration_histogram,
        );
        Self { decisions, eligible_nodes, evaluation_duration }
    }
}

impl Metrics {
    /// A disruption method decided (`decision`: `delete` or `replace`; `reason`: `empty`,
    /// `underutilized`, `drifted`; `consolidation_type`: `empty`, `single`, `multi` or `""`).
    pub fn disruption_decision(&self, decision: &str, reason: &str, consolidation_type: &str) {
        let labels = vec![
            ("decision", decision.into()),
            ("reason", reason.into()),
            ("consolidation_type", consolidation_type.into()),
        ];
        self.0.disruption.decisions.get_or_create(&labels).inc();
    }

    /// How many nodes a disruption reason could act on this round.
    pub fn disruption_eligible_nodes(&self, reason: &str, count: usize) {
        self.0.disruption.eligible_nodes.get_or_create(&vec![("reason", reason.into())]).set(count as f64);
    }

    /// One disruption method's evaluation took `took` (labelled, as in Karpenter, by the
    /// method's lower-cased `reason` and its `consolidation_type`).
    pub fn disruption_evaluation_duration(&self, reason: &str, consolidation_type: &str, took: Duration) {
        let labels = vec![("reason", reason.into()), ("consolidation_type", consolidation_type.into())];
        self.0.disruption.evaluation_duration.get_or_create(&labels).observe(secs(took));
    }
}
