//! Cloud provider call metrics (core `pkg/cloudprovider/metrics`): errors by AWS error code and
//! call durations, by controller and method.

use std::time::Duration;

use prometheus_client::registry::Registry;

use super::Metrics;
use super::family::{Counters, Histograms, counter, duration_histogram, histogram, secs};

/// The value of every `provider` label (core's `metrics.ProviderLabel` for the AWS provider).
const PROVIDER: &str = "aws";

/// The cloud provider families.
pub(super) struct CloudProviderMetrics {
    errors: Counters,
    duration: Histograms,
}

impl CloudProviderMetrics {
    /// Registers the families, in this order, in `r`.
    pub(super) fn register(r: &mut Registry) -> Self {
        let errors =
            counter(r, "karpenter_cloudprovider_errors", "Total number of errors returned from CloudProvider calls.");
        let duration = histogram(
            r,
            "karpenter_cloudprovider_duration_seconds",
            "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
            duration_histogram,
        );
        Self { errors, duration }
    }
}

impl Metrics {
    /// A cloud provider call failed (`error`: the AWS error code, or `""`).
    pub fn cloudprovider_error(&self, controller: &str, method: &str, error: &str) {
        let labels = vec![
            ("controller", controller.into()),
            ("method", method.into()),
            ("provider", PROVIDER.into()),
            ("error", error.into()),
        ];
        self.0.cloudprovider.errors.get_or_create(&labels).inc();
    }

    /// A cloud provider call (`Create`, `Delete`, `Get`, `List`, `GetInstanceTypes`, ...) took `took`.
    pub fn cloudprovider_duration(&self, controller: &str, method: &str, took: Duration) {
        let labels = vec![("controller", controller.into()), ("method", method.into()), ("provider", PROVIDER.into())];
        self.0.cloudprovider.duration.get_or_create(&labels).observe(secs(took));
    }
}
