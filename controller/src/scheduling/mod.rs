//! Karpenter's scheduling simulation: given pending pods, existing nodes and NodePools with
//! their instance types, decide which pods go to existing nodes and which new NodeClaims to
//! launch (karpenter-behaviour.md §2.3). It is a pure function of a [`SchedulingInput`]
//! snapshot, so the provisioner runs it on cluster state and the disruption controller re-runs
//! it without its candidates.
//!
//! Start with [`schedule`]. The parts, one concept per file:
//! [`requirements`] (label-set algebra with minValues), [`resources`] (integer quantities),
//! [`taints`], [`pod`] (a pod's constraints), [`topology`] (spread and pod (anti-)affinity
//! counts), [`template`] (a NodePool ready to stamp claims), [`nodeclaim`] (a claim being
//! packed), [`existing`] (an existing node as a target), [`preferences`] (relaxation order),
//! [`instance_selection`] (minValues, cheapest-first truncation), [`snapshot`] (input) and
//! [`results`] (output).

#![warn(missing_docs)]

pub mod daemon_overhead;
pub mod existing;
pub mod instance_selection;
pub mod nodeclaim;
pub mod pod;
pub mod preferences;
pub mod requirements;
pub mod resources;
pub mod results;
pub mod scheduler;
pub mod snapshot;
pub mod taints;
pub mod template;
pub mod topology;

#[cfg(test)]
mod tests;

pub use instance_selection::{
    MAX_INSTANCE_TYPES_ON_CLAIM, MAX_INSTANCE_TYPES_TO_FLEET, MinValuesPolicy, truncate_instance_types,
};
pub use pod::{AffinityTerm, HostPort, LabelSelector, Namespaces, PodShape, SchedulablePod, TopologySpread};
pub use requirements::{Requirement, Requirements};
pub use resources::Resources;
pub use results::{PlannedNodeClaim, Results};
pub use scheduler::{ClusterBase, Without, schedule, schedule_with, schedule_without};
pub use snapshot::{
    BoundPod, ExistingNode, NodePoolInput, PreferencePolicy, RequirementsCache, SchedulerOptions, SchedulingInput,
    SchedulingView,
};
pub use taints::{Taint, TaintEffect, Toleration};
pub use template::PoolTemplates;
