//! The controller's view of the cluster (core's `state.Cluster`): every object kind it reasons
//! about, fed by kube-runtime watchers ([`watch`]) into ordered maps, plus what only the controller
//! knows (pods nominated to nodes, claims it has marked for deletion).
//!
//! Maps are `BTreeMap`s keyed by `namespace/name` (or `name` for cluster-scoped kinds), so every
//! iteration is in a stable order whatever order the API server sent events in. Readers take a
//! cheap [`Snapshot`] (maps of `Arc`s) and never hold the lock across an await.
//!
//! Every write names the [`Kind`] it changed, and controllers subscribe to the kinds they read
//! ([`Cluster::changes`]), so a change wakes only the controllers it concerns.

pub mod changes;
pub mod index;
pub mod volume_watch;
pub mod watch;
pub mod watchers;

pub use changes::{Changes, Kind, Kinds, StateGone};
pub use index::SnapshotIndex;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::ResourceExt;

use crate::apis::{EC2NodeClass, NodeClaim, NodePool};

/// Object kinds the state tracks; the cluster is synced when every kind has listed once.
pub const KINDS: [&str; 7] =
    ["Pod", "Node", "NodeClaim", "NodePool", "EC2NodeClass", "PodDisruptionBudget", "DaemonSet"];

/// The key of an object in the state maps: `namespace/name`, or `name` when cluster-scoped.
pub fn key_of<K: ResourceExt>(object: &K) -> String {
    match object.namespace() {
        Some(ns) => format!("{ns}/{}", object.name_any()),
        None => object.name_any(),
    }
}

/// Every object the controller watches, by key.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Pods, by `namespace/name`.
    pub pods: BTreeMap<String, Arc<Pod>>,
    /// Nodes, by name.
    pub nodes: BTreeMap<String, Arc<Node>>,
    /// NodeClaims, by name.
    pub node_claims: BTreeMap<String, Arc<NodeClaim>>,
    /// NodePools, by name.
    pub node_pools: BTreeMap<String, Arc<NodePool>>,
    /// EC2NodeClasses, by name.
    pub node_classes: BTreeMap<String, Arc<EC2NodeClass>>,
    /// PodDisruptionBudgets, by `namespace/name`.
    pub pdbs: BTreeMap<String, Arc<PodDisruptionBudget>>,
    /// DaemonSets, by `namespace/name`.
    pub daemon_sets: BTreeMap<String, Arc<DaemonSet>>,
    /// PersistentVolumeClaims, by `namespace/name` (empty until a pod mounts a claim).
    pub persistent_volume_claims: BTreeMap<String, Arc<PersistentVolumeClaim>>,
    /// PersistentVolumes, by name (empty until a pod mounts a claim).
    pub persistent_volumes: BTreeMap<String, Arc<PersistentVolume>>,
    /// StorageClasses, by name (empty until a pod mounts a claim).
    pub storage_classes: BTreeMap<String, Arc<StorageClass>>,
    /// Kinds that have completed their initial list.
    pub synced: BTreeSet<&'static str>,
    /// Bumped on every change.
    pub generation: u64,
}

impl Snapshot {
    /// Whether every kind has listed once (core `cluster.Synced`).
    pub fn is_synced(&self) -> bool {
        KINDS.iter().all(|kind| self.synced.contains(kind))
    }

    /// Whether every NodeClaim in the state has launched (has a `status.providerID`). Once
    /// synced, core `state.Cluster.Synced` (pkg/controllers/state/cluster.go l. 167–178)
    /// reports false while any NodeClaim it holds has no providerID: a claim that has not
    /// launched has no resolved instance type, so its capacity is unknown and a scheduling
    /// pass must wait rather than launch again for the pods it was made for.
    pub fn launches_resolved(&self) -> bool {
        self.node_claims.values().all(|claim| claim.provider_id().is_some_and(|id| !id.is_empty()))
    }

    /// The NodeClaim whose `status.providerID` matches the node's `spec.providerID`.
    pub fn node_claim_for_node(&self, node: &Node) -> Option<&Arc<NodeClaim>> {
        let provider_id = node.spec.as_ref()?.provider_id.as_deref()?;
        self.node_claims.values().find(|claim| claim.provider_id() == Some(provider_id))
    }

