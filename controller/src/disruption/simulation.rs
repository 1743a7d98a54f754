//! `SimulateScheduling` (karpenter-behaviour.md §5.6 step 1): re-run the provisioning
//! scheduler as if the candidates were gone. Their reschedulable pods join the pods that need a
//! place anyway (pending pods, pods of deleting nodes); the candidates leave the existing nodes
//! and their pods leave the topology counts. The simulation fails when a pod that is running
//! now would not schedule, or when a candidate's pod would only fit on a node that is not
//! initialized yet. Pods of nodes already being deleted may land on uninitialized nodes: those
//! are the replacements an earlier command (or the provisioner) launched for them, so concurrent
//! drift and consolidation commands do not wait for each other's replacements (core
//! `pkg/controllers/disruption/helpers.go` l. 133-151, `SimulateScheduling`).

use std::collections::BTreeSet;

use super::candidates::Candidate;
use super::input::DisruptionInput;
use crate::scheduling::{ClusterBase, PoolTemplates, Results, schedule_without};

/// Why the candidates' pods would not all find a place elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimulationError {
    /// A running pod would not schedule at all.
    #[error("not all pods would schedule, {pod} => {reason}")]
    PodWouldNotSchedule {
        /// The pod, `namespace/name`.
        pod: String,
        /// The scheduler's reason.
        reason: String,
    },
    /// A running pod would only fit on a node that is not initialized yet.
    #[error("not all pods would schedule, {pod} => would schedule against uninitialized node {node}")]
    UninitializedNode {
        /// The pod, `namespace/name`.
        pod: String,
        /// The uninitialized node.
        node: String,
    },
}

/// Runs the scheduler without `candidates`.
///
/// # Errors
/// The first running pod that would not find a place.
pub fn simulate(input: &DisruptionInput, candidates: &[&Candidate]) -> Result<Results, SimulationError> {
    simulate_with(input, &Probes::new(input), candidates)
}

/// What every simulation of one disruption pass shares, built once per pass: the NodePools'
/// templates (they depend only on its NodePools, DaemonSets and minValues policy) and the
/// scheduler's view of the whole cluster, from which each probe only removes its candidates
/// (a decision at 2,000 nodes probes ~7 times; docs/benchmarks-measured.md "Session 20").
pub struct Probes<'a> {
    templates: PoolTemplates,
    base: ClusterBase<'a>,
}

impl<'a> Probes<'a> {
    /// The shared part of `input`'s simulations.
    pub fn new(input: &'a DisruptionInput) -> Self {
        let templates =
            PoolTemplates::new(&input.pools, &input.daemon_set_pods, input.options.scheduler.min_values_policy);
        let base = ClusterBase::new(
            &input.existing,
            &input.bound,
            &input.daemon_set_pods,
            &input.options.scheduler,
            &templates,
        );
        Self { templates, base }
    }
}

/// [`simulate`] with the pass's [`Probes`]`::new(input)` built already.
///
/// # Errors
/// The first running pod that would not find a place.
pub fn simulate_with(
    input: &DisruptionInput,
    probes: &Probes<'_>,
    candidates: &[&Candidate],
) -> Result<Results, SimulationError> {
    // A node (and the pods bound to it) is left out when its name is a candidate's claim or
    // node name.
    let removed: BTreeSet<&str> = candidates.iter().flat_map(|c| [c.name.as_str(), c.node_name.as_str()]).collect();
    let without = probes.base.without(removed.iter().copied());
    let uninitialized: BTreeSet<&str> = probes
        .base
        .remaining_nodes(&without)
        .filter(|n| !n.initialized && !n.marked_for_deletion)
        .map(|n| n.name.as_str())
        .collect();
    let pods = input.must_place.iter().chain(candidates.iter().flat_map(|c| c.schedulable.iter())).collect();
    // By reference: nothing of the pass's snapshot is copied per probe. Pending pods are
    // re-packed as upstream does: none is held on the in-flight node the provisioner
    // nominated it to (that is the provisioner's own pass, `scheduling/scheduler_held.rs`).
    let results = schedule_without(&probes.base, &without, pods, &probes.templates);
    if let Some((pod, error)) = results.pod_errors.iter().find(|(key, _)| !input.pending_keys.contains(*key)) {
        return Err(SimulationError::PodWouldNotSchedule { pod: pod.clone(), reason: error.to_string() });
    }
    // Core helpers.go l. 140-149: "Only add a pod scheduling error if it isn't on an already
    // deleting node"; pending pods' errors are dropped by `AllNonPendingPodsScheduled`
    // (scheduling/scheduler.go l. 388).
    let may_wait = |pod: &String| input.pending_keys.contains(pod) || input.deleting_node_pod_keys.contains(pod);
    for (node, pods) in &results.existing_node_assignments {
        if uninitialized.contains(node.as_str())
            && let Some(pod) = pods.iter().find(|p| !may_wait(p))
        {
            return Err(SimulationError::UninitializedNode { pod: pod.clone(), node: node.clone() });
        }
    }
    Ok(results)
}
