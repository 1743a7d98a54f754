//! The in-memory snapshot every disruption decision is a function of: cluster state, the
//! controller's memory (nominations, claims marked for deletion), the usable NodePools with
//! their priced instance types, the orchestration queue and the time. The scheduler's view of
//! the cluster (existing nodes, bound pods, DaemonSet overhead, pods that must land somewhere
//! anyway) is derived once here, so each simulation only removes its candidates.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::cloudprovider::InstanceType;
use crate::provisioning::input as scheduling_input;
use crate::provisioning::reschedulable::{EvictionLimits, PodSource, pods_to_place};
use crate::runtime::Settings;
use crate::scheduling::{BoundPod, ExistingNode, NodePoolInput, SchedulablePod, SchedulerOptions};
use crate::state::{Memory, Snapshot};

/// Knobs that shape decisions, from the operator settings.
#[derive(Clone, Debug, PartialEq)]
pub struct DisruptionOptions {
    /// Nodes nominated more recently than this are not candidates (core statenode.go, 20 s).
    pub nomination_window: Duration,
    /// Scheduler options (preference and minValues policies).
    pub scheduler: SchedulerOptions,
    /// Feature gate `SpotToSpotConsolidation`.
    pub spot_to_spot: bool,
}

impl Default for DisruptionOptions {
    fn default() -> Self {
        Self::from_settings(&Settings::default())
    }
}

impl DisruptionOptions {
    /// The options the operator settings imply.
    pub fn from_settings(settings: &Settings) -> Self {
        Self {
            nomination_window: settings.nomination_window(),
            scheduler: SchedulerOptions {
                preference_policy: settings.preference_policy,
                min_values_policy: settings.min_values_policy,
                ..SchedulerOptions::default()
            },
            spot_to_spot: settings.feature_gates.spot_to_spot_consolidation,
        }
    }
}

/// Everything a disruption decision reads.
#[derive(Clone, Debug)]
pub struct DisruptionInput {
    /// Watched objects.
    pub snapshot: Snapshot,
    /// Nominations and claims marked for deletion.
    pub memory: Memory,
    /// Usable NodePools (not deleting, node class ready) with their instance types, in
    /// Karpenter's weight order.
    pub pools: Vec<NodePoolInput>,
    /// NodeClaims in the orchestration queue (a command is in flight for them).
    pub queued: BTreeSet<String>,
    /// Now.
    pub now: jiff::Timestamp,
    /// Decision knobs.
    pub options: DisruptionOptions,
    pub(crate) existing: Vec<ExistingNode>,
    pub(crate) bound: Vec<BoundPod>,
    /// Snapshot key of each pod in [`Self::bound`] → its index there: a candidate's pods are
    /// parsed once per input, not once per candidate listing.
    pub(crate) bound_by_key: BTreeMap<String, usize>,
    pub(crate) daemon_set_pods: Vec<SchedulablePod>,
    /// Pods that need a place whatever happens: pending provisionable pods, and the pods of
    /// nodes already being deleted.
    pub(crate) must_place: Vec<SchedulablePod>,
    /// Keys of the pending (not yet bound) pods among [`Self::must_place`]; only these may fail
    /// to schedule in a simulation.
    pub(crate) pending_keys: BTreeSet<String>,
    /// Keys of the pods of nodes already being deleted among [`Self::must_place`]; these may
    /// land on an uninitialized node in a simulation (core `disruption/helpers.go` l. 124
    /// `deletingNodePodKeys`).
    pub(crate) deleting_node_pod_keys: BTreeSet<String>,
    /// The PDBs, for which pods Karpenter would provision capacity for now.
    pub(crate) eviction_limits: EvictionLimits,
}

impl DisruptionInput {
    /// Derives the scheduler's view once.
    pub fn new(
        snapshot: Snapshot,
        memory: Memory,
        pools: Vec<NodePoolInput>,
        queued: BTreeSet<String>,
        now: jiff::Timestamp,
        options: DisruptionOptions,
    ) -> Self {
        let existing = scheduling_input::existing_nodes(&snapshot, &memory);
        let mut must_place = Vec::new();
        let mut pending_keys = BTreeSet::new();
        let mut deleting_node_pod_keys = BTreeSet::new();
        for (key, pod, source) in pods_to_place(&snapshot, &existing, now) {
            let pending = source == PodSource::Pending;
            let Ok(p) = crate::provisioning::volume_topology::schedulable_pod(&snapshot, pod, pending) else {
                continue;
            };
            match source {
                PodSource::Pending => pending_keys.insert(key.clone()),
                PodSource::DeletingNode => deleting_node_pod_keys.insert(key.clone()),
            };
            must_place.push(p);
        }
        let eviction_limits = EvictionLimits::new(&snapshot);
        let keyed = scheduling_input::bound_pods_keyed(&snapshot);
        let bound_by_key = keyed.iter().enumerate().map(|(i, (key, _))| ((*key).clone(), i)).collect();
        let bound: Vec<BoundPod> = keyed.into_iter().map(|(_, bound)| bound).collect();
        let daemon_set_pods = scheduling_input::daemon_set_pods(&snapshot);
        Self {
            snapshot,
            memory,
            pools,
            queued,
            now,
            options,
            existing,
            bound,
            bound_by_key,
            daemon_set_pods,
            must_place,
            pending_keys,
            deleting_node_pod_keys,
            eviction_limits,
        }
    }

    /// The instance type `name` as NodePool `pool` offers it.
    pub fn instance_type(&self, pool: &str, name: &str) -> Option<&Arc<InstanceType>> {
        self.pool(pool)?.instance_types.iter().find(|it| it.name == name)
    }

    /// The usable pool input named `pool`.
    pub fn pool(&self, pool: &str) -> Option<&NodePoolInput> {
        self.pools.iter().find(|p| p.node_pool.metadata.name.as_deref() == Some(pool))
    }

    /// The scheduler's parse of the pod stored under `key` in [`Self::snapshot`]: the one made
    /// for [`Self::bound`] when the pod is there (the same object, so the same parse), else
    /// parsed now (`SchedulablePod::from_pod`); with its volumes' zone requirements
    /// ([`crate::provisioning::volume_topology::add_volume_topology`], a no-op for a pod
    /// without volumes), as the disruption simulation needs them. `None` when either fails.
    pub fn schedulable_pod(&self, key: &str, pod: &Pod) -> Option<SchedulablePod> {
        let mut parsed = match self.bound_by_key.get(key) {
            Some(&index) => self.bound[index].pod.clone(),
            None => SchedulablePod::from_pod(pod).ok()?,
        };
        crate::provisioning::volume_topology::add_volume_topology(&self.snapshot, pod, &mut parsed, false).ok()?;
        Some(parsed)
    }

    /// The existing (and in-flight) nodes as the scheduler sees them.
    pub fn existing_nodes(&self) -> &[ExistingNode] {
        &self.existing
    }
}
