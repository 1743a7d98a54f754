//! The deterministic world: one seed, one thread, simulated time.
//!
//! A run is a turmoil simulation built from a root seed. Every component derives its own
//! random stream from that seed ([`rng`]), reads time only from the simulated clock
//! ([`clock`]), and records what it does in the run's [`trace`], whose hash is the run's
//! fingerprint.

pub use dovetail_world::{clock, duration, rng, trace};

use std::time::Duration;

pub use dovetail_world::{Clock, SimDuration, SimRng, Trace, TraceEntry, derive_rng, derive_seed};

/// Settings of the simulated network and scheduler loop.
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

/// Builds a turmoil simulation that is a pure function of the seed.
///
/// Also seeds the thread-local `fastrand` that the AWS SDK (retry jitter, idempotency
/// tokens) and kube-runtime's backoff draw from, since turmoil runs every host on this
/// thread.
pub fn build_sim<'a>(cfg: &WorldConfig) -> turmoil::Sim<'a> {
    fastrand::seed(derive_seed(cfg.seed, "fastrand"));
    turmoil::Builder::new()
        .rng_seed(derive_seed(cfg.seed, "turmoil"))
        .epoch(clock::sim_epoch())
        .simulation_duration(cfg.duration)
        .tick_duration(cfg.tick)
        .min_message_latency(cfg.min_latency)
        .max_message_latency(cfg.max_latency)
        .build()
}
