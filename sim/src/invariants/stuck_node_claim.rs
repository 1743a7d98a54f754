//! `stuckNodeClaim`: after faults heal, a NodeClaim is Initialized within
//! `initializeWithin` of its creation and gone within `deleteWithin` of its deletion
//! (clocks start no earlier than the heal).

use std::collections::BTreeSet;

use super::{Ctx, Invariant, Violation, format_duration};

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
