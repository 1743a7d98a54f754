//! The scheduler's input: a plain snapshot of the cluster, so a scheduling pass is a pure
//! function that tests (and the disruption controller, re-running it without candidates) can
//! build without an API server.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::instance_selection::{MAX_INSTANCE_TYPES_ON_CLAIM, MinValuesPolicy};
use super::pod::{HostPort, SchedulablePod};
use super::requirements::Requirements;
use super::resources::Resources;
use super::taints::Taint;
use crate::apis::NodePool;
use crate::cloudprovider::InstanceType;

/// Whether preferences (preferred affinities, ScheduleAnyway spreads) are honoured
/// (`--preference-policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PreferencePolicy {
    /// Treat preferences as requirements and relax them one at a time on failure (default).
    #[default]
    Respect,
    /// Drop every preference before scheduling.
    Ignore,
}

/// Knobs of a scheduling pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerOptions {
    /// `--preference-policy`.
    pub preference_policy: PreferencePolicy,
    /// `--min-values-policy`.
    pub min_values_policy: MinValuesPolicy,
    /// Instance types kept per new NodeClaim (core `MaxInstanceTypes`, 600).
    pub max_instance_types: usize,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        Self {
            preference_policy: PreferencePolicy::Respect,
            min_values_policy: MinValuesPolicy::Strict,
            max_instance_types: MAX_INSTANCE_TYPES_ON_CLAIM,
        }
    }
}

/// A node that exists or is being launched (an in-flight NodeClaim), as cluster state sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExistingNode {
    /// Node name (or the NodeClaim name while in flight); also its hostname domain.
    pub name: String,
    /// Node labels (for an in-flight claim: its single-valued requirement labels).
    pub labels: BTreeMap<String, String>,
    /// Taints.
    pub taints: Vec<Taint>,
    /// Startup taints of its NodeClaim, ignored while the node is not initialized.
    pub startup_taints: Vec<Taint>,
    /// Allocatable (for an uninitialized node, the NodeClaim's estimate).
    pub allocatable: Resources,
    /// Capacity, counted against its NodePool's limits.
    pub capacity: Resources,
    /// Requests of the pods bound to it.
    pub requested: Resources,
    /// Host ports in use.
    pub host_ports: Vec<HostPort>,
    /// Requests of the DaemonSet pods bound to it (part of `requested`; core `StateNode`
    /// `DaemonSetRequests`): the DaemonSets still due are the compatible ones minus these.
    pub daemon_requests: Resources,
    /// Initialized nodes are tried before uninitialized ones.
    pub initialized: bool,
    /// Nodes being deleted take no pods (their pods are in `pods` to reschedule).
    pub marked_for_deletion: bool,
    /// [`Self::shared_requirements`], built on first use (construct with
    /// `RequirementsCache::default()`; do not change `name` or `labels` after a pass read it).
    pub requirements_cache: RequirementsCache,
}

/// A node's label requirements, built once: every scheduling pass (each consolidation probe
/// is one) reads every node's, and building them from the labels was most of a probe's time
/// at 2,000 nodes (docs/benchmarks-measured.md "Session 19"). Not part of the node's identity:
/// any two caches compare equal.
#[derive(Clone, Debug, Default)]
pub struct RequirementsCache(OnceLock<Arc<Requirements>>);

impl PartialEq for RequirementsCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl ExistingNode {
    /// The node's labels as requirements, with its hostname.
    pub fn requirements(&self) -> Requirements {
        Requirements::clone(&self.shared_requirements())
    }

    /// [`Self::requirements`], built once per node and shared.
    pub fn shared_requirements(&self) -> Arc<Requirements> {
        Arc::clone(self.requirements_cache.0.get_or_init(|| {
            let mut requirements = Requirements::from_labels(&self.labels);
            if !requirements.has(crate::apis::labels::HOSTNAME_LABEL) {
                requirements.add(
                    crate::apis::labels::HOSTNAME_LABEL,
                    super::requirements::Requirement::in_values([self.name.clone()]),
                );
            }
            Arc::new(requirements)
        }))
    }

    /// The NodePool that owns it, from the `karpenter.sh/nodepool` label.
    pub fn node_pool(&self) -> Option<&str> {
        self.labels.get(crate::apis::labels::NODE_POOL_LABEL).map(String::as_str)
    }
}

/// A pod already running (or nominated) somewhere: it counts for topology.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundPod {
    /// The node it is on.
    pub node_name: String,
    /// The pod.
    pub pod: SchedulablePod,
}

/// A NodePool with the instance types its node class offers.
#[derive(Clone, Debug)]
pub struct NodePoolInput {
    /// The NodePool (Ready, not deleting, not static: filtered by the caller).
    pub node_pool: NodePool,
    /// `cloudProvider.GetInstanceTypes(nodePool)`.
    pub instance_types: Vec<Arc<InstanceType>>,
}

/// Everything a scheduling pass reads.
#[derive(Clone, Debug, Default)]
pub struct SchedulingInput {
    /// Pods to place: pending provisionable pods plus pods of deleting nodes.
    pub pods: Vec<SchedulablePod>,
    /// Existing and in-flight nodes.
    pub existing_nodes: Vec<ExistingNode>,
    /// Pods already on nodes, for topology counts and inverse anti-affinity.
    pub bound_pods: Vec<BoundPod>,
    /// NodePools to provision from.
    pub node_pools: Vec<NodePoolInput>,
    /// DaemonSet pod templates, for per-NodePool overhead.
    pub daemon_set_pods: Vec<SchedulablePod>,
    /// Pass options.
    pub options: SchedulerOptions,
    /// Pods this controller nominated, in an earlier pass, to a node still in flight: pod key
    /// → that node's name in `existing_nodes`. Each goes back there before the queue runs
    /// (see `scheduler_held.rs`), so a re-pass does not deal its room to other pods.
    pub held: BTreeMap<String, String>,
}

impl SchedulingInput {
    /// The input by reference (the NodePools are not part of it: a pass takes them as
    /// [`super::PoolTemplates`]).
    pub fn view(&self) -> SchedulingView<'_> {
        SchedulingView {
            pods: self.pods.iter().collect(),
            existing_nodes: self.existing_nodes.iter().collect(),
            bound_pods: self.bound_pods.iter().collect(),
            daemon_set_pods: &self.daemon_set_pods,
            options: &self.options,
            held: &self.held,
        }
    }
}

/// What a scheduling pass reads, by reference: a consolidation probe schedules a subset of
/// the nodes and pods its disruption pass already holds without deep-copying them (pod shapes
/// are label and requirement maps), once per probe.
#[derive(Clone, Debug)]
pub struct SchedulingView<'a> {
    /// Pods to place.
    pub pods: Vec<&'a SchedulablePod>,
    /// Existing and in-flight nodes.
    pub existing_nodes: Vec<&'a ExistingNode>,
    /// Pods already on nodes.
    pub bound_pods: Vec<&'a BoundPod>,
    /// DaemonSet pod templates.
    pub daemon_set_pods: &'a [SchedulablePod],
    /// Pass options.
    pub options: &'a SchedulerOptions,
    /// Pods held on the in-flight node they were nominated to ([`SchedulingInput::held`]).
    pub held: &'a BTreeMap<String, String>,
}
