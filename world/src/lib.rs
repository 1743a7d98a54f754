//! The deterministic world's primitives, shared by the simulated API server, the fake
//! cloud's host and the simulator: one clock, one derivation of named random streams, one
//! trace, one duration type. Everything here is a pure function of the seed and turmoil's
//! simulated time.

pub mod clock;
pub mod duration;
pub mod rng;
pub mod trace;

pub use clock::Clock;
pub use duration::SimDuration;
pub use rng::{SimRng, Stream, derive_rng, derive_seed};
pub use trace::{Trace, TraceEntry};
