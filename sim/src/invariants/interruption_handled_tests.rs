//! `interruptionHandled` fires on an ignored warning, and each excuse (lost message, claim
//! already deleting, claim linked too late, rebalance) beside a twin where it does not apply.

use std::time::Duration;

use dovetail_fakecloud::{Published, PublishedKind};

use super::{InterruptionHandled, acted_on};
use crate::invariants::Violation;
use crate::oracle::view::{ClaimView, View};

const WITHIN: Duration = Duration::from_secs(30);

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn claim(name: &str, instance: &str) -> ClaimView {
    ClaimView {
        node_name: Some(format!("node-{name}")),
        ..ClaimView::for_test(name, "default", &format!("aws:///us-east-1a/{instance}"))
    }
}

fn view(now: u64, claims: &[ClaimView]) -> View {
    View { now: s(now), claims: claims.iter().map(|c| (c.name.clone(), c.clone())).collect(), ..View::default() }
}

fn warning(instance: &str, sent: u64, receivable: Option<u64>) -> Published {
    Published {
        kind: PublishedKind::SpotInterruption,
        instance_id: instance.into(),
        sent_at: s(sent),
        receivable_at: receivable.map(s),
    }
}

/// Ticks every second from 0 to `until` with `claims_at(t)`, publishing `events` as their
/// send time passes; reclaim 120 s after sending.
fn run(events: &[Published], until: u64, claims_at: impl Fn(u64) -> Vec<ClaimView>) -> Vec<Violation> {
    let mut inv = InterruptionHandled::default();
    let mut out = Vec::new();
    for t in 0..=until {
        let published: Vec<Published> = events.iter().filter(|e| e.sent_at <= s(t)).cloned().collect();
        let reclaim = |id: &str| events.iter().find(|e| e.instance_id == id).map(|e| e.sent_at + s(120));
        inv.observe(&view(t, &claims_at(t)), &published, &[], &[], reclaim, WITHIN, Duration::ZERO, &mut out);
    }
    out
}

#[test]
fn an_ignored_spot_warning_fires_after_the_window() {
    let out = run(&[warning("i-1", 100, Some(100))], 200, |_| vec![claim("c1", "i-1")]);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].at, s(131), "deadline 130 s: receivable + 30 s, before the reclaim at 220 s");
    assert!(out[0].objects.contains(&"NodeClaim c1".to_string()), "{:?}", out[0].objects);
    assert!(out[0].message.contains("spot interruption warning"), "{}", out[0].message);
}

#[test]
fn a_claim_deleted_within_the_window_passes() {
    let out = run(&[warning("i-1", 100, Some(100))], 200, |t| {
        let mut c = claim("c1", "i-1");
        if t >= 105 {
            c.deleting_since = Some(s(105));
        }
        vec![c]
    });
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn a_lost_message_is_not_judged_but_a_delayed_one_is_from_when_receivable() {
    let lost = run(&[warning("i-1", 100, None)], 300, |_| vec![claim("c1", "i-1")]);
    assert!(lost.is_empty(), "{lost:?}");
    // Receivable 60 s late: the window is capped by the reclaim at 220 s, not 100 + 30.
    let delayed = run(&[warning("i-1", 100, Some(200))], 300, |_| vec![claim("c1", "i-1")]);
    assert_eq!(delayed.len(), 1, "{delayed:?}");
    assert_eq!(delayed[0].at, s(221));
}

#[test]
fn a_claim_gone_or_linked_too_late_is_not_judged_but_one_linked_early_is() {
    let gone = run(&[warning("i-1", 100, Some(100))], 200, |t| if t < 110 { vec![claim("c1", "i-1")] } else { vec![] });
    assert!(gone.is_empty(), "{gone:?}");
    // The providerID appeared 5 s before the warning: the controller may not have seen it.
    let late = run(&[warning("i-1", 100, Some(100))], 200, |t| {
        let mut c = claim("c1", "i-1");
        if t < 95 {
            c.provider_id = None;
        }
        vec![c]
    });
    assert!(late.is_empty(), "{late:?}");
    let early = run(&[warning("i-1", 100, Some(100))], 200, |t| {
        let mut c = claim("c1", "i-1");
        if t < 80 {
            c.provider_id = None;
        }
        vec![c]
    });
    assert_eq!(early.len(), 1, "{early:?}");
}

#[test]
fn only_the_kinds_karpenter_acts_on_are_judged() {
    assert!(!acted_on(PublishedKind::Rebalance));
    assert!(!acted_on(PublishedKind::StateChange("running")));
    assert!(acted_on(PublishedKind::StateChange("stopping")));
    assert!(acted_on(PublishedKind::ScheduledChange));
    let rebalance = Published { kind: PublishedKind::Rebalance, ..warning("i-1", 100, Some(100)) };
    assert!(run(&[rebalance], 300, |_| vec![claim("c1", "i-1")]).is_empty());
    let stopped = Published { kind: PublishedKind::StateChange("stopped"), ..warning("i-1", 100, Some(100)) };
    let out = run(&[stopped], 300, |_| vec![claim("c1", "i-1")]);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].at, s(131));
}

