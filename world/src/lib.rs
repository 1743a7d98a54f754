//! The deterministic world's primitives, shared by the simulated API server, the fake
//! cloud's host and the simulator: one clock, one derivation of named random streams, one
//! trace, one duration type. Everything here is a pure function of the seed and turmoil's
//! simulated time.

pub mod clock;
pub mod cpu_meter;
pub mod duration;
pub mod rng;
pub mod trace;

pub use clock::Clock;
pub use duration::SimDuration;
pub use rng::{SimRng, Stream, derive_rng, derive_seed};
pub use trace::{Trace, TraceEntry};

// turmoil seeds tokio's scheduler (the order `select!` polls its branches) only under
// `--cfg tokio_unstable`. Without it a run is no longer a function of its seed, and a user's
// own `RUSTFLAGS` silently replaces `.cargo/config.toml`'s flags: refuse to build instead.
#[cfg(not(tokio_unstable))]
compile_error!(
    "the deterministic world needs `--cfg tokio_unstable` (set in .cargo/config.toml); \
     if you set RUSTFLAGS yourself, add `--cfg tokio_unstable` to it"
);
