//! Prometheus metrics under Karpenter's names and labels (core `pkg/metrics`, the per-controller
//! `metrics.go` files, and the aws provider's), so Karpenter's dashboards and alerts work against
//! Dovetail unchanged. Controllers hold a cloneable [`Metrics`] and call one method per event;
//! the binary serves [`Metrics::encode`] at `/metrics`. Nothing here reads a clock: callers pass
//! durations they measured with the injected clock or `tokio::time`.
//!
//! Each subsystem's file registers its metric families and adds its `Metrics` methods:
//! `nodeclaims.rs`, `pods.rs`, `scheduling.rs`, `interruption.rs`, `cloudprovider.rs`,
//! `disruption.rs`, `nodepools.rs` and `cluster_state.rs`. `family.rs` holds the family types,
//! `encoding.rs` the deterministic text output.

use std::sync::Arc;

use prometheus_client::registry::Registry;

mod cloudprovider;
mod cluster_state;
mod disruption;
mod encoding;
mod family;
mod interruption;
mod nodeclaims;
mod nodepools;
mod pods;
mod scheduling;

use cloudprovider::CloudProviderMetrics;
use cluster_state::ClusterStateMetrics;
use disruption::DisruptionMetrics;
use interruption::InterruptionMetrics;
use nodeclaims::NodeClaimMetrics;
use nodepools::NodePoolMetrics;
use pods::PodMetrics;
pub use pods::PodState;
use scheduling::SchedulingMetrics;

/// The Content-Type of [`Metrics::encode`]'s output (OpenMetrics text).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every metric family, by subsystem, and the registry they are registered in.
struct Inner {
    registry: Registry,
    nodeclaims: NodeClaimMetrics,
    pods: PodMetrics,
    scheduling: SchedulingMetrics,
    interruption: InterruptionMetrics,
    cloudprovider: CloudProviderMetrics,
    disruption: DisruptionMetrics,
    nodepools: NodePoolMetrics,
    cluster_state: ClusterStateMetrics,
}

