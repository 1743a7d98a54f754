//! An existing or in-flight node as a placement target (core `existingnode.go`): fixed
//! allocatable and labels, so only what is left over matters.

use std::sync::Arc;

use super::daemon_overhead::due_on_node;
use super::nodeclaim::{AddError, describe};
use super::pod::{HostPort, PodShape, SchedulablePod};
use super::requirements::Requirements;
use super::resources::Resources;
use super::snapshot::ExistingNode;
use super::taints::{Taint, untolerated};
use super::topology::Topology;
use crate::apis::labels::is_known_ephemeral_taint;

/// Placement state of one existing node during the pass.
#[derive(Clone, Debug)]
pub struct ExistingNodeState {
    /// Node name.
    pub name: String,
    /// Labels as requirements (with hostname), shared with the node's cache.
    pub requirements: Arc<Requirements>,
    /// Taints pods must tolerate now (ephemeral and startup taints dropped while uninitialized).
    pub taints: Vec<Taint>,
    /// Allocatable minus everything already requested.
    pub remaining: Resources,
    /// Host ports in use.
    pub host_ports: Vec<HostPort>,
    /// Pods placed on it in this pass.
    pub pods: Vec<usize>,
}

impl ExistingNodeState {
    /// Placement state from the snapshot. `daemons` are the DaemonSets' pod templates: those
    /// compatible with the node whose pods have not bound yet keep their room (core
    /// `existingnode.go` `NewExistingNode` l. 47-66, `scheduler.go` l. 792-831).
    pub fn new(node: &ExistingNode, daemons: &[SchedulablePod]) -> Self {
        let taints: Vec<Taint> = node
            .taints
            .iter()
            .filter(|t| {
                node.initialized
                    || !(is_known_ephemeral_taint(&t.key, t.effect.as_str()) || node.startup_taints.contains(t))
            })
            .cloned()
            .collect();
        let requirements = node.shared_requirements();
        let mut remaining = node.allocatable.clone();
        remaining.sub(&node.requested);
        remaining.sub(&due_on_node(&requirements, &taints, &node.daemon_requests, daemons));
        Self {
            name: node.name.clone(),
            requirements,
            taints,
            remaining,
            host_ports: node.host_ports.clone(),
            pods: Vec::new(),
        }
    }

    /// Checks, in core's order: taints, host ports, resources, requirements, topology.
    /// On success returns the node's requirements for topology recording.
    pub fn can_add(
        &self,
        topology: &mut Topology,
        shape_id: usize,
        shape: &PodShape,
        pod_requirements: &Requirements,
    ) -> Result<(), AddError> {
        if let Some(reason) = untolerated(&self.taints, &shape.tolerations) {
            return Err(AddError::permanent(reason));
        }
        if let Some(port) = shape.host_ports.iter().find(|p| self.host_ports.iter().any(|q| q.conflicts(p))) {
            return Err(AddError::permanent(format!("host port {}/{} is already in use", port.port, port.protocol)));
        }
        if !shape.requests.fits_in(&self.remaining) {
            return Err(AddError::permanent(format!(
                "exceeds node resources: requested {}, remaining {}",
                describe(&shape.requests),
                describe(&self.remaining)
            )));
        }
        self.requirements
            .compatible_strict(pod_requirements)
            .map_err(|e| AddError::permanent(format!("incompatible requirements, {e}")))?;
        // Core `existingnode.go` `CanAdd` l. 108-138: the node must meet one of the pod's
        // volume topology alternatives (a zonal volume's zone); its labels are final.
        if !shape.volume_requirements.is_empty() {
            let mut last = None;
            let fits =
                shape.volume_requirements.iter().any(|volume| match self.requirements.compatible_strict(volume) {
                    Ok(()) => true,
                    Err(e) => {
                        last = Some(e);
                        false
                    }
                });
            if !fits {
                let e = last.expect("at least one volume alternative was tried");
                return Err(AddError::permanent(format!("incompatible volume requirements, {e}")));
            }
        }
        let topology_requirements = topology
            .add_requirements(shape_id, shape, pod_requirements, &self.requirements, None)
            .map_err(|e| AddError { message: e.message, permanent: e.permanent })?;
        self.requirements
            .compatible(&topology_requirements)
            .map_err(|e| AddError::transient(format!("incompatible topology requirements, {e}")))
    }

    /// Applies an accepted pod.
    pub fn commit(&mut self, pod_index: usize, shape: &PodShape) {
        self.remaining.sub(&shape.requests);
        self.host_ports.extend(shape.host_ports.iter().cloned());
        self.pods.push(pod_index);
    }
}
