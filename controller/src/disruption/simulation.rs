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
use crate::scheduling::{PoolTemplates, Results, SchedulingView, schedule_with};

/// A disruption probe re-packs pending pods as upstream does: none is held on the in-flight
/// node the provisioner nominated it to (that is the provisioner's own pass,
/// `scheduling/scheduler_held.rs`).
static NOTHING_HELD: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

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
    simulate_with(input, &pool_templates(input), candidates)
}

/// The NodePools' templates every simulation of `input` schedules with (they depend only on
/// its NodePools, DaemonSets and minValues policy): built once per pass, shared by its probes.
pub fn pool_templates(input: &DisruptionInput) -> PoolTemplates {
    PoolTemplates::new(&input.pools, &input.daemon_set_pods, input.options.scheduler.min_values_policy)
}

/// [`simulate`] with `templates` = [`pool_templates`]`(input)` built already.
///
/// # Errors
/// The first running pod that would not find a place.
pub fn simulate_with(
    input: &DisruptionInput,
    templates: &PoolTemplates,
    candidates: &[&Candidate],
) -> Result<Results, SimulationError> {
    let removed: BTreeSet<&str> = candidates.iter().flat_map(|c| [c.name.as_str(), c.node_name.as_str()]).collect();
    // A node (and the pods bound to it) is left out when its name is in `removed`: marked by
    // index from the input's name index, so the probe makes one lookup per removed name
    // rather than one per node and per bound pod.
    let mut gone = vec![false; input.existing.len()];
    for name in &removed {
        for &index in input.existing_by_name.get(*name).into_iter().flatten() {
            gone[index] = true;
        }
    }
    let existing: Vec<_> = input.existing.iter().zip(&gone).filter(|(_, gone)| !**gone).map(|(n, _)| n).collect();
    let uninitialized: BTreeSet<&str> = existing
        .iter()
        .copied()
        .filter(|n| !n.initialized && !n.marked_for_deletion)
        .map(|n| n.name.as_str())
        .collect();
    let bound = input
        .bound
        .iter()
        .zip(&input.bound_node)
        .filter(|(b, node)| match node {
            Some(index) => !gone[*index],
            None => !removed.contains(b.node_name.as_str()),
        })
        .map(|(b, _)| b)
        .collect();
    let pods = input.must_place.iter().chain(candidates.iter().flat_map(|c| c.schedulable.iter())).collect();
    // By reference: nothing of the pass's snapshot is copied per probe.
    let scheduling = SchedulingView {
        pods,
        existing_nodes: existing,
        bound_pods: bound,
        daemon_set_pods: &input.daemon_set_pods,
        options: &input.options.scheduler,
        held: &NOTHING_HELD,
    };
    let results = schedule_with(&scheduling, templates);
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
