//! What every reconciler may use besides its own state.

use std::sync::Arc;

use crate::cloudprovider::CloudProvider;
use crate::runtime::{EventRecorder, Metrics, SharedClock, SharedRng};
use crate::state::Cluster;

/// The shared environment of the controllers: the cluster state they reconcile, the clients they
/// act through and the injected clock, random source, event recorder and metrics. Cheap to clone.
#[derive(Clone)]
pub struct Env {
    /// The controller's view of the cluster; the driver subscribes to its changes.
    pub cluster: Arc<Cluster>,
    /// The Kubernetes API server.
    pub kube: kube::Client,
    /// The cloud provider (EC2).
    pub cloud: Arc<dyn CloudProvider>,
    /// The clock; nothing reads time any other way.
    pub clock: SharedClock,
    /// The random source; nothing draws entropy any other way.
    pub rng: SharedRng,
    /// Event sink, written out as Kubernetes Events.
    pub events: EventRecorder,
    /// Prometheus metrics.
    pub metrics: Metrics,
}

impl Env {
    /// The environment of one controller run alone (as the tests of a single controller do):
    /// its own clients, a fresh metrics registry and a random source seeded with 0.
    pub fn standalone(
        cluster: Arc<Cluster>,
        kube: kube::Client,
        cloud: Arc<dyn CloudProvider>,
        clock: SharedClock,
        events: EventRecorder,
    ) -> Self {
        Self { cluster, kube, cloud, clock, rng: SharedRng::from_seed(0), events, metrics: Metrics::new() }
    }
}
