//! Which of a wave's pending pods Karpenter's provisioner can have seen together, when its
//! pod watch lags.
//!
//! Karpenter acts on a pod once the event that marks it unschedulable reaches its informer
//! (core `pkg/controllers/provisioning/controller.go` l. 67–70: `IsProvisionable`, then
//! `Trigger`). A pass starts after a batch window: the first trigger opens it, and it closes
//! `batchIdleDuration` after the last trigger or `batchMaxDuration` after the first (core
//! `pkg/controllers/provisioning/batcher.go` `Wait`, l. 72–110); the pass then schedules the
//! pending pods its cache holds (`provisioner.go` `Schedule` → `GetPendingPods`, l. 362–378).
//! A lagging watch delivers its events one after another, each `delay` after the one before
//! it at the soonest (the fault this world injects sleeps `delay` before each event it
//! forwards), so two pods' events reach the controller at least `delay` apart. With a
//! `delay` at least `batchIdleDuration`, every window can close between two of them and a
//! pass may see a single new pod; with a shorter one, a window can gather the pods of
//! `batchMaxDuration / delay` deliveries. Without lag the whole wave may be seen at once.
//!
//! Before any lag, pods that became pending far apart are not one pass either: a window
//! closes `batchIdleDuration` after its last pod, and a pass that ran (a NodeClaim was
//! created) saw only the pods pending before it ([`windows`]); a lagging watch splits each
//! window further ([`split`], [`passes`]).
//!
//! The split is the finest Karpenter's batcher can reach, from the scenario's side: it
//! reads the delay in force, not the controller. Karpenter's defaults are used for the
//! windows (core `pkg/operator/options/options.go`: `BATCH_IDLE_DURATION` 1 s,
//! `BATCH_MAX_DURATION` 10 s); a controller run with a shorter idle window than its watch
//! delay splits finer than this model, which then judges it more strictly, never less.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::time::Duration;

/// Karpenter's default `batchIdleDuration`.
pub const BATCH_IDLE: Duration = Duration::from_secs(1);
/// Karpenter's default `batchMaxDuration`.
pub const BATCH_MAX: Duration = Duration::from_secs(10);

/// How many pods delivered one after another one pass can have seen under a watch that
/// delivers each event `delay` after the previous one; `None` when there is no lag (all).
pub fn pods_per_pass(delay: Duration) -> Option<usize> {
    if delay.is_zero() {
        return None;
    }
    if delay >= BATCH_IDLE {
        return Some(1);
    }
    Some((BATCH_MAX.as_nanos() / delay.as_nanos()) as usize + 1)
}

/// Splits `pods`, in the order they became pending, into the passes that can have seen
/// them under a watch `delay`: one part when there is no lag.
pub fn split<T: Clone>(pods: &[T], delay: Duration) -> Vec<Vec<T>> {
    match pods_per_pass(delay) {
        None => vec![pods.to_vec()],
        Some(n) => pods.chunks(n).map(<[T]>::to_vec).collect(),
    }
}

/// Splits `pods` (with the instant each became pending, in that order) into the batching
/// windows that can have taken them apart, before any watch lag. A window opens with a pod
/// and takes the next one while it comes within [`BATCH_IDLE`] of the one before and within
/// [`BATCH_MAX`] of the window's first (core `batcher.go` `Wait`, l. 89–109: the idle timer
/// restarts on each trigger, the max timer does not); a pod that comes later has its own
/// pass. A cut is an instant a pass ran — when a NodeClaim of the wave was created: a pass
/// plans from the pods pending when it starts (core `provisioner.go` `Schedule` →
/// `GetPendingPods`, l. 362–378), so a pod that became pending at or after a cut was not in
/// the pass that cut marks. Pods pending together with no cut between them stay one window.
pub fn windows<T: Clone>(pods: &[(Duration, T)], cuts: &BTreeSet<Duration>) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = Vec::new();
    let mut open: Option<(Duration, Duration)> = None;
    for (at, pod) in pods {
        let joins = open.is_some_and(|(first, last)| {
            at.saturating_sub(last) <= BATCH_IDLE
                && at.saturating_sub(first) < BATCH_MAX
                && cuts.range((Bound::Excluded(last), Bound::Included(*at))).next().is_none()
        });
        match (&mut open, out.last_mut()) {
            (Some((_, last)), Some(window)) if joins => {
                *last = *at;
                window.push(pod.clone());
            }
            _ => {
                open = Some((*at, *at));
                out.push(vec![pod.clone()]);
            }
        }
    }
    out
}

