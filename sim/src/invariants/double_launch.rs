//! `doubleLaunch`: one NodeClaim, one instance. It is a double launch when
//! - a CreateFleet launched more instances than the capacity it asked for (the controller
//!   asks for one instance per NodeClaim, batched: N claims, target N), seen from the
//!   cloud's side because Karpenter tags `karpenter.sh/nodeclaim` only after registration,
//!   so a twin carries nothing that names its claim;
//! - two live instances are tagged with the same `karpenter.sh/nodeclaim`;
//! - a NodeClaim's providerID changes;
//! - two NodeClaims name the same instance (`status.providerID`): each claim is one
//!   launch (core `nodeclaim/lifecycle/launch.go` sets providerID from its own Create), and
//!   Karpenter adopts no instance for a second claim, so a shared providerID means two
//!   claims would drain, bill and terminate one machine (e.g. a launch answer mapped to the
//!   wrong claim of a batched CreateFleet).

use std::collections::{BTreeMap, BTreeSet};

use super::{Ctx, Invariant, Violation};
use crate::oracle::view::View;

/// The invariant; reports each claim once.
#[derive(Default)]
pub struct DoubleLaunch {
    reported: BTreeSet<String>,
    provider_ids: BTreeMap<String, String>,
    reported_fleets: BTreeSet<String>,
}

impl Invariant for DoubleLaunch {
    fn name(&self) -> &'static str {
        "doubleLaunch"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        self.check_fleets(ctx, out);
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
        for (pid, claims) in shared_instances(ctx.view) {
            if self.reported.insert(format!("instance {pid}")) {
                out.push(Violation {
                    invariant: self.name().into(),
                    at: ctx.view.now,
                    objects: claims.iter().map(|c| format!("NodeClaim {c}")).collect(),
                    message: format!("NodeClaims {} all name instance {pid}", claims.join(", ")),
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

/// Each providerID named by more than one NodeClaim, with those claims' names (sorted).
pub(crate) fn shared_instances(view: &View) -> Vec<(&str, Vec<&str>)> {
    let mut by_instance: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in view.claims.values() {
        if let Some(pid) = c.provider_id.as_deref() {
            by_instance.entry(pid).or_default().push(c.name.as_str());
        }
    }
    by_instance.into_iter().filter(|(_, claims)| claims.len() > 1).collect()
}

impl DoubleLaunch {
    /// Fleets that launched more instances (live or not) than their target capacity.
    fn check_fleets(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let mut by_fleet: BTreeMap<&str, (u32, Vec<&str>)> = BTreeMap::new();
        for i in &ctx.view.instances {
            if let Some((fleet, target)) = &i.fleet {
                by_fleet.entry(fleet.as_str()).or_insert((*target, Vec::new())).1.push(i.id.as_str());
            }
        }
        let owners: BTreeMap<&str, &str> =
            ctx.view.claims.values().filter_map(|c| c.provider_id.as_deref().map(|p| (p, c.name.as_str()))).collect();
        for (fleet, (target, ids)) in by_fleet {
            if ids.len() <= target as usize || !self.reported_fleets.insert(fleet.to_string()) {
                continue;
            }
            let mut objects = Vec::new();
            let mut claims = Vec::new();
            for i in ctx.view.instances.iter().filter(|i| ids.contains(&i.id.as_str())) {
                if let Some(claim) = owners.get(i.provider_id.as_str()) {
                    objects.push(format!("NodeClaim {claim}"));
                    claims.push(format!("{} owns {}", claim, i.id));
                }
            }
            objects.extend(ids.iter().map(|id| format!("Instance {id}")));
            let owned = if claims.is_empty() { String::new() } else { format!(" ({})", claims.join(", ")) };
            out.push(Violation {
                invariant: self.name().into(),
                at: ctx.view.now,
                objects,
                message: format!(
                    "CreateFleet {fleet} asked for {target} instance(s) and launched {}: {}{owned}",
                    ids.len(),
                    ids.join(", ")
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shared_instances;
    use crate::oracle::view::{ClaimView, View};

    fn view(claims: &[(&str, &str)]) -> View {
        let mut view = View::default();
        for (name, pid) in claims {
            view.claims.insert((*name).into(), ClaimView::for_test(name, "default", pid));
        }
        view
    }

    #[test]
    fn two_claims_naming_one_instance_are_reported() {
        let v = view(&[("a", "aws:///z/i-1"), ("b", "aws:///z/i-1"), ("c", "aws:///z/i-2")]);
        assert_eq!(shared_instances(&v), vec![("aws:///z/i-1", vec!["a", "b"])]);
    }

    #[test]
    fn claims_on_their_own_instances_or_not_launched_are_not() {
        let mut v = view(&[("a", "aws:///z/i-1"), ("b", "aws:///z/i-2")]);
        let mut pending = ClaimView::for_test("c", "default", "unused");
        pending.provider_id = None;
        v.claims.insert("c".into(), pending.clone());
        v.claims.insert("d".into(), ClaimView { name: "d".into(), ..pending });
        assert!(shared_instances(&v).is_empty(), "two claims without providerID share nothing");
    }
}
