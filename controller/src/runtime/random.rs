//! The injected random source: one seeded ChaCha stream shared by the controller's loops
//! (backoff jitter, tie-breaks). The simulator seeds it from the run's seed; production seeds it
//! from the OS once at start.

use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The controller's random source.
#[derive(Clone, Debug)]
pub struct SharedRng(Arc<Mutex<ChaCha8Rng>>);

impl SharedRng {
    /// A stream from a fixed seed (the simulator, tests).
    pub fn from_seed(seed: u64) -> Self {
        Self(Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(seed))))
    }

    /// Runs `f` with the generator.
    pub fn with<T>(&self, f: impl FnOnce(&mut ChaCha8Rng) -> T) -> T {
        f(&mut self.0.lock().expect("rng lock"))
    }
}
