//! `convergence`: at the end of the run — the Liveness phase, after every fault healed —
//! the cluster has converged. Judged once, at the end:
//!
//! - no pending pod that an allowed offering could host (the same test as
//!   [`super::stranded_pods`]);
//! - no NodeClaim that never initialized;
//! - no NodeClaim still deleting past its NodePool's `terminationGracePeriod` (upstream's
//!   only bound on a drain: `kubernetes-sigs/karpenter`
//!   `pkg/controllers/node/termination/terminator/terminator.go` deletes pods whose
//!   grace period would outlive the node's deadline);
//! - no NodeClaim whose instance is gone (upstream's NodeClaim garbage collection,
//!   `pkg/controllers/nodeclaim/garbagecollection/controller.go`, deletes those), and no
//!   live instance the controller launched that no NodeClaim owns (the provider's
//!   instance garbage collection, `aws/karpenter-provider-aws`
//!   `pkg/controllers/nodeclaim/garbagecollection/controller.go`);
//! - no consolidation move Karpenter's rules allow ([`crate::oracle::moves`]) that has
//!   been open since before the cutoff and longer than `untakenMoves`' allowance
//!   (judged when `untakenMoves` is enabled);
//! - no drifted NodeClaim that the checker's drift clock ([`super::drift_convergence`])
//!   holds overdue and unblocked since before the cutoff (judged when `driftConvergence` is
//!   enabled).
//!
//! The one excuse: something that went wrong late had no time to converge. A problem is
//! judged only when it has lasted since before the *cutoff*: the earlier of
//! `phases.livenessFrom` (by which the scenario says the cluster must have converged) and
//! the end minus `convergence.within`. A pod created, or a claim launched, after the
//! cutoff is not judged.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::stranded_pods::{HostingPass, hosting_offering, pool_offerings, waits_for_a_node};
use super::{Ctx, Invariant, Phase, Violation, format_duration};
use dovetail_world::SimDuration;

/// Most objects named in one violation (the message gives the count).
const MAX_NAMED: usize = 10;

/// The invariant.
#[derive(Default)]
pub struct Convergence {
    /// When the Liveness phase began, if it did.
    liveness_from: Option<Duration>,
    /// Claims (not deleting) whose instance is gone, with when that was first seen.
    lost_instance: BTreeMap<String, Duration>,
}

impl Convergence {
    /// Problems that started at or before this are judged.
    fn cutoff(&self, ctx: &Ctx<'_>) -> Duration {
        let end = ctx.view.now;
        let within = end.saturating_sub(ctx.config.convergence.within.0);
        self.liveness_from.map_or(within, |l| l.min(within))
    }
}

/// A NodePool's `spec.template.spec.terminationGracePeriod` (none when unset).
fn termination_grace_period(pool: &Value) -> Option<Duration> {
    let s = pool.pointer("/spec/template/spec/terminationGracePeriod")?.as_str()?;
    SimDuration::parse(s).ok().map(|d| d.0)
}

