//! NodeClaim disruption signals that act without the disruption loop's budgets
//! (karpenter-behaviour.md §5.11, §5.12):
//!
//! - [`drift`] and [`drift_controller`]: the `Drifted` condition on launched NodeClaims, with
//!   Karpenter's reasons (`NodePoolDrifted`, `RequirementsDrifted`, `InstanceTypeNotFound`, and
//!   the provider's `NodeClassDrift`, `AMIDrift`, `SecurityGroupDrift`, `SubnetDrift`). The
//!   disruption loop reads the condition and replaces drifted nodes within budgets.
//! - [`hash_version`]: the NodePool and EC2NodeClass hash annotations and the re-stamp of claims
//!   stamped under an older hash version (instead of drifting them).
//! - [`expiration`]: deleting NodeClaims older than `expireAfter`, forcefully.
//!
//! [`spawn`] starts both controllers; the operator calls it once.

pub mod drift;
pub mod drift_controller;
pub mod expiration;
pub mod hash_version;

use std::sync::Arc;

pub use drift_controller::DriftController;
pub use expiration::Expiration;

use crate::cloudprovider::CloudProvider;
use crate::operator::Environment;
use crate::state::Cluster;

/// Starts the drift and expiration controllers on the current runtime.
pub fn spawn(client: kube::Client, cluster: Arc<Cluster>, cloud: Arc<dyn CloudProvider>, env: &Environment) {
    let drift = DriftController::new(client.clone(), cluster.clone(), cloud, env.clock.clone(), env.metrics.clone());
    tokio::spawn(drift.run());
    let expiration = Expiration::new(client, cluster, env.clock.clone(), env.events.clone(), env.metrics.clone());
    tokio::spawn(expiration.run());
}