/// Ticks 0..=`until` with a system check of `i-1` failed from 100 s (until `healed`) and
/// claim `c1` on it, deleting from `deleted_at`; the violations.
fn run_failed_check(until: u64, deleted_at: Option<u64>) -> Vec<Violation> {
    run_failed_check_healed(until, deleted_at, u64::MAX)
}

fn run_failed_check_healed(until: u64, deleted_at: Option<u64>, healed: u64) -> Vec<Violation> {
    let mut inv = InterruptionHandled::default();
    let mut out = Vec::new();
    for t in 0..=until {
        let mut c = claim("c1", "i-1");
        c.deleting_since = deleted_at.filter(|d| *d <= t).map(s);
        let failing = t >= 100 && t < healed;
        let failed: Vec<(String, Duration)> = if failing { vec![("i-1".into(), s(100))] } else { Vec::new() };
        inv.observe(&view(t, &[c]), &[], &failed, &[], |_| None, WITHIN, Duration::ZERO, &mut out);
    }
    out
}

/// Karpenter's instance status controller deletes the claim of an instance whose system
/// check has failed for 2 minutes at its next poll: deadline 100 + 120 + 60 + 30 = 310 s.
/// Ignored, it fires; deleted in time, it holds.
#[test]
fn a_failed_status_check_is_acted_on_within_the_threshold_a_poll_and_the_window() {
    let out = run_failed_check(400, None);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].at, s(311));
    assert!(out[0].message.contains("failed status check"), "{}", out[0].message);
    assert!(run_failed_check(400, Some(300)).is_empty());
}

/// A check that heals before it has failed for the threshold and a poll (here after 150 s of
/// failure) may never be seen aged past the threshold by a poll: not judged. Its twin that
/// lasts is judged above.
#[test]
fn a_status_check_that_heals_between_polls_is_not_judged() {
    assert!(run_failed_check_healed(400, None, 250).is_empty());
    assert_eq!(run_failed_check_healed(400, None, 290).len(), 1, "failing at 280 s: judged");
}

/// A warning receivable while the controller is cut off from the cloud (partition 77-153 s)
/// gets the window from the heal: deadline 183 s, not 135 s; one receivable outside any
/// partition keeps its own (generated story 200193234).
#[test]
fn a_partition_of_the_controller_moves_the_deadline_to_the_heal() {
    use super::past_cut_off;
    let cut = [(s(77), s(153))];
    assert_eq!(past_cut_off(s(105), s(135), WITHIN, &cut), s(183));
    assert_eq!(past_cut_off(s(160), s(190), WITHIN, &cut), s(190), "after the heal: no excuse");
    assert_eq!(past_cut_off(s(40), s(70), WITHIN, &cut), s(70), "deadline before the partition: no excuse");
    assert_eq!(past_cut_off(s(60), s(90), WITHIN, &cut), s(183), "cut off before its deadline");
}