impl Invariant for Convergence {
    fn name(&self) -> &'static str {
        "convergence"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let _ = out;
        let now = ctx.view.now;
        if ctx.phase == Phase::Liveness && self.liveness_from.is_none() {
            self.liveness_from = Some(now);
        }
        let lost: Vec<&str> = ctx
            .view
            .claims
            .values()
            .filter(|c| c.deleting_since.is_none() && c.provider_id.is_some())
            .filter(|c| ctx.view.instance_of(c).is_none_or(|i| !i.live))
            .map(|c| c.name.as_str())
            .collect();
        self.lost_instance.retain(|name, _| lost.contains(&name.as_str()));
        for name in lost {
            self.lost_instance.entry(name.to_string()).or_insert(now);
        }
    }

    fn finish(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let view = ctx.view;
        let end = view.now;
        let cutoff = self.cutoff(ctx);
        let mut report = |what: String, objects: Vec<String>| {
            if objects.is_empty() {
                return;
            }
            out.push(Violation {
                invariant: "convergence".into(),
                at: end,
                message: format!(
                    "{} {what} at the end of the run, since before {} (the cluster had until the end to converge)",
                    objects.len(),
                    format_duration(cutoff)
                ),
                objects: objects.into_iter().take(MAX_NAMED).collect(),
                trace_position: view.trace_position,
            });
        };

        let waiting: Vec<_> = ctx.pods.iter().filter(|p| waits_for_a_node(p) && p.created <= cutoff).collect();
        if !waiting.is_empty() {
            let offerings = pool_offerings(ctx);
            let pass = HostingPass::new(ctx);
            let hostable = waiting
                .into_iter()
                .filter_map(|p| hosting_offering(&pass, &offerings, p).map(|o| format!("Pod {} (fits {o})", p.key)))
                .collect();
            report("hostable pod(s) still pending".into(), hostable);
        }

        let uninitialized = view
            .claims
            .values()
            .filter(|c| c.deleting_since.is_none() && !c.initialized && c.created <= cutoff)
            .map(|c| format!("NodeClaim {}", c.name))
            .collect();
        report("NodeClaim(s) never initialized".into(), uninitialized);

        let deleting = view
            .claims
            .values()
            .filter(|c| {
                let grace =
                    view.pools.get(&c.nodepool).and_then(|p| termination_grace_period(&p.object)).unwrap_or_default();
                c.deleting_since.is_some_and(|d| d + grace <= cutoff)
            })
            .map(|c| format!("NodeClaim {}", c.name))
            .collect();
        report("NodeClaim(s) still deleting past their NodePool's terminationGracePeriod".into(), deleting);

        let lost = self
            .lost_instance
            .iter()
            .filter(|(name, since)| {
                **since <= cutoff && view.claims.get(*name).is_some_and(|c| c.deleting_since.is_none())
            })
            .map(|(name, _)| format!("NodeClaim {name}"))
            .collect();
        report("NodeClaim(s) whose instance is gone".into(), lost);

        let owned: Vec<&str> = view.claims.values().filter_map(|c| c.provider_id.as_deref()).collect();
        let leaked = view
            .instances
            .iter()
            .filter(|i| i.live && (i.nodepool.is_some() || i.nodeclaim.is_some()))
            .filter(|i| !owned.contains(&i.provider_id.as_str()))
            .filter(|i| {
                let launching =
                    i.nodeclaim.as_ref().and_then(|t| view.claims.get(t)).is_some_and(|c| c.provider_id.is_none());
                !launching && i.launched <= cutoff
            })
            .map(|i| format!("Instance {}", i.id))
            .collect();
        report("instance(s) the controller launched that no NodeClaim owns".into(), leaked);

        if ctx.config.drift_convergence.enabled {
            let overdue = ctx
                .drift_overdue
                .iter()
                .filter(|o| o.since <= cutoff)
                .map(|o| format!("NodeClaim {}", o.claim))
                .collect();
            report(
                "drifted NodeClaim(s) not replaced though their Drifted budget allowed it and nothing blocked them"
                    .into(),
                overdue,
            );
        }

        if let Some(end_of_run) = ctx.end.filter(|_| ctx.config.untaken_moves.enabled) {
            let untaken: Vec<_> = end_of_run
                .open_moves
                .iter()
                .filter(|(_, since)| *since <= cutoff && end.saturating_sub(*since) > end_of_run.moves_allowance)
                .collect();
            if let Some((first, since)) = untaken.first() {
                out.push(Violation {
                    invariant: "convergence".into(),
                    at: end,
                    message: format!(
                        "{} consolidation move(s) Karpenter's rules allow still untaken at the end of the run, open since before {} (e.g. {}, open since {})",
                        untaken.len(),
                        format_duration(cutoff),
                        first.describe(),
                        format_duration(*since)
                    ),
                    objects: untaken
                        .iter()
                        .flat_map(|(m, _)| m.nodes.iter().map(|n| format!("Node {n}")))
                        .take(MAX_NAMED)
                        .collect(),
                    trace_position: view.trace_position,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pools_grace_period_bounds_its_drains() {
        let pool = serde_json::json!({"spec": {"template": {"spec": {"terminationGracePeriod": "5m"}}}});
        assert_eq!(termination_grace_period(&pool), Some(Duration::from_secs(300)));
        assert_eq!(termination_grace_period(&serde_json::json!({"spec": {}})), None);
    }
}
