//! The deterministic world: one seed, one thread, simulated time.
//!
//! A run is a turmoil simulation built from a root seed. Every component derives its own
//! random stream from that seed ([`rng`]), reads time only from the simulated clock
//! ([`clock`]), and records what it does in the run's [`trace`], whose hash is the run's
//! fingerprint.
//!
//! Start at [`World::builder`]: it is the one place a world is assembled (API server,
//! cluster actors, fake cloud, controller replicas). [`ScenarioWorld`] is a scenario's
//! world with the plan its seed drew, and [`reproduce_command`] the one line that replays
//! a run.

pub use dovetail_world::{clock, duration, rng, trace};

mod builder;
mod reproduce;
mod scenario;

use std::time::Duration;

pub use builder::{World, WorldBuilder};
pub use dovetail_world::{Clock, SimDuration, SimRng, Stream, Trace, TraceEntry, derive_rng, derive_seed};
pub use reproduce::reproduce_command;
pub use scenario::{ScenarioWorld, WorldSettings};

/// Settings of the simulated network and scheduler loop. [`WorldBuilder`] sets them; the
/// defaults are [`WorldConfig::new`]'s.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    /// The run's root seed.
    pub seed: u64,
    /// How long the simulation may run (turmoil fails a run that exceeds it).
    pub duration: Duration,
    /// turmoil's tick: the granularity of simulated time. Coarser is faster (every host
    /// is polled each tick); 10 ms keeps HTTP exchanges realistic.
    pub tick: Duration,
    /// Minimum one-way message latency.
    pub min_latency: Duration,
    /// Maximum one-way message latency.
    pub max_latency: Duration,
}

impl WorldConfig {
    /// Defaults for a seed: 10 ms tick, 1–5 ms links, one simulated hour.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            duration: Duration::from_secs(3600),
            tick: Duration::from_millis(10),
            min_latency: Duration::from_millis(1),
            max_latency: Duration::from_millis(5),
        }
    }
}