    /// The Node(s) whose providerID matches the claim's.
    pub fn nodes_for_node_claim(&self, claim: &NodeClaim) -> Vec<&Arc<Node>> {
        let Some(provider_id) = claim.provider_id() else { return Vec::new() };
        self.nodes
            .values()
            .filter(|node| node.spec.as_ref().and_then(|s| s.provider_id.as_deref()) == Some(provider_id))
            .collect()
    }

    /// UIDs of the NodeClaims not being deleted: what a controller that remembers claims it
    /// acted on (expired, repaired) keeps its memory to.
    pub fn live_claim_uids(&self) -> BTreeSet<String> {
        self.node_claims
            .values()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter_map(|c| c.metadata.uid.clone())
            .collect()
    }

    /// Pods bound to `node_name`, in key order.
    pub fn pods_on_node<'a>(&'a self, node_name: &'a str) -> impl Iterator<Item = &'a Arc<Pod>> + 'a {
        self.pods.values().filter(move |pod| pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node_name))
    }
}

/// What only the controller knows, kept beside the watched objects.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    /// Node or NodeClaim name → when pods were last nominated to it.
    pub nominated: BTreeMap<String, jiff::Timestamp>,
    /// NodeClaims the controller has decided to delete (disruption commands in flight).
    pub marked_for_deletion: BTreeSet<String>,
    /// Pod key → the NodeClaim, not yet initialized, the last provisioning pass nominated it
    /// to (its node or the claim itself): the next pass holds the pod there first
    /// (`scheduling/scheduler_held.rs`).
    pub held_pods: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct Inner {
    snapshot: Snapshot,
    memory: Memory,
}

/// The shared cluster state.
#[derive(Debug)]
pub struct Cluster {
    inner: Mutex<Inner>,
    changed: tokio::sync::watch::Sender<changes::Generations>,
}

impl Default for Cluster {
    fn default() -> Self {
        Self::new()
    }
}

impl Cluster {
    /// An empty, unsynced state.
    pub fn new() -> Self {
        Self { inner: Mutex::new(Inner::default()), changed: tokio::sync::watch::channel([0; Kind::ALL.len()]).0 }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().expect("cluster state lock")
    }

    /// A consistent copy of every watched object.
    pub fn snapshot(&self) -> Snapshot {
        self.lock().snapshot.clone()
    }

    /// A copy of the controller's own memory.
    pub fn memory(&self) -> Memory {
        self.lock().memory.clone()
    }

    /// Whether every kind has listed once.
    pub fn is_synced(&self) -> bool {
        self.lock().snapshot.is_synced()
    }

    /// A subscription that wakes when one of `kinds` changes.
    pub fn changes(&self, kinds: Kinds) -> Changes {
        Changes::new(self.changed.subscribe(), kinds)
    }

    /// Applies `f` to the snapshot and announces a change of `kind`.
    pub fn update(&self, kind: Kind, f: impl FnOnce(&mut Snapshot)) {
        {
            let mut inner = self.lock();
            f(&mut inner.snapshot);
            inner.snapshot.generation += 1;
        }
        self.announce(kind);
    }

    /// Applies `f` to the controller's memory and announces a change of [`Kind::Memory`].
    pub fn remember(&self, f: impl FnOnce(&mut Memory)) {
        {
            let mut inner = self.lock();
            f(&mut inner.memory);
            inner.snapshot.generation += 1;
        }
        self.announce(Kind::Memory);
    }

    fn announce(&self, kind: Kind) {
        self.changed.send_modify(|generations| generations[kind as usize] += 1);
    }

    /// Puts a NodeClaim the controller has just created into the state at once, without
    /// waiting for its watch event (core provisioner.go l. 518 `p.cluster.UpdateNodeClaim`
    /// after `kubeClient.Create`): under watch lag the next scheduling pass would otherwise
    /// not see the claim and launch again for the same pods. A version the watch already
    /// delivered is newer and is kept.
    pub fn record_created_node_claim(&self, claim: NodeClaim) {
        let key = key_of(&claim);
        self.update(Kind::NodeClaim, |s| {
            s.node_claims.entry(key).or_insert_with(|| Arc::new(claim));
        });
    }

    /// Replaces the pods held on in-flight NodeClaims with one pass's nominations.
    pub fn hold_pods(&self, held: BTreeMap<String, String>) {
        self.remember(|m| m.held_pods = held);
    }

    /// Records that pods were nominated to a node or in-flight claim at `at`.
    pub fn nominate(&self, name: &str, at: jiff::Timestamp) {
        self.remember(|m| {
            m.nominated.insert(name.to_string(), at);
        });
    }
}
