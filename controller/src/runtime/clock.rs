//! The injected wall clock. Timers use `tokio::time` (which the simulator controls); timestamps
//! written to Kubernetes objects and compared with them (creationTimestamp, condition times,
//! deletion deadlines) come from a [`Clock`], so they agree with simulated time in the simulator
//! and with the system clock in production.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A source of the current wall-clock time.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> jiff::Timestamp;

    /// Now, as a Kubernetes `Time`.
    fn now_time(&self) -> Time {
        Time(self.now())
    }

    /// How long ago `t` was (zero when `t` is in the future).
    fn since(&self, t: &Time) -> Duration {
        elapsed(t.0, self.now())
    }
}

/// The clock every controller holds.
pub type SharedClock = Arc<dyn Clock>;

/// The system clock: production only. The one place the crate reads real time.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the production clock is the one sanctioned reader
    fn now(&self) -> jiff::Timestamp {
        jiff::Timestamp::now()
    }
}

/// A clock fixed at a time that tests move by hand.
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<jiff::Timestamp>);

impl ManualClock {
    /// A clock reading `at`.
    pub fn new(at: jiff::Timestamp) -> Self {
        Self(std::sync::Mutex::new(at))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().expect("clock lock");
        *now = add(*now, by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> jiff::Timestamp {
        *self.0.lock().expect("clock lock")
    }
}

/// `to − from`, floored at zero.
pub fn elapsed(from: jiff::Timestamp, to: jiff::Timestamp) -> Duration {
    let nanos = to.as_nanosecond() - from.as_nanosecond();
    if nanos <= 0 { Duration::ZERO } else { Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)) }
}

/// `t + d`, saturating at the end of jiff's range.
pub fn add(t: jiff::Timestamp, d: Duration) -> jiff::Timestamp {
    let span = jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX);
    t.checked_add(span).unwrap_or(jiff::Timestamp::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(jiff::Timestamp::from_second(1_000).unwrap());
        let before = clock.now_time();
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.since(&before), Duration::from_secs(90));
        assert_eq!(elapsed(clock.now(), before.0), Duration::ZERO);
    }
}
