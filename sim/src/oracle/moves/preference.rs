//! The preferred node-affinity term Karpenter's consolidation simulation holds a pod to.
//!
//! Upstream simulates a consolidation with the provisioner's scheduler (core
//! `pkg/controllers/disruption/helpers.go` `SimulateScheduling`), which treats a pod's
//! heaviest preferred node-affinity term as required (`pkg/scheduling/requirements.go:95-101`
//! `newPodRequirements`) and tries the existing nodes, then in-flight NodeClaims, then a new
//! NodeClaim from the NodePools' templates, all with that term in force
//! (`pkg/controllers/provisioning/scheduling/scheduler.go:582-611` `add`); only when all of
//! them fail does it drop the term and try again (`trySchedule`, `scheduler.go:521-551`,
//! `preferences.go` `Relax`). So a pod preferring spot on a spot node whose only room
//! elsewhere is on an on-demand node gets a new spot NodeClaim in the simulation: the
//! command becomes a replace (`consolidation.go` `computeConsolidation`), not a delete.
//!
//! The oracle holds a pod to the heaviest term some NodePool could launch a node for
//! ([`super::replacement::Replacements::could_launch`], loose: any offering the pod and
//! the term accept, ignoring size and limits). A lighter term than upstream's would be is
//! never chosen, so the packing only ever places the pod where upstream may place it, or
//! fails where upstream might succeed after relaxing: the oracle may miss a move, never
//! claim one upstream does not find. A term no pool can launch binds nothing (upstream
//! relaxes it once the new NodeClaim fails; the oracle then ignores the heavier terms an
//! existing node might satisfy, which again can only lose moves).

use std::collections::BTreeMap;

use super::host::Host;
use super::replacement::Replacements;
use crate::oracle::node_preference::preferred_terms;
use crate::oracle::view::PoolView;

/// Sets [`super::host::Movable::preferred`] for every movable pod of `hosts` that has
/// preferred node-affinity terms; `replacements` gives the pools' offerings (built only
/// when some pod has such terms).
pub fn bind<'r>(
    hosts: &mut [Host],
    pools: &BTreeMap<String, PoolView>,
    replacements: impl Fn() -> &'r Replacements<'r>,
) {
    for host in hosts {
        for pod in &mut host.movable {
            let terms = preferred_terms(&pod.object);
            if terms.is_empty() {
                continue;
            }
            let r = replacements();
            pod.preferred = terms.into_iter().find(|term| pools.keys().any(|name| r.could_launch(name, pod, term)));
        }
    }
}
