//! The generator's dice: one seeded stream per story, and the few ways it draws.
//!
//! Every story draws from `derive_rng(seed, "generate/story")` (SHA-256 of the seed and the
//! name into ChaCha8, as every stream of a world is derived), so the same seed generates the
//! same story on every machine and Rust version.

use rand::Rng;

use dovetail_world::{SimDuration, SimRng, derive_rng};

/// The name of the generator's stream (distinct from every stream a world uses).
pub const STREAM: &str = "generate/story";

/// A story's dice.
pub struct Dice {
    rng: SimRng,
}

impl Dice {
    /// The dice for story `seed`.
    pub fn new(seed: u64) -> Self {
        Self { rng: derive_rng(seed, STREAM) }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.random::<f64>() < p
    }

    /// A whole number in `lo..=hi`.
    pub fn int(&mut self, lo: u32, hi: u32) -> u32 {
        self.rng.random_range(lo..=hi)
    }

    /// A fraction in `lo..hi`, to two decimals (readable in the printed story).
    pub fn fraction(&mut self, lo: f64, hi: f64) -> f64 {
        ((lo + (hi - lo) * self.rng.random::<f64>()) * 100.0).round() / 100.0
    }

    /// One of `options`.
    pub fn pick<'a, T: ?Sized>(&mut self, options: &[&'a T]) -> &'a T {
        options[self.rng.random_range(0..options.len())]
    }

    /// `k` distinct indices of `0..n`, in increasing order.
    pub fn subset(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        for i in 0..n {
            let j = self.rng.random_range(i..n);
            all.swap(i, j);
        }
        let mut out: Vec<usize> = all.into_iter().take(k.min(n)).collect();
        out.sort_unstable();
        out
    }

    /// Whole seconds in `lo..=hi`.
    pub fn seconds(&mut self, lo: u64, hi: u64) -> SimDuration {
        secs(self.rng.random_range(lo..=hi))
    }
}

/// `n` seconds.
pub fn secs(n: u64) -> SimDuration {
    SimDuration(std::time::Duration::from_secs(n))
}

/// `n` minutes.
pub fn mins(n: u64) -> SimDuration {
    secs(n * 60)
}
