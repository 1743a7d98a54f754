//! The simulated cluster's actors, and the store-independent cores they run on.
//!
//! [`runtime`] runs event-driven reconcilers against the API server's store;
//! [`workloads`] are kube-controller-manager's workload controllers.
//!
//! Each module is a pure computation over k8s-openapi types: no I/O, no store, time passed in,
//! randomness from a caller-supplied seeded `ChaCha8Rng`. The store-driven actors (scheduler,
//! kubelet, disruption controller) call these and write the results.
//!
//! - [`scheduler`]: an independent kube-scheduler model (filters, scores, FitError messages)
//!   and its scheduling queue.
//! - [`pdb_status`]: the disruption controller's PodDisruptionBudget status computation.
//! - [`node_shape`]: the Node an EKS AL2023 instance registers (capacity, allocatable, labels).
//! - [`quantity`]: exact parsing of resource quantities.

pub mod disruption_controller;
pub mod kube_scheduler;
pub mod kubelet;
pub mod node_agent;
pub mod node_shape;
pub mod pdb_status;
pub mod pod_gc;
pub mod quantity;
pub mod runtime;
pub mod scheduler;
pub mod volume_claims;
pub mod volume_provisioner;
pub mod workloads;

use std::time::Duration;

use dovetail_fakecloud::cloud::SharedCloud;

use crate::apiserver::{self, ApiServer};
use crate::world::Stream;

/// The streams the cluster's actors draw from without a cloud ([`Stream::Nodes`] and
/// [`Stream::CloudControllerManager`] join them with one).
pub const STREAMS: [Stream; 2] = [Stream::KubeScheduler, Stream::Kubelet];

/// Every cluster actor of a world, in a fixed order. With a cloud, nodes follow its
/// instances (kubelet registration, readiness, loss).
pub fn cluster_actors(seed: u64, cloud: Option<SharedCloud>) -> Vec<Box<dyn runtime::Reconciler>> {
    let mut actors = workloads::controllers();
    if let Some(cloud) = cloud {
        actors.push(Box::new(node_agent::NodeAgents::new(
            cloud,
            node_agent::NodeTiming::default(),
            Stream::Nodes.rng(seed),
            Stream::CloudControllerManager.rng(seed),
        )));
    }
    actors.push(Box::new(disruption_controller::DisruptionController::default()));
    actors.push(Box::new(pod_gc::PodGc::default()));
    actors.push(Box::new(volume_provisioner::VolumeProvisioner::default()));
    actors.push(Box::new(kube_scheduler::KubeScheduler::new(
        scheduler::SchedulerConfig::default(),
        Stream::KubeScheduler.rng(seed),
    )));
    actors.push(Box::new(kubelet::Kubelets::new(kubelet::KubeletTiming::default(), Stream::Kubelet.rng(seed))));
    actors
}

/// Adds the API server host with the cluster's actors running beside it (as the control
/// plane and kubelets would). The store outlives the host, like etcd. Worlds get it from
/// [`crate::world::WorldBuilder::cluster_actors`].
pub(crate) fn add_cluster_host(sim: &mut turmoil::Sim<'_>, server: &ApiServer, seed: u64, cloud: Option<SharedCloud>) {
    let server = server.clone();
    sim.host("apiserver", move || {
        let server = server.clone();
        let cloud = cloud.clone();
        async move {
            tokio::spawn(runtime::run(server.clone(), cluster_actors(seed, cloud)));
            // Give the actors' first reconcile a head start over the first client request.
            tokio::time::sleep(Duration::ZERO).await;
            server.serve_turmoil(apiserver::API_PORT).await?;
            Ok(())
        }
    });
}
