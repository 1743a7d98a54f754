//! What a reconcile asks of its driver: when to look again.

use std::time::Duration;

/// When the driver runs the reconciler next (kube-runtime's `Action`, plus a pace).
///
/// The driver runs it again at whichever comes first: a change of a watched kind (or the
/// reconciler's own [`Trigger`](super::Trigger)), or the requeue deadline. A [`paced`](Self::paced)
/// action also waits out its pace first, even when something changes meanwhile.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
    pace: Duration,
}

impl Action {
    /// Look again after `after` at the latest; earlier when a watched kind changes. Use it for
    /// deadlines the state will not announce: a claim that expires, a grace period that ends, a
    /// periodic resync. `requeue(Duration::ZERO)` looks again at once, without yielding.
    pub const fn requeue(after: Duration) -> Self {
        Self { requeue_after: Some(after), pace: Duration::ZERO }
    }

    /// Look again only when a watched kind changes: nothing is due otherwise.
    pub const fn await_change() -> Self {
        Self { requeue_after: None, pace: Duration::ZERO }
    }

    /// Do not look again sooner than `pace` from now, even when something changes: a change
    /// during the pace is held and acted on when it ends. A requeue that falls within the pace
    /// happens when the pace ends.
    pub const fn paced(self, pace: Duration) -> Self {
        Self { requeue_after: self.requeue_after, pace }
    }

    /// Both at once: the sooner requeue and the longer pace (for a reconciler that decides
    /// per object and reports the most urgent).
    pub fn combine(self, other: Action) -> Self {
        let requeue_after = match (self.requeue_after, other.requeue_after) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Self { requeue_after, pace: self.pace.max(other.pace) }
    }

    /// The requeue deadline, from now; `None` waits for a change only.
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }

    /// The time the driver waits before it looks at changes at all.
    pub const fn pace(&self) -> Duration {
        self.pace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn combine_keeps_the_sooner_requeue_and_the_longer_pace() {
        let a = Action::requeue(10 * SECOND).paced(SECOND);
        let b = Action::requeue(3 * SECOND);
        let both = a.combine(b);
        assert_eq!(both.requeue_after(), Some(3 * SECOND));
        assert_eq!(both.pace(), SECOND);
    }

    #[test]
    fn awaiting_a_change_yields_to_any_requeue() {
        let both = Action::await_change().combine(Action::requeue(SECOND));
        assert_eq!(both.requeue_after(), Some(SECOND));
        assert_eq!(Action::await_change().combine(Action::await_change()).requeue_after(), None);
    }
}
