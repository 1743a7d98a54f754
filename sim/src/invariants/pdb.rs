//! `pdb`: no eviction or pod delete sent by the controller takes a PodDisruptionBudget
//! below its budget (judged on the cluster just before the request; see [`super::disruptions`]),
//! unless its node's terminationGracePeriod has come, which overrides PDBs by design.

use super::{Ctx, Invariant, Violation};

/// The invariant.
pub struct PdbRespected;

impl Invariant for PdbRespected {
    fn name(&self) -> &'static str {
        "pdb"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        for d in &ctx.recorded.pods {
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
    }
}
