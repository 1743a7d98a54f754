//! The only wall clock of the simulator.
//!
//! Simulated time is a fixed epoch plus turmoil's elapsed time. Kubernetes timestamps
//! (creationTimestamp, deletionTimestamp, condition times), billing and the trace all read
//! it here, so a run is the same whatever day and machine it runs on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::Timestamp;

/// The simulated epoch: 2026-01-01T00:00:00Z. Fixed so that traces never change with
/// the calendar.
pub const SIM_EPOCH_UNIX_SECS: u64 = 1_767_225_600;

/// The simulated epoch as a `SystemTime`, for turmoil's builder.
pub fn sim_epoch() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(SIM_EPOCH_UNIX_SECS)
}

/// Where a world's "now" comes from.
#[derive(Clone, Debug)]
pub enum Clock {
    /// Inside a turmoil simulation: the sim's epoch plus its elapsed time.
    Simulated,
    /// Served to real clients in real time (`dovetail serve` without a simulation): the
    /// simulated epoch plus the tokio time elapsed since `start`. Tokio's clock is the
    /// process monotonic clock here, which is the point: this mode is interactive.
    RealTime {
        /// When the world started, on tokio's clock.
        start: tokio::time::Instant,
    },
    /// A clock that stays where a test puts it.
    Fixed(Duration),
}

impl Clock {
    /// Time since the simulated epoch.
    pub fn elapsed(&self) -> Duration {
        match self {
            Clock::Simulated => turmoil::sim_elapsed().unwrap_or_else(mirrored_sim_elapsed),
            Clock::RealTime { start } => start.elapsed(),
            Clock::Fixed(d) => *d,
        }
    }

    /// The current simulated wall time.
    pub fn now(&self) -> SystemTime {
        sim_epoch() + self.elapsed()
    }

    /// The current time as a Kubernetes `Time` string (RFC 3339, second precision).
    pub fn now_rfc3339(&self) -> String {
        rfc3339(self.now())
    }
}

/// Simulated time published by the thread that steps the simulation, for readers on other
/// threads. Only `dovetail serve` publishes (its real-TCP thread serves the simulated API
/// server, outside turmoil); in deterministic runs nothing does and this stays zero, as
/// `turmoil::sim_elapsed()` outside a host always was.
static MIRRORED_NANOS: AtomicU64 = AtomicU64::new(0);

/// Publishes the simulation's elapsed time for threads outside turmoil (`dovetail serve`).
pub fn mirror_sim_elapsed(elapsed: Duration) {
    MIRRORED_NANOS.store(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The last time published by [`mirror_sim_elapsed`].
fn mirrored_sim_elapsed() -> Duration {
    Duration::from_nanos(MIRRORED_NANOS.load(Ordering::Relaxed))
}

/// Formats a time as Kubernetes does in `metav1.Time` (RFC 3339, seconds, `Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    Timestamp::from_second(secs).map(|ts| ts.to_string()).unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// Parses a Kubernetes `Time` string back to a `SystemTime`.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let ts: Timestamp = s.parse().ok()?;
    let secs = u64::try_from(ts.as_second()).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(ts.subsec_nanosecond() as u64))
}

/// A `SystemTime` as the jiff timestamp k8s-openapi's `Time` wraps.
pub fn timestamp(t: SystemTime) -> Timestamp {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    Timestamp::new(d.as_secs() as i64, 0).unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_metav1_time() {
        assert_eq!(rfc3339(sim_epoch()), "2026-01-01T00:00:00Z");
        let c = Clock::Fixed(Duration::from_millis(61_500));
        assert_eq!(c.now_rfc3339(), "2026-01-01T00:01:01Z");
        assert_eq!(parse_rfc3339("2026-01-01T00:01:01Z"), Some(sim_epoch() + Duration::from_secs(61)));
    }
}
