//! `pdb`: no pod the controller takes down breaks its PodDisruptionBudget: not by an eviction
//! or pod delete it sends (judged on the cluster just before the request; see
//! [`super::disruptions`]), and not by removing the pod's Node or terminating its instance
//! while the pod still runs there (see [`super::pod_losses`]) — unless the node's
//! terminationGracePeriod has come, which overrides PDBs by design (computed from the
//! NodeClaim's deletionTimestamp and the pool's `terminationGracePeriod`) — or the cloud's
//! status checks have made the termination forceful (a system or instance check failed for
//! 2 minutes, [`crate::oracle::protection::failed_check_forces`]).

use super::pod_losses::PodLosses;
use super::{Ctx, Invariant, Violation};
use crate::oracle::protection::failed_check_forces;

/// The invariant.
#[derive(Default)]
pub struct PdbRespected {
    losses: PodLosses,
}

impl Invariant for PdbRespected {
    fn name(&self) -> &'static str {
        "pdb"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        for d in &ctx.recorded.pods {
            if d.provider_id.as_deref().is_some_and(|p| failed_check_forces(ctx.cloud, p, d.at)) {
                continue;
            }
            for b in &d.pdb_breaches {
                let mut objects = vec![format!("Pod {}", d.pod), format!("PodDisruptionBudget {}", b.pdb)];
                objects.extend(d.node.as_ref().map(|n| format!("Node {n}")));
                out.push(Violation {
                    invariant: self.name().into(),
                    at: d.at,
                    objects,
                    message: format!(
                        "{} {}d pod {} while its PDB {} had {} healthy pods and needs {}",
                        d.host,
                        if d.verb == "evict" { "evicte" } else { "delete" },
                        d.pod,
                        b.pdb,
                        b.healthy,
                        b.desired
                    ),
                    trace_position: d.trace_position,
                });
            }
        }
        for loss in self.losses.tick(ctx) {
            for b in &loss.pdb_breaches {
                let mut objects = vec![format!("PodDisruptionBudget {}", b.pdb), format!("Node {}", loss.node)];
                objects.extend(loss.pods.iter().map(|p| format!("Pod {p}")));
                out.push(Violation {
                    invariant: self.name().into(),
                    at: loss.at,
                    objects,
                    message: format!(
                        "{} with pods {} still running on it while their PDB {} had {} healthy pods and needs {}",
                        loss.how,
                        loss.pods.join(", "),
                        b.pdb,
                        b.healthy,
                        b.desired
                    ),
                    trace_position: loss.trace_position,
                });
            }
        }
    }
}
