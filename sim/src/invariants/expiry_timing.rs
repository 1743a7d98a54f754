//! `expiryTiming`: a NodeClaim is expired neither early nor late.
//!
//! Upstream's expiration controller (core `pkg/controllers/nodeclaim/expiration/controller.go`,
//! lines 58-108) deletes a NodeClaim once `creationTimestamp + spec.expireAfter` has passed
//! (`expireAfter: Never` never expires), forcefully: no budget, PDB or do-not-disrupt holds
//! it, and it requeues for exactly the expiry time, so the deletion follows at once.
//!
//! - **Not early:** a NodeClaim the controller says it disrupts for `Expired` (a
//!   `DisruptionTerminating` Event "Disrupting NodeClaim: Expired",
//!   [`crate::oracle::disruption_events`]) was created at least its `expireAfter` before the
//!   Event (one second allowed for the timestamps' rounding). The claim's creation time and
//!   `expireAfter` are its own, read from the store.
//! - **Not late:** after faults heal, a NodeClaim past its expiry is deleting within
//!   `deleteWithin` (counted from the later of its expiry and the heal).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{Ctx, Invariant, Violation, format_duration};
use crate::oracle::view::View;

/// The name in reports.
pub const NAME: &str = "expiryTiming";

/// Timestamps carry whole seconds.
const ROUNDING: Duration = Duration::from_secs(1);

/// The invariant.
#[derive(Default)]
pub struct ExpiryTiming {
    /// Every claim seen: its creation time and `expireAfter`.
    known: BTreeMap<String, (Duration, Option<Duration>)>,
    /// Expired-disruption Events already judged.
    judged: BTreeSet<(String, Duration)>,
    reported: BTreeSet<String>,
}

impl Invariant for ExpiryTiming {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        self.observe(ctx.view, ctx.healed_at, ctx.config.expiry_timing.delete_within.0, out);
    }
}

impl ExpiryTiming {
    /// Judges the Expired disruptions seen so far and the claims past their expiry.
    pub fn observe(&mut self, view: &View, healed_at: Option<Duration>, within: Duration, out: &mut Vec<Violation>) {
        for c in view.claims.values() {
            let expire_after = view.expire_after.get(&c.name).copied().flatten();
            self.known.insert(c.name.clone(), (c.created, expire_after));
        }
        for e in view.disruption_events.iter().filter(|e| !e.is_launch() && e.disruption_reason() == Some("Expired")) {
            if !self.judged.insert((e.node_claim.clone(), e.at)) {
                continue;
            }
            let Some(&(created, expire_after)) = self.known.get(&e.node_claim) else { continue };
            let early = match expire_after {
                None => true,
                Some(after) => e.at + ROUNDING < created + after,
            };
            if early {
                out.push(Violation {
                    invariant: NAME.into(),
                    at: view.now,
                    objects: vec![format!("NodeClaim {}", e.node_claim)],
                    message: format!(
                        "the controller disrupted NodeClaim {} for Expired at {}, but it was created at {} with expireAfter {}",
                        e.node_claim,
                        format_duration(e.at),
                        format_duration(created),
                        expire_after.map_or_else(|| "Never".to_string(), format_duration)
                    ),
                    trace_position: view.trace_position,
                });
            }
        }
        let Some(healed) = healed_at else { return };
        for c in view.claims.values().filter(|c| c.deleting_since.is_none()) {
            let Some(after) = view.expire_after.get(&c.name).copied().flatten() else { continue };
            let expiry = c.created + after;
            let since = expiry.max(healed);
            if view.now <= since + within || !self.reported.insert(c.name.clone()) {
                continue;
            }
            out.push(Violation {
                invariant: NAME.into(),
                at: view.now,
                objects: vec![format!("NodeClaim {}", c.name)],
                message: format!(
                    "NodeClaim {} expired at {} (expireAfter {}) and is not deleting {} later (limit {})",
                    c.name,
                    format_duration(expiry),
                    format_duration(after),
                    format_duration(view.now.saturating_sub(expiry)),
                    format_duration(within)
                ),
                trace_position: view.trace_position,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::disruption_events::{DisruptionEvent, TERMINATING_REASON};
    use crate::oracle::view::ClaimView;

    const WITHIN: Duration = Duration::from_secs(120);

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn view(now: u64, expire_after: Option<u64>, deleting: Option<u64>, expired_event: Option<u64>) -> View {
        let claim = ClaimView {
            node_name: Some("n1".into()),
            created: s(100),
            deleting_since: deleting.map(s),
            ..ClaimView::for_test("c1", "default", "aws:///a/i-1")
        };
        let mut v = View { now: s(now), ..View::default() };
        v.expire_after.insert("c1".into(), expire_after.map(s));
        v.claims.insert("c1".into(), claim);
        v.disruption_events.extend(expired_event.map(|at| DisruptionEvent {
            at: s(at),
            node_claim: "c1".into(),
            reason: TERMINATING_REASON.into(),
            message: "Disrupting NodeClaim: Expired".into(),
            resource_version: 0,
        }));
        v
    }

    fn run(views: &[View], healed: Option<u64>) -> Vec<Violation> {
        let mut inv = ExpiryTiming::default();
        let mut out = Vec::new();
        for v in views {
            inv.observe(v, healed.map(s), WITHIN, &mut out);
        }
        out
    }

    #[test]
    fn an_expiry_before_expire_after_fires_and_one_at_it_does_not() {
        let early = run(&[view(50, Some(600), None, None), view(400, Some(600), Some(400), Some(400))], Some(0));
        assert_eq!(early.len(), 1, "{early:?}");
        assert!(early[0].message.contains("for Expired at 6m40s"), "{}", early[0].message);
        let on_time = run(&[view(50, Some(600), None, None), view(700, Some(600), Some(700), Some(700))], Some(0));
        assert!(on_time.is_empty(), "{on_time:?}");
        let never = run(&[view(50, None, None, None), view(700, None, Some(700), Some(700))], Some(0));
        assert_eq!(never.len(), 1, "expireAfter: Never never expires: {never:?}");
    }

    #[test]
    fn an_expired_claim_not_deleting_fires_after_the_window_once_healed() {
        // Expires at 700; deleting by 800: fine. Not deleting at 821: late.
        assert!(run(&[view(800, Some(600), Some(800), None)], Some(0)).is_empty());
        let late = run(&[view(820, Some(600), None, None), view(821, Some(600), None, None)], Some(0));
        assert_eq!(late.len(), 1, "{late:?}");
        assert!(late[0].message.contains("not deleting"), "{}", late[0].message);
        // While faults are live nothing is late; the clock starts at the heal.
        assert!(run(&[view(900, Some(600), None, None)], None).is_empty());
        assert!(run(&[view(900, Some(600), None, None)], Some(850)).is_empty());
    }
}
