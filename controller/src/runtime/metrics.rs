//! Prometheus metrics under Karpenter's names and labels (core `pkg/metrics`, the per-controller
//! `metrics.go` files, and the aws provider's), so Karpenter's dashboards and alerts work against
//! Dovetail unchanged. Controllers hold a cloneable [`Metrics`] and call one method per event;
//! the binary serves [`Metrics::encode`] at `/metrics`. Nothing here reads a clock: callers pass
//! durations they measured with the injected clock or `tokio::time`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// A label set: (name, value) pairs in a fixed order.
type Labels = Vec<(&'static str, String)>;
type Counters = Family<Labels, Counter>;
type Gauges = Family<Labels, Gauge<f64, AtomicU64>>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// The Content-Type of [`Metrics::encode`]'s output (OpenMetrics text).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The value of every `provider` label (core's `metrics.ProviderLabel` for the AWS provider).
const PROVIDER: &str = "aws";

/// Karpenter's `metrics.DurationBuckets()`: fine below a second, coarse up to a minute.
const DURATION_BUCKETS: [f64; 36] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5,
    4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// Interruption messages wait on the queue for up to its 300 s retention.
fn queue_histogram() -> Histogram {
    Histogram::new([1.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0, 300.0])
}

/// The labels of one `karpenter_pods_state` series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodState {
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// `Kind/name` of the controlling owner, or empty.
    pub owner: String,
    /// Node name, or empty while pending.
    pub node: String,
    /// The node's NodePool, or empty.
    pub nodepool: String,
    /// The node's zone.
    pub zone: String,
    /// The node's architecture.
    pub arch: String,
    /// The node's capacity type.
    pub capacity_type: String,
    /// The node's instance type.
    pub instance_type: String,
    /// Pod phase.
    pub phase: String,
}

impl PodState {
    fn labels(&self) -> Labels {
        vec![
            ("name", self.name.clone()),
            ("namespace", self.namespace.clone()),
            ("owner", self.owner.clone()),
            ("node", self.node.clone()),
            ("nodepool", self.nodepool.clone()),
            ("zone", self.zone.clone()),
            ("arch", self.arch.clone()),
            ("capacity_type", self.capacity_type.clone()),
            ("instance_type", self.instance_type.clone()),
            ("phase", self.phase.clone()),
        ]
    }
}

/// The per-NodePool gauge families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PoolGauge {
    Usage,
    Limit,
    AllowedDisruptions,
}

