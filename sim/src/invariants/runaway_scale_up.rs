//! `runawayScaleUp`: the controller does not keep adding nodes the pods cannot use.
//! Karpenter's chaos test (a pod that never fits must not grow the node count) in a
//! general form: a new NodeClaim appearing while the live claims already outnumber the
//! active non-DaemonSet pods by more than `slack` (a node per pod is the most any packing
//! needs), or the live claims passing `maxNodes`.

use super::{Ctx, Invariant, Violation};

/// The invariant; reports once per episode.
#[derive(Default)]
pub struct RunawayScaleUp {
    reported: bool,
}

impl Invariant for RunawayScaleUp {
    fn name(&self) -> &'static str {
        "runawayScaleUp"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let cfg = &ctx.config.runaway_scale_up;
        let live: Vec<_> = ctx.view.claims.values().filter(|c| c.deleting_since.is_none()).collect();
        let pods = ctx.pods.iter().filter(|p| p.active() && !p.daemonset).count();
        // creationTimestamp has whole seconds: a claim created since the last tick carries
        // that tick's second or later.
        let since = ctx.previous.saturating_sub(std::time::Duration::from_secs(1));
        let new = live.iter().filter(|c| c.created > since || ctx.previous.is_zero()).count();
        let too_many = live.len() > pods + cfg.slack as usize && new > 0;
        let over_cap = cfg.max_nodes.is_some_and(|m| live.len() > m as usize);
        if !(too_many || over_cap) {
            if live.len() <= pods + cfg.slack as usize {
                self.reported = false;
            }
            return;
        }
        if self.reported {
            return;
        }
        self.reported = true;
        let mut objects: Vec<String> = live.iter().rev().take(5).map(|c| format!("NodeClaim {}", c.name)).collect();
        objects.sort();
        out.push(Violation {
            invariant: self.name().into(),
            at: ctx.view.now,
            objects,
            message: format!(
                "{} live NodeClaims for {pods} pods (slack {}, cap {:?}) and still launching",
                live.len(),
                cfg.slack,
                cfg.max_nodes
            ),
            trace_position: ctx.view.trace_position,
        });
    }
}