/// The controller's metrics. Cheap to clone; every clone updates the same registry.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every metric registered and `karpenter_build_info{version}` set to 1.
    pub fn new() -> Self {
        let mut r = Registry::default();
        let build_info = family::gauge(
            &mut r,
            "karpenter_build_info",
            "A metric with a constant '1' value labeled by version from which karpenter was built.",
        );
        build_info.get_or_create(&vec![("version", env!("CARGO_PKG_VERSION").to_string())]).set(1.0);
        // Registration order is the order of `/metrics`; keep it when adding families.
        let nodeclaims = NodeClaimMetrics::register(&mut r);
        let pods = PodMetrics::register(&mut r);
        let scheduling = SchedulingMetrics::register(&mut r);
        let interruption = InterruptionMetrics::register(&mut r);
        let cloudprovider = CloudProviderMetrics::register(&mut r);
        let disruption = DisruptionMetrics::register(&mut r);
        let nodepools = NodePoolMetrics::register(&mut r);
        let cluster_state = ClusterStateMetrics::register(&mut r);
        Self(Arc::new(Inner {
            registry: r,
            nodeclaims,
            pods,
            scheduling,
            interruption,
            cloudprovider,
            disruption,
            nodepools,
            cluster_state,
        }))
    }

    /// The OpenMetrics text of every metric, for `/metrics` (see [`CONTENT_TYPE`]). Samples of
    /// each metric are sorted, so the output does not depend on hash-map order.
    pub fn encode(&self) -> String {
        let mut raw = String::new();
        prometheus_client::encoding::text::encode(&mut raw, &self.0.registry).expect("writing to a String cannot fail");
        encoding::sort_samples(&raw)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::family::DURATION_BUCKETS;
    use super::*;

    fn sample<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
        text.lines().filter(|l| l.starts_with(prefix)).collect()
    }

    #[test]
    fn counters_use_karpenters_names_and_labels() {
        let metrics = Metrics::new();
        metrics.nodeclaim_created("provisioning", "default");
        metrics.nodeclaim_created("provisioning", "default");
        metrics.interruption_received("spot_interrupted");
        metrics.cloudprovider_error("nodeclaim.lifecycle", "Create", "InsufficientInstanceCapacity");
        metrics.disruption_decision("delete", "empty", "empty");
        let text = metrics.encode();
        assert_eq!(
            sample(&text, "karpenter_nodeclaims_created_total"),
            ["karpenter_nodeclaims_created_total{reason=\"provisioning\",nodepool=\"default\"} 2"]
        );
        assert_eq!(
            sample(&text, "karpenter_interruption_received_messages_total"),
            ["karpenter_interruption_received_messages_total{message_type=\"spot_interrupted\"} 1"]
        );
        assert!(text.contains("karpenter_cloudprovider_errors_total{controller=\"nodeclaim.lifecycle\",method=\"Create\",provider=\"aws\",error=\"InsufficientInstanceCapacity\"} 1"), "{text}");
        assert!(text.contains("karpenter_voluntary_disruption_decisions_total{decision=\"delete\",reason=\"empty\",consolidation_type=\"empty\"} 1"));
        assert!(text.contains("# TYPE karpenter_nodeclaims_created counter"));
        assert!(text.contains("karpenter_build_info{version=\""));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn pod_state_replaces_the_pods_old_series() {
        let metrics = Metrics::new();
        let mut pod = PodState {
            name: "web-1".into(),
            namespace: "default".into(),
            phase: "Pending".into(),
            ..PodState::default()
        };
        metrics.pod_state(&pod);
        pod.phase = "Running".into();
        pod.node = "ip-10-0-0-1".into();
        metrics.pod_state(&pod);
        let text = metrics.encode();
        let series = sample(&text, "karpenter_pods_state{");
        assert_eq!(series.len(), 1, "{text}");
        assert!(series[0].contains("phase=\"Running\"") && series[0].contains("node=\"ip-10-0-0-1\""));
        metrics.pod_deleted("default", "web-1");
        assert!(sample(&metrics.encode(), "karpenter_pods_state{").is_empty());
    }

    #[test]
    fn encoding_is_sorted_and_keeps_histogram_buckets_in_order() {
        let a = Metrics::new();
        let b = Metrics::new();
        for pool in ["zeta", "alpha", "mid", "beta", "omega"] {
            a.nodeclaim_created("provisioning", pool);
        }
        for pool in ["omega", "beta", "mid", "alpha", "zeta"] {
            b.nodeclaim_created("provisioning", pool);
        }
        a.scheduling_duration("provisioner", Duration::from_millis(300));
        b.scheduling_duration("provisioner", Duration::from_millis(300));
        let text = a.encode();
        assert_eq!(text, b.encode(), "insertion order must not show");
        let created = sample(&text, "karpenter_nodeclaims_created_total");
        assert!(created[0].contains("alpha") && created[4].contains("zeta"), "{created:?}");
        let buckets = sample(&text, "karpenter_scheduler_scheduling_duration_seconds_bucket");
        assert_eq!(buckets.len(), DURATION_BUCKETS.len() + 1);
        assert!(buckets[0].contains("le=\"0.005\"") && buckets[0].ends_with(" 0"), "{buckets:?}");
        assert!(buckets.last().unwrap().contains("le=\"+Inf\"") && buckets.last().unwrap().ends_with(" 1"));
        let lines: Vec<&str> = text.lines().collect();
        let sum =
            lines.iter().position(|l| l.starts_with("karpenter_scheduler_scheduling_duration_seconds_sum")).unwrap();
        let count =
            lines.iter().position(|l| l.starts_with("karpenter_scheduler_scheduling_duration_seconds_count")).unwrap();
        let last_bucket = lines
            .iter()
            .rposition(|l| l.starts_with("karpenter_scheduler_scheduling_duration_seconds_bucket"))
            .unwrap();
        assert!(last_bucket < sum && sum < count);
    }

    #[test]
    fn gauges_set_and_clear() {
        let metrics = Metrics::new();
        metrics.nodepool_usage("default", "cpu", 12.0);
        metrics.nodepool_limit("default", "cpu", 1000.0);
        metrics.nodepool_allowed_disruptions("default", "Empty", 3);
        metrics.nodepool_usage("default", "nvidia.com/gpu", 2.0);
        metrics.nodepool_usage("other", "cpu", 1.0);
        metrics.cluster_state(true, 4);
        let text = metrics.encode();
        assert!(text.contains("karpenter_nodepools_usage{nodepool=\"default\",resource_type=\"cpu\"} 12.0"), "{text}");
        assert!(text.contains("karpenter_cluster_state_node_count 4.0"), "{text}");
        metrics.nodepool_deleted("default");
        let text = metrics.encode();
        assert!(!text.contains("nodepool=\"default\""), "{text}");
        assert!(text.contains("nodepool=\"other\""), "{text}");
    }
}
