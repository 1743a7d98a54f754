//! The metric family types every subsystem registers, and the helpers that register them.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// A label set: (name, value) pairs in a fixed order.
pub(super) type Labels = Vec<(&'static str, String)>;
/// Counters keyed by label set.
pub(super) type Counters = Family<Labels, Counter>;
/// Floating-point gauges keyed by label set.
pub(super) type Gauges = Family<Labels, Gauge<f64, AtomicU64>>;
/// Histograms keyed by label set, each built by the family's bucket constructor.
pub(super) type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Karpenter's `metrics.DurationBuckets()`: fine below a second, coarse up to a minute.
pub(super) const DURATION_BUCKETS: [f64; 36] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5,
    4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
];

/// A histogram with [`DURATION_BUCKETS`].
pub(super) fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// Registers a counter family.
pub(super) fn counter(registry: &mut Registry, name: &str, help: &str) -> Counters {
    let family = Counters::default();
    registry.register(name, help, family.clone());
    family
}

/// Registers a gauge family.
pub(super) fn gauge(registry: &mut Registry, name: &str, help: &str) -> Gauges {
    let family = Gauges::default();
    registry.register(name, help, family.clone());
    family
}

/// Registers a histogram family whose histograms have `buckets`.
pub(super) fn histogram(registry: &mut Registry, name: &str, help: &str, buckets: fn() -> Histogram) -> Histograms {
    let family = Histograms::new_with_constructor(buckets);
    registry.register(name, help, family.clone());
    family
}

/// A duration as Prometheus seconds.
pub(super) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
