//! Pods held on the in-flight node they were nominated to (a deliberate deviation ahead of
//! upstream; karpenter#3121, fix proposed in kubernetes-sigs/karpenter PR #3243).
//!
//! Upstream re-simulates every pending pod on each provisioning pass (core
//! `provisioning/provisioner.go` `GetPendingPods`, l. 196–225) and an in-flight node's room
//! subtracts only pods *bound* to it, so a re-pass deals the in-flight room again in queue
//! order (pods by size, creation, UID: `scheduling/queue.go` l. 79–117; nodes initialized
//! first, then by name: `scheduler.go` `sortExistingNodes`, l. 845–857). When the earliest
//! pods of the queue take the room another pod was nominated to, and that pod cannot go
//! anywhere else it is allowed (a zone spread, an anti-affinity), the pass opens a new claim
//! for it, and the next pass may do it again: karpenter#3121, still open upstream, where each
//! 10 s loop adds claims for pods "already claimed by the initial NodeClaims".
//!
//! Dovetail's provisioner remembers, per pod, the in-flight node its last pass nominated it to
//! (`state::Memory::held_pods`); before the queue runs, each such pod, in queue order, goes
//! back to that node if it still fits there (its preferences relaxed as the queue would),
//! and is recorded in the topology like any placement, so later pods see it. A pod that no
//! longer fits goes through the queue as upstream's would. PR #3243 instead leaves such pods
//! out of the pass altogether, which hides them from the topology counts of pods placed
//! beside them; holding them keeps the counts whole.

use super::super::preferences::relax;
use super::Pass;

impl Pass<'_> {
    /// Places each held pod on its node if it fits there; returns the pods placed.
    pub(super) fn place_held(&mut self, order: &[usize]) -> Vec<bool> {
        let mut placed = vec![false; self.input.pods.len()];
        if self.input.held.is_empty() {
            return placed;
        }
        let index_of: std::collections::BTreeMap<&str, usize> =
            self.existing.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
        let targets: Vec<(usize, usize)> = order
            .iter()
            .filter_map(|&pod| {
                let node = self.input.held.get(&self.input.pods[pod].key)?;
                Some((pod, *index_of.get(node.as_str())?))
            })
            .collect();
        for (pod, index) in targets {
            placed[pod] = self.hold(pod, index);
        }
        placed
    }

    /// Tries `pod` on existing node `index`, relaxing its preferences one at a time; on
    /// failure its shape is restored for the queue.
    fn hold(&mut self, pod: usize, index: usize) -> bool {
        let original = self.pod_shape[pod];
        loop {
            let shape_id = self.pod_shape[pod];
            let shape = &self.shapes.shapes[shape_id];
            let requirements = &self.shapes.requirements[shape_id];
            if self.existing[index].can_add(&mut self.topology, shape_id, shape, requirements).is_ok() {
                let node = &mut self.existing[index];
                node.commit(pod, shape);
                let node_requirements = node.requirements.clone();
                self.topology.record(shape_id, shape, &node_requirements, &self.existing_taints[index]);
                return true;
            }
            let mut relaxed = self.shapes.shapes[shape_id].clone();
            if relax(&mut relaxed, self.tolerate_prefer_no_schedule).is_none() {
                self.pod_shape[pod] = original;
                return false;
            }
            self.topology.ensure_groups(&relaxed);
            self.pod_shape[pod] = self.shapes.intern(&relaxed);
        }
    }
}
