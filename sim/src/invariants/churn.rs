//! `churn`: at steady state (from `settleAfter` after faults heal), NodeClaim deletions the
//! controller starts voluntarily stay under `maxPerNodeHour` per node-hour. Judged at the
//! end, once at least `minNodeHours` of steady state were seen.

use std::collections::BTreeSet;
use std::time::Duration;

use super::disruption_budgets::{ExternalDeletes, expire_after};
use super::{Ctx, Invariant, Violation};

/// The invariant.
#[derive(Default)]
pub struct ChurnBounded {
    external: ExternalDeletes,
    node_seconds: f64,
    deleted: BTreeSet<String>,
    first_at: Option<(Duration, u64)>,
}

impl ChurnBounded {
    fn steady(ctx: &Ctx<'_>) -> bool {
        ctx.healed_at.is_some_and(|h| ctx.view.now >= h + ctx.config.churn.settle_after.0)
    }
}

impl Invariant for ChurnBounded {
    fn name(&self) -> &'static str {
        "churn"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let _ = out;
        self.external.update(ctx);
        if !Self::steady(ctx) {
            return;
        }
        let dt = ctx.view.now.saturating_sub(ctx.previous).as_secs_f64();
        let live = ctx.view.claims.values().filter(|c| c.deleting_since.is_none()).count();
        self.node_seconds += dt * live as f64;
        for d in ctx.recorded.deletes.iter().filter(|d| d.by_controller && d.resource == "nodeclaims") {
            let exempt = ctx.view.claims.get(&d.name).is_none_or(|c| {
                let expire = ctx.view.pools.get(&c.nodepool).and_then(|p| expire_after(&p.object));
                self.external.exempt(ctx.view, c, expire)
            });
            if !exempt && self.deleted.insert(d.name.clone()) && self.first_at.is_none() {
                self.first_at = Some((d.at, d.trace_position));
            }
        }
    }

    fn finish(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let cfg = &ctx.config.churn;
        let hours = self.node_seconds / 3600.0;
        if hours < cfg.min_node_hours || hours <= 0.0 {
            return;
        }
        let rate = self.deleted.len() as f64 / hours;
        if rate <= cfg.max_per_node_hour {
            return;
        }
        let (at, trace_position) = self.first_at.unwrap_or((ctx.view.now, ctx.view.trace_position));
        out.push(Violation {
            invariant: self.name().into(),
            at,
            objects: self.deleted.iter().take(10).map(|n| format!("NodeClaim {n}")).collect(),
            message: format!(
                "{} voluntary NodeClaim deletions over {hours:.2} node-hours at steady state: {rate:.2} per node-hour (limit {})",
                self.deleted.len(),
                cfg.max_per_node_hour
            ),
            trace_position,
        });
    }
}
