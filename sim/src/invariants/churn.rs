//! `churn`: at steady state, NodeClaim deletions the controller starts voluntarily stay
//! under `maxPerNodeHour` per node-hour. Judged at the end, once at least `minNodeHours`
//! of steady state were seen.
//!
//! Steady state is a steady *load*, not just a healed cloud: it holds from `settleAfter`
//! after faults heal **and** `settleAfter` after the pods' total requests last changed.
//! Consolidation following a load that moves (a diurnal curve, Jobs arriving and
//! finishing) is Karpenter doing its job: upstream disrupts underutilized nodes whenever
//! the pods on them fit elsewhere (`kubernetes-sigs/karpenter`
//! `pkg/controllers/disruption/singlenodeconsolidation.go`, `multinodeconsolidation.go`),
//! so each drop in load legitimately deletes nodes. Churn is what aws#8536 and aws#7344
//! report: nodes replaced and deleted for hours while the pods' requests do not change.
//!
//! The load is the sum of the requests of active, non-DaemonSet pods. A voluntary
//! disruption moves pods but does not change it for long: the evicted pod's replacement is
//! created within a second or so. So a new load counts only once it has held for
//! [`LOAD_DEBOUNCE`]; it then dates from when it was first seen.

use std::collections::BTreeSet;
use std::time::Duration;

use super::disruption_budgets::{ExternalDeletes, expire_after};
use super::{Ctx, Invariant, Violation};
use crate::oracle::resources::Resources;
use crate::oracle::view::PodView;

/// How long a new load must hold before it counts as a change (an evicted pod's
/// replacement appears well within it).
pub const LOAD_DEBOUNCE: Duration = Duration::from_secs(30);

/// When the load (the active pods' total requests) last changed for good.
#[derive(Debug, Default)]
pub struct LoadClock {
    settled: Option<Resources>,
    candidate: Option<(Resources, Duration)>,
    changed_at: Duration,
}

impl LoadClock {
    /// Looks at the pods at `now`.
    pub fn observe(&mut self, pods: &[PodView], now: Duration) {
        let mut load = Resources::default();
        for p in pods.iter().filter(|p| p.active() && !p.daemonset) {
            load.add(&p.requests);
        }
        if self.settled.is_none() {
            self.settled = Some(load);
            self.changed_at = now;
            return;
        }
        if self.settled == Some(load) {
            self.candidate = None;
            return;
        }
        match self.candidate {
            Some((c, since)) if c == load => {
                if now.saturating_sub(since) >= LOAD_DEBOUNCE {
                    self.settled = Some(load);
                    self.changed_at = since;
                    self.candidate = None;
                }
            }
            _ => self.candidate = Some((load, now)),
        }
    }

    /// When the load last changed (a change still within [`LOAD_DEBOUNCE`] is not seen yet).
    pub fn changed_at(&self) -> Duration {
        self.changed_at
    }
}

/// The invariant.
#[derive(Default)]
pub struct ChurnBounded {
    external: ExternalDeletes,
    load: LoadClock,
    node_seconds: f64,
    deleted: BTreeSet<String>,
    first_at: Option<(Duration, u64)>,
}

impl ChurnBounded {
    /// Faults healed and the load unchanged, each for `settleAfter`.
    fn steady(&self, ctx: &Ctx<'_>) -> bool {
        let settle = ctx.config.churn.settle_after.0;
        let now = ctx.view.now;
        let healed = ctx.healed_at.is_some_and(|h| now >= h + settle);
        // A change still being debounced is a change: the load is not steady.
        let load_still = now >= self.load.changed_at() + settle && self.load.candidate.is_none();
        healed && load_still
    }
}

impl Invariant for ChurnBounded {
    fn name(&self) -> &'static str {
        "churn"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let _ = out;
        self.external.update(ctx);
        self.load.observe(ctx.pods, ctx.view.now);
        if !self.steady(ctx) {
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
                "{} voluntary NodeClaim deletions over {hours:.2} node-hours at steady state (faults healed and \
                 the pods' requests unchanged for {}): {rate:.2} per node-hour (limit {})",
                self.deleted.len(),
                super::format_duration(cfg.settle_after.0),
                cfg.max_per_node_hour
            ),
            trace_position,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, cpu: f64) -> PodView {
        PodView {
            key: format!("default/{uid}"),
            uid: uid.into(),
            created: Duration::ZERO,
            node_name: None,
            terminal: false,
            terminating: false,
            daemonset: false,
            requests: Resources { cpu, memory: 0.0, pods: 1.0 },
            object: std::sync::Arc::new(serde_json::json!({})),
        }
    }

    #[test]
    fn an_eviction_and_its_replacement_do_not_change_the_load() {
        let mut clock = LoadClock::default();
        let s = Duration::from_secs;
        clock.observe(&[pod("a", 500.0), pod("b", 500.0)], s(0));
        // b is evicted; its replacement c appears two seconds later.
        clock.observe(&[pod("a", 500.0)], s(100));
        clock.observe(&[pod("a", 500.0)], s(101));
        clock.observe(&[pod("a", 500.0), pod("c", 500.0)], s(102));
        clock.observe(&[pod("a", 500.0), pod("c", 500.0)], s(200));
        assert_eq!(clock.changed_at(), s(0));
    }

    #[test]
    fn a_load_that_holds_dates_from_when_it_was_first_seen() {
        let mut clock = LoadClock::default();
        let s = Duration::from_secs;
        clock.observe(&[pod("a", 500.0)], s(0));
        for t in 300..=340 {
            clock.observe(&[pod("a", 500.0), pod("b", 250.0)], s(t));
        }
        assert_eq!(clock.changed_at(), s(300));
    }
}
