//! `cloudReadRate`: the controller reads instances from EC2 at a rate its own periods
//! explain, not in a loop. Over any window of [`WINDOW`] (5 simulated minutes) the fake
//! cloud answers at most `BASE + PER_CLAIM × claims` `DescribeInstances` calls, `claims`
//! being the NodeClaims seen in the window (live or deleting at some tick of it).
//!
//! The derivation, from upstream's periods (every call counted as EC2 saw it, throttled
//! ones and the SDK's retries included):
//! - per NodeClaim, the drift check reads its instance (aws/karpenter-provider-aws
//!   `pkg/cloudprovider/cloudprovider.go` `IsDrifted` -> `getInstance`, which is
//!   `pkg/providers/instance/instance.go` `Get`: one `DescribeInstances` through the
//!   batcher, no cache) and requeues after 5 minutes (core
//!   `pkg/controllers/nodeclaim/disruption/drift.go:74,82`, `RequeueAfter: 5 * time.Minute`
//!   "for the cache TTL"): one read per claim per window, more only on watch events of
//!   the claim, its pool or class; launch, registration and deletion read it a few times
//!   more (`instance.go` `Delete` calls `Get` first). The SDK's standard retryer makes
//!   up to 3 attempts per throttled call. [`PER_CLAIM`] = 10 allows a claim's launch,
//!   registration, drift checks on a handful of events and its deletion in one window,
//!   with retries.
//! - per cluster, two garbage collectors list every instance (the provider's `List` is a
//!   paginated `DescribeInstances`): core's every 2 minutes (core
//!   `pkg/controllers/nodeclaim/garbagecollection/controller.go:132`, `RequeueAfter:
//!   time.Minute * 2`) and the AWS provider's leak collector every 10 s for its first 20
//!   successful runs after a start, then every 2 minutes (aws
//!   `pkg/controllers/nodeclaim/garbagecollection/controller.go:89-90`, `successfulCount <=
//!   20`). A window holding a controller start sees up to 21 fast lists plus one slow one
//!   before it, core's 3 and the new leader's first list: 26, ×3 with retries = 78; [`BASE`]
//!   = 80. (Until session 14 this was 20, derived from core's 2-minute period alone: a start
//!   under throttling with no NodeClaim could exceed it while doing exactly what upstream
//!   does.) Two starts in one window (a crash loop) are not covered.
//!
//! A controller that polls a claim's instance every second makes 300 reads per claim per
//! window, 30× the budget. The bound is loose by design: it catches loops, not one extra
//! read.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::{Ctx, Invariant, Violation, format_duration};

/// The sliding window: upstream's drift requeue period.
pub const WINDOW: Duration = Duration::from_secs(300);
/// Cluster-wide reads allowed per window (a start's garbage-collection lists, with retries).
pub const BASE: usize = 80;
/// Reads allowed per NodeClaim seen in the window.
pub const PER_CLAIM: usize = 10;
/// The EC2 action judged.
pub const ACTION: &str = "DescribeInstances";

/// The invariant.
#[derive(Default)]
pub struct CloudReadRate {
    /// How many of the cloud's calls were read already (the log is append-only).
    cursor: usize,
    /// Times of the judged calls inside the window.
    calls: VecDeque<Duration>,
    /// Each NodeClaim's last tick seen.
    claims: BTreeMap<String, Duration>,
    /// No second violation before this time (one per window).
    quiet_until: Duration,
}

impl CloudReadRate {
    /// Adds calls at `times` and the claims seen `now`; returns `(calls, budget)` when the
    /// window ending `now` holds more calls than its budget.
    pub fn observe<'a>(
        &mut self,
        now: Duration,
        times: impl IntoIterator<Item = Duration>,
        claims: impl IntoIterator<Item = &'a str>,
    ) -> Option<(usize, usize)> {
        self.calls.extend(times);
        for c in claims {
            self.claims.insert(c.to_string(), now);
        }
        let start = now.saturating_sub(WINDOW);
        while self.calls.front().is_some_and(|t| *t <= start && now >= WINDOW) {
            self.calls.pop_front();
        }
        self.claims.retain(|_, seen| *seen > start || now < WINDOW);
        let budget = BASE + PER_CLAIM * self.claims.len();
        (self.calls.len() > budget && now >= self.quiet_until).then(|| {
            self.quiet_until = now + WINDOW;
            (self.calls.len(), budget)
        })
    }
}

impl Invariant for CloudReadRate {
    fn name(&self) -> &'static str {
        "cloudReadRate"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let log = &ctx.cloud.ledger().calls;
        let new = log.get(self.cursor..).unwrap_or_default();
        self.cursor = log.len();
        let times = new.iter().filter(|c| c.action == ACTION).map(|c| c.at);
        let claims = ctx.view.claims.keys().map(String::as_str);
        if let Some((calls, budget)) = self.observe(ctx.view.now, times, claims) {
            out.push(Violation {
                invariant: self.name().into(),
                at: ctx.view.now,
                objects: Vec::new(),
                message: format!(
                    "{calls} EC2 {ACTION} calls in the {} ending now, budget {budget} ({BASE} + {PER_CLAIM} per NodeClaim, {} seen)",
                    format_duration(WINDOW),
                    self.claims.len()
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_claim_read_every_five_minutes_is_within_budget() {
        let mut r = CloudReadRate::default();
        for t in 0..3600u64 {
            let calls = if t % 300 == 0 { vec![secs(t)] } else { Vec::new() };
            assert_eq!(r.observe(secs(t), calls, ["a"]), None, "at {t}");
        }
    }

    #[test]
    fn a_claim_polled_every_second_breaks_the_budget_once_per_window() {
        let mut r = CloudReadRate::default();
        let mut fired = Vec::new();
        for t in 0..900u64 {
            if let Some(v) = r.observe(secs(t), [secs(t)], ["a", "b"]) {
                fired.push((t, v));
            }
        }
        // Budget 80 + 2 × 10 = 100: the 101st call (t = 100) breaks it; then once per window.
        assert_eq!(fired, vec![(100, (101, 100)), (400, (300, 100)), (700, (300, 100))]);
    }

    #[test]
    fn a_start_under_throttling_lists_as_upstream_within_budget() {
        // Upstream after a start with no NodeClaim: the AWS leak collector at 0, 10, ..., 200 s
        // (21 lists), core's collector at 0, 120, 240 s, each call tried three times.
        let mut r = CloudReadRate::default();
        let mut lists: Vec<u64> = (0..=20).map(|i| i * 10).chain([0, 120, 240]).collect();
        lists.sort_unstable();
        for t in 0..=600u64 {
            let calls: Vec<Duration> = lists.iter().filter(|&&l| l == t).flat_map(|&l| [secs(l); 3]).collect();
            assert_eq!(r.observe(secs(t), calls, std::iter::empty::<&str>()), None, "at {t}");
        }
    }

    #[test]
    fn claims_gone_for_a_window_leave_the_budget() {
        let mut r = CloudReadRate::default();
        assert_eq!(r.observe(secs(0), Vec::new(), ["a", "b", "c"]), None);
        // 110 calls with three claims seen: budget 110.
        assert_eq!(r.observe(secs(10), (0..110).map(|_| secs(10)), ["a", "b", "c"]), None);
        // Six minutes on, the calls and the claims have left the window.
        assert_eq!(r.observe(secs(370), (0..95).map(|_| secs(370)), ["a"]), Some((95, 90)));
    }
}
