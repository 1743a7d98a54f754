//! `stuckNodeClaim`: after faults heal, a NodeClaim is Initialized within
//! `initializeWithin` of its creation and gone within `deleteWithin` of its deletion
//! (clocks start no earlier than the heal). In every phase, faults or not, a launched
//! NodeClaim whose Node never registered is deleted once Karpenter's registration timeout
//! has passed: upstream deletes it `registrationTimeout` (15 min) after its Registered
//! condition was first set (kubernetes-sigs/karpenter
//! pkg/controllers/nodeclaim/lifecycle/liveness.go), so a controller that bills an
//! instance whose kubelet cannot join for ever is caught while the fault lasts.

use std::collections::BTreeSet;

use super::{Ctx, Invariant, Violation, format_duration};

/// Upstream's `registrationTimeout` (15 min), counted there from the Registered condition,
/// which is set once the claim launched: at most upstream's `LaunchTimeout` (5 min) after
/// creation. Plus a minute for the liveness requeue.
const REGISTRATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs((15 + 5 + 1) * 60);

/// The invariant; reports each claim once per kind.
#[derive(Default)]
pub struct StuckNodeClaim {
    reported: BTreeSet<(String, &'static str)>,
}

impl Invariant for StuckNodeClaim {
    fn name(&self) -> &'static str {
        "stuckNodeClaim"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        self.registration_timeout(ctx, out);
        let Some(healed) = ctx.healed_at else { return };
        let cfg = &ctx.config.stuck_node_claim;
        let now = ctx.view.now;
        for c in ctx.view.claims.values() {
            let (kind, since, limit) = match c.deleting_since {
                Some(d) => ("deleting", d.max(healed), cfg.delete_within.0),
                None if !c.initialized => ("uninitialized", c.created.max(healed), cfg.initialize_within.0),
                None => continue,
            };
            let waited = now.saturating_sub(since);
            if waited <= limit || !self.reported.insert((c.name.clone(), kind)) {
                continue;
            }
            let mut objects = vec![format!("NodeClaim {}", c.name)];
            objects.extend(c.node_name.as_ref().map(|n| format!("Node {n}")));
            out.push(Violation {
                invariant: self.name().into(),
                at: now,
                objects,
                message: format!(
                    "NodeClaim {} {} for {} (limit {})",
                    c.name,
                    if kind == "deleting" { "still deleting" } else { "not initialized" },
                    format_duration(waited),
                    format_duration(limit)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}

impl StuckNodeClaim {
    /// A launched claim with no Node, not deleted within the registration timeout.
    fn registration_timeout(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let now = ctx.view.now;
        for c in ctx.view.claims.values() {
            let unregistered = c.provider_id.is_some() && c.node_name.is_none() && c.deleting_since.is_none();
            let waited = now.saturating_sub(c.created);
            if !unregistered
                || waited <= REGISTRATION_TIMEOUT
                || !self.reported.insert((c.name.clone(), "unregistered"))
            {
                continue;
            }
            out.push(Violation {
                invariant: self.name().into(),
                at: now,
                objects: vec![format!("NodeClaim {}", c.name)],
                message: format!(
                    "NodeClaim {} launched but not registered for {} and not deleted (Karpenter deletes it 15m after launch)",
                    c.name,
                    format_duration(waited)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}
