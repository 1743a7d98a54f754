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
//! The split is the finest Karpenter's batcher can reach, from the scenario's side: it
//! reads the delay in force, not the controller. Karpenter's defaults are used for the
//! windows (core `pkg/operator/options/options.go`: `BATCH_IDLE_DURATION` 1 s,
//! `BATCH_MAX_DURATION` 10 s); a controller run with a shorter idle window than its watch
//! delay splits finer than this model, which then judges it more strictly, never less.

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

    #[test]
    fn a_shorter_lag_lets_a_window_gather_the_deliveries_of_its_maximum() {
        // 10 s of window, one delivery every 500 ms: 21 deliveries at most.
        assert_eq!(pods_per_pass(Duration::from_millis(500)), Some(21));
        let pods: Vec<u32> = (0..25).collect();
        let passes = split(&pods, Duration::from_millis(500));
        assert_eq!(passes.iter().map(Vec::len).collect::<Vec<_>>(), vec![21, 4]);
    }
}