struct Inner {
    registry: Registry,
    nodeclaims_created: Counters,
    nodeclaims_terminated: Counters,
    nodeclaims_disrupted: Counters,
    nodeclaims_drifted: Counters,
    nodes_created: Counters,
    nodes_terminated: Counters,
    pods_state: Gauges,
    /// The series each pod currently has in `pods_state`, so a changed pod's old series is
    /// removed (the label set *is* the state).
    pod_series: Mutex<BTreeMap<(String, String), Labels>>,
    scheduling_duration: Histograms,
    interruption_received: Counters,
    interruption_deleted: Counters,
    interruption_queue_duration: Histograms,
    cloudprovider_errors: Counters,
    cloudprovider_duration: Histograms,
    disruption_decisions: Counters,
    disruption_eligible_nodes: Gauges,
    disruption_evaluation_duration: Histograms,
    nodepools_usage: Gauges,
    nodepools_limit: Gauges,
    nodepools_allowed_disruptions: Gauges,
    /// Each NodePool's gauge series, so a deleted pool's series can all be removed.
    pool_series: Mutex<BTreeMap<String, BTreeSet<(PoolGauge, Labels)>>>,
    cluster_state_synced: Gauges,
    cluster_state_node_count: Gauges,
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

fn counter(registry: &mut Registry, name: &str, help: &str) -> Counters {
    let family = Counters::default();
    registry.register(name, help, family.clone());
    family
}

fn gauge(registry: &mut Registry, name: &str, help: &str) -> Gauges {
    let family = Gauges::default();
    registry.register(name, help, family.clone());
    family
}

fn histogram(registry: &mut Registry, name: &str, help: &str, buckets: fn() -> Histogram) -> Histograms {
    let family = Histograms::new_with_constructor(buckets);
    registry.register(name, help, family.clone());
    family
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Metrics {
    /// A registry with every metric registered and `karpenter_build_info{version}` set to 1.
    pub fn new() -> Self {
        let mut r = Registry::default();
        let build_info = gauge(
            &mut r,
            "karpenter_build_info",
            "A metric with a constant '1' value labeled by version from which karpenter was built.",
        );
        build_info.get_or_create(&vec![("version", env!("CARGO_PKG_VERSION").to_string())]).set(1.0);
        let inner = Inner {
            nodeclaims_created: counter(
                &mut r,
                "karpenter_nodeclaims_created",
                "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created and the owning nodepool.",
            ),
            nodeclaims_terminated: counter(
                &mut r,
                "karpenter_nodeclaims_terminated",
                "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool.",
            ),
            nodeclaims_disrupted: counter(
                &mut r,
                "karpenter_nodeclaims_disrupted",
                "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted and the owning nodepool.",
            ),
            nodeclaims_drifted: counter(
                &mut r,
                "karpenter_nodeclaims_drifted",
                "Number of nodeclaims drifted reasons in total by Karpenter. Labeled by drift type of the nodeclaim and the owning nodepool.",
            ),
            nodes_created: counter(
                &mut r,
                "karpenter_nodes_created",
                "Number of nodes created in total by Karpenter. Labeled by owning nodepool.",
            ),
            nodes_terminated: counter(
                &mut r,
                "karpenter_nodes_terminated",
                "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool.",
            ),
            pods_state: gauge(
                &mut r,
                "karpenter_pods_state",
                "Pod state is the current state of pods. Labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type and pod phase.",
            ),
            pod_series: Mutex::new(BTreeMap::new()),
            scheduling_duration: histogram(
                &mut r,
                "karpenter_scheduler_scheduling_duration_seconds",
                "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
                duration_histogram,
            ),
            interruption_received: counter(
                &mut r,
                "karpenter_interruption_received_messages",
                "Count of messages received from the SQS queue. Broken down by message type.",
            ),
            interruption_deleted: counter(
                &mut r,
                "karpenter_interruption_deleted_messages",
                "Count of messages deleted from the SQS queue.",
            ),
            interruption_queue_duration: histogram(
                &mut r,
                "karpenter_interruption_message_queue_duration_seconds",
                "Amount of time an interruption message is on the queue before it is processed by karpenter.",
                queue_histogram,
            ),
            cloudprovider_errors: counter(
                &mut r,
                "karpenter_cloudprovider_errors",
                "Total number of errors returned from CloudProvider calls.",
            ),
            cloudprovider_duration: histogram(
                &mut r,
                "karpenter_cloudprovider_duration_seconds",
                "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
                duration_histogram,
            ),
            disruption_decisions: counter(
                &mut r,
                "karpenter_voluntary_disruption_decisions",
                "Number of disruption decisions performed. Labeled by disruption decision, reason, and consolidation type.",
            ),
            disruption_eligible_nodes: gauge(
                &mut r,
                "karpenter_voluntary_disruption_eligible_nodes",
                "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
            ),
            disruption_evaluation_duration: histogram(
                &mut r,
                "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
                "Duration of the disruption decision evaluation process in seconds. Labeled by method and consolidation type.",
                duration_histogram,
            ),
            nodepools_usage: gauge(
                &mut r,
                "karpenter_nodepools_usage",
                "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.",
            ),
            nodepools_limit: gauge(
                &mut r,
                "karpenter_nodepools_limit",
                "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
            ),
            nodepools_allowed_disruptions: gauge(
                &mut r,
                "karpenter_nodepools_allowed_disruptions",
                "The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. Labeled by NodePool and reason.",
            ),
            pool_series: Mutex::new(BTreeMap::new()),
            cluster_state_synced: gauge(
                &mut r,
                "karpenter_cluster_state_synced",
                "Returns 1 if cluster state is synced and 0 otherwise.",
            ),
            cluster_state_node_count: gauge(
                &mut r,
                "karpenter_cluster_state_node_count",
                "Current count of nodes in cluster state",
            ),
            registry: r,
        };
        Self(Arc::new(inner))
    }

    /// A NodeClaim was created (`reason`: `provisioning` or a disruption reason).
    pub fn nodeclaim_created(&self, reason: &str, nodepool: &str) {
        self.0.nodeclaims_created.get_or_create(&vec![("reason", reason.into()), ("nodepool", nodepool.into())]).inc();
    }

    /// A NodeClaim's finalizer was removed.
    pub fn nodeclaim_terminated(&self, nodepool: &str) {
        self.0.nodeclaims_terminated.get_or_create(&vec![("nodepool", nodepool.into())]).inc();
    }

    /// A NodeClaim was disrupted (`reason`: `Empty`, `Underutilized`, `Drifted`, `Expired`, ...).
    pub fn nodeclaim_disrupted(&self, reason: &str, nodepool: &str) {
        self.0
            .nodeclaims_disrupted
            .get_or_create(&vec![("reason", reason.into()), ("nodepool", nodepool.into())])
            .inc();
    }

    /// A NodeClaim was newly marked `Drifted` (`drift_type`: `AMIDrift`, `NodePoolDrifted`, ...).
    pub fn nodeclaim_drifted(&self, drift_type: &str, nodepool: &str, capacity_type: &str) {
        self.0
            .nodeclaims_drifted
            .get_or_create(&vec![
                ("type", drift_type.into()),
                ("nodepool", nodepool.into()),
                ("capacity_type", capacity_type.into()),
            ])
            .inc();
    }

    /// A NodeClaim's Node registered.
    pub fn node_created(&self, nodepool: &str) {
        self.0.nodes_created.get_or_create(&vec![("nodepool", nodepool.into())]).inc();
    }

    /// A Node's finalizer was removed.
    pub fn node_terminated(&self, nodepool: &str) {
        self.0.nodes_terminated.get_or_create(&vec![("nodepool", nodepool.into())]).inc();
    }

    /// Sets a pod's `karpenter_pods_state` series, replacing the one it had.
    pub fn pod_state(&self, state: &PodState) {
        let labels = state.labels();
        let key = (state.namespace.clone(), state.name.clone());
        let mut series = self.0.pod_series.lock().expect("pod series lock");
        if let Some(old) = series.insert(key, labels.clone())
            && old != labels
        {
            self.0.pods_state.remove(&old);
        }
        self.0.pods_state.get_or_create(&labels).set(1.0);
    }

    /// Removes a deleted pod's `karpenter_pods_state` series.
    pub fn pod_deleted(&self, namespace: &str, name: &str) {
        let mut series = self.0.pod_series.lock().expect("pod series lock");
        if let Some(old) = series.remove(&(namespace.to_string(), name.to_string())) {
            self.0.pods_state.remove(&old);
        }
    }

    /// One scheduling simulation took `took` (`controller`: `provisioner` or `disruption`).
    pub fn scheduling_duration(&self, controller: &str, took: Duration) {
        self.0.scheduling_duration.get_or_create(&vec![("controller", controller.into())]).observe(secs(took));
    }

    /// An SQS interruption message was received (`message_type`: `spot_interrupted`,
    /// `rebalance_recommendation`, `scheduled_change`, `state_change`, `noop`, ...).
    pub fn interruption_received(&self, message_type: &str) {
        self.0.interruption_received.get_or_create(&vec![("message_type", message_type.into())]).inc();
    }

    /// An SQS interruption message was deleted, having waited `on_queue` since it was sent.
    pub fn interruption_deleted(&self, on_queue: Duration) {
        self.0.interruption_deleted.get_or_create(&vec![]).inc();
        self.0.interruption_queue_duration.get_or_create(&vec![]).observe(secs(on_queue));
    }

    /// A cloud provider call failed (`error`: the AWS error code, or `""`).
    pub fn cloudprovider_error(&self, controller: &str, method: &str, error: &str) {
        let labels = vec![
            ("controller", controller.into()),
            ("method", method.into()),
            ("provider", PROVIDER.into()),
            ("error", error.into()),
        ];
        self.0.cloudprovider_errors.get_or_create(&labels).inc();
    }

    /// A cloud provider call (`Create`, `Delete`, `Get`, `List`, `GetInstanceTypes`, ...) took `took`.
    pub fn cloudprovider_duration(&self, controller: &str, method: &str, took: Duration) {
        let labels = vec![("controller", controller.into()), ("method", method.into()), ("provider", PROVIDER.into())];
        self.0.cloudprovider_duration.get_or_create(&labels).observe(secs(took));
    }

    /// A disruption method decided (`decision`: `delete` or `replace`; `reason`: `empty`,
    /// `underutilized`, `drifted`; `consolidation_type`: `empty`, `single`, `multi` or `""`).
    pub fn disruption_decision(&self, decision: &str, reason: &str, consolidation_type: &str) {
        let labels = vec![
            ("decision", decision.into()),
            ("reason", reason.into()),
            ("consolidation_type", consolidation_type.into()),
        ];
        self.0.disruption_decisions.get_or_create(&labels).inc();
    }

    /// How many nodes a disruption reason could act on this round.
    pub fn disruption_eligible_nodes(&self, reason: &str, count: usize) {
        self.0.disruption_eligible_nodes.get_or_create(&vec![("reason", reason.into())]).set(count as f64);
    }

    /// One disruption method's evaluation took `took`.
    pub fn disruption_evaluation_duration(&self, method: &str, consolidation_type: &str, took: Duration) {
        let labels = vec![("method", method.into()), ("consolidation_type", consolidation_type.into())];
        self.0.disruption_evaluation_duration.get_or_create(&labels).observe(secs(took));
    }

    /// A NodePool's provisioned amount of `resource_type` (`cpu` in cores, `memory` in bytes, `nodes`, ...).
    pub fn nodepool_usage(&self, nodepool: &str, resource_type: &str, value: f64) {
        self.nodepool_gauge(PoolGauge::Usage, nodepool, vec![("resource_type", resource_type.into())], value);
    }

    /// A NodePool's limit on `resource_type`.
    pub fn nodepool_limit(&self, nodepool: &str, resource_type: &str, value: f64) {
        self.nodepool_gauge(PoolGauge::Limit, nodepool, vec![("resource_type", resource_type.into())], value);
    }

    /// How many of a NodePool's nodes may be disrupting at once for `reason`.
    pub fn nodepool_allowed_disruptions(&self, nodepool: &str, reason: &str, allowed: usize) {
        self.nodepool_gauge(PoolGauge::AllowedDisruptions, nodepool, vec![("reason", reason.into())], allowed as f64);
    }

    fn nodepool_gauge(&self, which: PoolGauge, nodepool: &str, rest: Labels, value: f64) {
        let mut labels: Labels = vec![("nodepool", nodepool.into())];
        labels.extend(rest);
        self.pool_family(which).get_or_create(&labels).set(value);
        let mut series = self.0.pool_series.lock().expect("pool series lock");
        series.entry(nodepool.to_string()).or_default().insert((which, labels));
    }

    fn pool_family(&self, which: PoolGauge) -> &Gauges {
        match which {
            PoolGauge::Usage => &self.0.nodepools_usage,
            PoolGauge::Limit => &self.0.nodepools_limit,
            PoolGauge::AllowedDisruptions => &self.0.nodepools_allowed_disruptions,
        }
    }

    /// Removes every gauge series of a deleted NodePool.
    pub fn nodepool_deleted(&self, nodepool: &str) {
        let removed = self.0.pool_series.lock().expect("pool series lock").remove(nodepool).unwrap_or_default();
        for (which, labels) in removed {
            self.pool_family(which).remove(&labels);
        }
    }

    /// Whether cluster state matches the API server, and how many nodes it holds.
    pub fn cluster_state(&self, synced: bool, node_count: usize) {
        self.0.cluster_state_synced.get_or_create(&vec![]).set(if synced { 1.0 } else { 0.0 });
        self.0.cluster_state_node_count.get_or_create(&vec![]).set(node_count as f64);
    }

    /// The OpenMetrics text of every metric, for `/metrics` (see [`CONTENT_TYPE`]). Samples of
    /// each metric are sorted, so the output does not depend on hash-map order.
    pub fn encode(&self) -> String {
        let mut raw = String::new();
        prometheus_client::encoding::text::encode(&mut raw, &self.0.registry).expect("writing to a String cannot fail");
        sort_samples(&raw)
    }
}

/// Sorts the sample lines between metadata lines (`# HELP`, `# TYPE`, `# UNIT`, `# EOF`),
/// keeping each histogram's bucket lines in bucket order (they share a label-set prefix and
/// differ only in `le`, which must stay ascending, so samples are grouped by series first).
fn sort_samples(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut block: Vec<&str> = Vec::new();
    let flush = |block: &mut Vec<&str>, out: &mut String| {
        // Stable sort by the series key: the line with any `le="..."` label and value removed.
        block.sort_by_key(|line| series_key(line));
        for line in block.drain(..) {
            out.push_str(line);
            out.push('\n');
        }
    };
    for line in raw.lines() {
        if line.starts_with('#') {
            flush(&mut block, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            block.push(line);
        }
    }
    flush(&mut block, &mut out);
    out
}

fn series_key(line: &str) -> (String, String, u8) {
    let series = line.rsplit_once(' ').map_or(line, |(series, _value)| series);
    let (name, labels) = match series.split_once('{') {
        Some((name, rest)) => (name, rest.strip_suffix('}').unwrap_or(rest)),
        None => (series, ""),
    };
    // Without `le`, a histogram's buckets share one key and the stable sort keeps their
    // encoded (ascending) order.
    let labels: Vec<&str> = labels.split(',').filter(|label| !label.starts_with("le=")).collect();
    // Within a series: buckets, then sum, then count, as encoded.
    let (base, rank) = if let Some(base) = name.strip_suffix("_bucket") {
        (base, 0)
    } else if let Some(base) = name.strip_suffix("_sum") {
        (base, 1)
    } else if let Some(base) = name.strip_suffix("_count") {
        (base, 2)
    } else {
        (name, 0)
    };
    (labels.join(","), base.to_string(), rank)
}

#[cfg(test)]
mod tests {
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
