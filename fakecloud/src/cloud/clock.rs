//! Where the fake cloud reads the current time from: turmoil's simulated clock inside a
//! simulation, tokio time for a live server.

use std::time::Duration;

/// A source of the cloud's current time, measured from the cloud's simulated instant zero.
pub trait CloudClock: Send + Sync + 'static {
    /// The current time, or `None` when the caller stands outside the clock's world (code
    /// between turmoil steps, which is in no host).
    fn now(&self) -> Option<Duration>;
}

/// turmoil's simulated time (`turmoil::sim_elapsed`), exact to the instant inside a host's
/// tick; `None` outside every host.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurmoilClock;

impl CloudClock for TurmoilClock {
    fn now(&self) -> Option<Duration> {
        turmoil::sim_elapsed()
    }
}

/// Tokio time since the clock was created: simulated under a paused runtime, real time
/// for a live server on 127.0.0.1.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: tokio::time::Instant,
    offset: Duration,
}

impl TokioClock {
    /// A clock that reads `offset` now and advances with tokio time.
    pub fn starting_at(offset: Duration) -> Self {
        Self { start: tokio::time::Instant::now(), offset }
    }
}

impl CloudClock for TokioClock {
    fn now(&self) -> Option<Duration> {
        Some(self.offset + self.start.elapsed())
    }
}
