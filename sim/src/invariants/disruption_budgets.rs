//! `disruptionBudgets`: the nodes the controller is voluntarily disrupting in a NodePool
//! never exceed what its `spec.disruption.budgets` allow (see [`crate::oracle::budget`] for the
//! arithmetic).
//!
//! Counted like Karpenter: `numNodes` is the pool's initialized claims not yet
//! InstanceTerminating; a claim is disrupting when it or its Node is being deleted or the
//! Node carries `karpenter.sh/disrupted`. Disruptions budgets do not govern are left out:
//! deletions a non-controller host started (a person, a test driver), instances the cloud
//! is taking away (spot reclaim, scheduled events, outages) and expiration.
//!
//! Two checks. At every tick the disrupting nodes stay within the loosest reason's budget
//! (whatever the reasons, no more may be disrupting). And each reason's budget holds on its
//! own: when a claim starts disrupting for reason R — the `reason` of the `DisruptionReason`
//! condition the controller writes on the NodeClaim (core
//! `pkg/controllers/disruption/queue.go`: `SetTrueWithReason(ConditionTypeDisruptionReason,
//! string(cmd.Reason()), ...)`) — all the pool's voluntarily disrupting nodes, that one
//! included, fit R's budget: Karpenter allows a command of reason R only
//! `MustGetAllowedDisruptions(reason) - disrupting` nodes (core
//! `pkg/controllers/disruption/helpers.go`, `BuildDisruptionBudgetMapping`).

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use super::{Ctx, Invariant, Violation};
use crate::oracle::budget::{allowed_for_reason, cap, wall_time};
use crate::oracle::view::{ClaimView, View};
use dovetail_world::SimDuration;

/// Names of NodeClaims and Nodes whose deletion a non-controller host started.
#[derive(Debug, Default)]
pub struct ExternalDeletes {
    names: BTreeSet<(String, String)>,
}

impl ExternalDeletes {
    /// Takes in the deletes recorded since the last tick.
    pub fn update(&mut self, ctx: &Ctx<'_>) {
        for d in ctx.recorded.deletes.iter().filter(|d| !d.by_controller) {
            self.names.insert((d.resource.clone(), d.name.clone()));
        }
    }

    /// Whether a claim's disruption was started outside the controller or is one budgets do
    /// not govern (cloud-initiated, expired).
    pub fn exempt(&self, view: &View, claim: &ClaimView, expire_after: Option<Duration>) -> bool {
        let external = self.names.contains(&("nodeclaims".into(), claim.name.clone()))
            || claim.node_name.as_ref().is_some_and(|n| self.names.contains(&("nodes".into(), n.clone())));
        let involuntary = view.instance_of(claim).is_some_and(|i| i.involuntary || !i.live);
        let expired = expire_after.is_some_and(|e| view.now.saturating_sub(claim.created) >= e);
        external || involuntary || expired
    }
}

/// A pool's `expireAfter` (default 720h; `Never` → none).
pub fn expire_after(pool: &Value) -> Option<Duration> {
    match pool.pointer("/spec/template/spec/expireAfter").and_then(Value::as_str) {
        Some("Never") => None,
        Some(s) => SimDuration::parse(s).ok().map(|d| d.0),
        None => Some(Duration::from_secs(720 * 3600)),
    }
}

/// Whether a claim is being disrupted now (claim or node deleting, or node tainted).
pub fn disrupting(view: &View, claim: &ClaimView) -> bool {
    let node = claim.node_name.as_ref().and_then(|n| view.nodes.get(n));
    claim.deleting_since.is_some() || node.is_some_and(|n| n.deleting || n.disrupted)
}

/// The invariant; reports each pool once per episode over budget.
#[derive(Default)]
pub struct DisruptionBudgets {
    external: ExternalDeletes,
    over: BTreeSet<String>,
    /// Claims whose start of disruption for a reason was judged.
    started: BTreeSet<String>,
}

impl Invariant for DisruptionBudgets {
    fn name(&self) -> &'static str {
        "disruptionBudgets"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        self.external.update(ctx);
        let view = ctx.view;
        self.started.retain(|c| view.claims.get(c).is_some_and(|c| c.disruption_reason.is_some()));
        let wall = wall_time(view.now);
        for (name, pool) in &view.pools {
            let expire = expire_after(&pool.object);
            let counted: Vec<&ClaimView> = view
                .claims
                .values()
                .filter(|c| &c.nodepool == name && !c.instance_terminating)
                .filter(|c| {
                    c.initialized || c.node_name.as_ref().and_then(|n| view.nodes.get(n)).is_some_and(|n| n.initialized)
                })
                .collect();
            let voluntary: Vec<&ClaimView> = counted
                .iter()
                .copied()
                .filter(|c| disrupting(view, c) && !self.external.exempt(view, c, expire))
                .collect();
            let budgets: Vec<Value> =
                pool.object.pointer("/spec/disruption/budgets").and_then(Value::as_array).cloned().unwrap_or_default();
            for claim in &voluntary {
                let Some(reason) = claim.disruption_reason.as_deref() else { continue };
                if !self.started.insert(claim.name.clone()) {
                    continue;
                }
                let Some(allowed) = allowed_for_reason(&budgets, counted.len(), reason, wall) else { continue };
                if voluntary.len() > allowed {
                    let mut objects = vec![format!("NodePool {name}"), format!("NodeClaim {}", claim.name)];
                    objects.extend(
                        voluntary.iter().filter(|c| c.name != claim.name).map(|c| format!("NodeClaim {}", c.name)),
                    );
                    out.push(Violation {
                        invariant: self.name().into(),
                        at: view.now,
                        objects,
                        message: format!(
                            "the controller started disrupting NodeClaim {} for {reason} with {} of NodePool {name}'s {} nodes disrupting; its {reason} budgets allow {allowed}",
                            claim.name,
                            voluntary.len(),
                            counted.len()
                        ),
                        trace_position: view.trace_position,
                    });
                }
            }
            let allowed = cap(&budgets, counted.len(), wall);
            if voluntary.len() <= allowed {
                self.over.remove(name);
                continue;
            }
            if self.over.insert(name.clone()) {
                let mut objects = vec![format!("NodePool {name}")];
                objects.extend(voluntary.iter().map(|c| format!("NodeClaim {}", c.name)));
                out.push(Violation {
                    invariant: self.name().into(),
                    at: view.now,
                    objects,
                    message: format!(
                        "{} of NodePool {name}'s {} nodes are being disrupted by the controller; its budgets allow {allowed}",
                        voluntary.len(),
                        counted.len()
                    ),
                    trace_position: view.trace_position,
                });
            }
        }
    }
}
