//! `doubleLaunch`: one NodeClaim, one instance. Two live instances tagged with the same
//! `karpenter.sh/nodeclaim`, or a NodeClaim whose providerID changes, is a double launch.

use std::collections::{BTreeMap, BTreeSet};

use super::{Ctx, Invariant, Violation};

/// The invariant; reports each claim once.
#[derive(Default)]
pub struct DoubleLaunch {
    reported: BTreeSet<String>,
    provider_ids: BTreeMap<String, String>,
}

impl Invariant for DoubleLaunch {
    fn name(&self) -> &'static str {
        "doubleLaunch"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let mut by_claim: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for i in ctx.view.instances.iter().filter(|i| i.live) {
            if let Some(c) = &i.nodeclaim {
                by_claim.entry(c.as_str()).or_default().push(i.id.as_str());
            }
        }
        for (claim, ids) in by_claim {
            if ids.len() > 1 && self.reported.insert(claim.to_string()) {
                let mut objects = vec![format!("NodeClaim {claim}")];
                objects.extend(ids.iter().map(|id| format!("Instance {id}")));
                out.push(Violation {
                    invariant: self.name().into(),
                    at: ctx.view.now,
                    objects,
                    message: format!(
                        "{} live instances are tagged for NodeClaim {claim}: {}",
                        ids.len(),
                        ids.join(", ")
                    ),
                    trace_position: ctx.view.trace_position,
                });
            }
        }
        for c in ctx.view.claims.values() {
            let Some(pid) = &c.provider_id else { continue };
            match self.provider_ids.get(&c.uid) {
                Some(old) if old != pid => {
                    if self.reported.insert(c.name.clone()) {
                        out.push(Violation {
                            invariant: self.name().into(),
                            at: ctx.view.now,
                            objects: vec![format!("NodeClaim {}", c.name)],
                            message: format!("NodeClaim {} changed providerID from {old} to {pid}", c.name),
                            trace_position: ctx.view.trace_position,
                        });
                    }
                }
                Some(_) => {}
                None => {
                    self.provider_ids.insert(c.uid.clone(), pid.clone());
                }
            }
        }
    }
}
