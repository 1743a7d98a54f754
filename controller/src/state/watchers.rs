//! Starts the controller's watchers: one task per kind ([`super::watch`]), and the volume
//! kinds' watchers the Pod watcher starts lazily ([`super::volume_watch`]). Kept apart from
//! both so neither imports the other.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use rand::RngCore;

use super::watch::{spawn, spawn_with};
use super::{Cluster, Kind};
use crate::apis::{EC2NodeClass, NodeClaim, NodePool};
use crate::runtime::SharedRng;

/// Starts one watcher task per kind on the current runtime; each draws its backoff's jitter
/// seed from `rng`, in this fixed order.
pub fn spawn_watchers(client: &Client, cluster: &Arc<Cluster>, rng: &SharedRng) {
    let seed = || rng.with(RngCore::next_u64);
    // Drawn in the order the watchers were always spawned in, then spawned in that order.
    let seeds: [u64; 7] = std::array::from_fn(|_| seed());
    // The Pod watcher starts the volume kinds' watchers at the first pod mounting a claim
    // (no task of its own: a cluster without claims runs exactly what it ran before). Their
    // jitter derives from the last seed rather than drawing again, for the same reason.
    let volumes =
        super::volume_watch::VolumeWatchStarter::new(client, cluster, seeds[6].rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15);
    spawn_with::<Pod>(client, cluster, Kind::Pod, Kind::Pod.as_str(), |s| &mut s.pods, seeds[0], Some(volumes.hook()));
    spawn::<Node>(client, cluster, Kind::Node, |s| &mut s.nodes, seeds[1]);
    spawn::<NodeClaim>(client, cluster, Kind::NodeClaim, |s| &mut s.node_claims, seeds[2]);
    spawn::<NodePool>(client, cluster, Kind::NodePool, |s| &mut s.node_pools, seeds[3]);
    spawn::<EC2NodeClass>(client, cluster, Kind::NodeClass, |s| &mut s.node_classes, seeds[4]);
    spawn::<PodDisruptionBudget>(client, cluster, Kind::PodDisruptionBudget, |s| &mut s.pdbs, seeds[5]);
    spawn::<DaemonSet>(client, cluster, Kind::DaemonSet, |s| &mut s.daemon_sets, seeds[6]);
}