/// The passes that can have seen `pods` (with the instant each became pending, in that
/// order): each batching window ([`windows`]), split further by a lagging watch ([`split`]).
pub fn passes<T: Clone>(pods: &[(Duration, T)], cuts: &BTreeSet<Duration>, delay: Duration) -> Vec<Vec<T>> {
    windows(pods, cuts).iter().flat_map(|w| split(w, delay)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_lag_one_pass_sees_the_whole_wave() {
        assert_eq!(pods_per_pass(Duration::ZERO), None);
        assert_eq!(split(&[1, 2, 3], Duration::ZERO), vec![vec![1, 2, 3]]);
    }

    #[test]
    fn a_lag_at_least_the_idle_window_lets_each_pass_see_one_pod() {
        assert_eq!(pods_per_pass(Duration::from_secs(2)), Some(1));
        assert_eq!(pods_per_pass(BATCH_IDLE), Some(1));
        assert_eq!(split(&[1, 2, 3], Duration::from_secs(2)), vec![vec![1], vec![2], vec![3]]);
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// The recorded story 428dd0df6df1b9bb: three pods at 0 s, sixteen at 60 s, two
    /// passes; pods a second or less apart are one window, however many.
    #[test]
    fn pods_a_minute_apart_are_two_passes_and_a_burst_is_one() {
        let mut pods: Vec<(Duration, u32)> = (0..3).map(|i| (secs(0), i)).collect();
        pods.extend((3..19).map(|i| (secs(60), i)));
        let cut = windows(&pods, &BTreeSet::new());
        assert_eq!(cut.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 16]);
        let burst: Vec<(Duration, u32)> = (0..9).map(|i| (Duration::from_millis(900 * i), i as u32)).collect();
        assert_eq!(windows(&burst, &BTreeSet::new()).len(), 1, "each within the idle window of the last");
    }

    #[test]
    fn a_window_closes_at_its_maximum_and_at_a_pass_that_ran() {
        // One pod every 500 ms for 15 s: the max timer closes the first window at 10 s.
        let stream: Vec<(Duration, u32)> = (0..30).map(|i| (Duration::from_millis(500 * i), i as u32)).collect();
        assert_eq!(windows(&stream, &BTreeSet::new()).iter().map(Vec::len).collect::<Vec<_>>(), vec![20, 10]);
        // A NodeClaim created at 2 s: the pods pending from 2 s on were not in that pass.
        let cuts = BTreeSet::from([secs(2)]);
        assert_eq!(windows(&stream, &cuts).iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 20, 6]);
        // A cut before every pod, or after them all, splits nothing.
        let together: Vec<(Duration, u32)> = (0..5).map(|i| (secs(3), i)).collect();
        assert_eq!(windows(&together, &BTreeSet::from([secs(1), secs(9)])).len(), 1);
    }

    #[test]
    fn passes_split_each_window_by_the_watch_lag() {
        let mut pods: Vec<(Duration, u32)> = (0..3).map(|i| (secs(0), i)).collect();
        pods.extend((3..5).map(|i| (secs(60), i)));
        let by_pass = passes(&pods, &BTreeSet::new(), secs(2));
        assert_eq!(by_pass, vec![vec![0], vec![1], vec![2], vec![3], vec![4]]);
        assert_eq!(passes(&pods, &BTreeSet::new(), Duration::ZERO), vec![vec![0, 1, 2], vec![3, 4]]);
    }

    #[test]
    fn a_shorter_lag_lets_a_window_gather_the_deliveries_of_its_maximum() {
        // 10 s of window, one delivery every 500 ms: 21 deliveries at most.
        assert_eq!(pods_per_pass(Duration::from_millis(500)), Some(21));
        let pods: Vec<u32> = (0..25).collect();
        let passes = split(&pods, Duration::from_millis(500));
        assert_eq!(passes.iter().map(Vec::len).collect::<Vec<_>>(), vec![21, 4]);
    }
}
