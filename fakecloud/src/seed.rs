//! Stable keyed hashing.
//!
//! Every random choice in the fake cloud comes from the caller's seed. Choices that must not
//! depend on call order (a pool's size, a spot price in a given hour) are pure functions of
//! `(seed, key)`; sequential choices (launch delays, tie-breaks) come from per-component
//! ChaCha streams named in [`dovetail_world::Stream`] (`Stream::CloudLaunch`, ...), derived
//! exactly as the world's own, so the whole run has one derivation of named streams and
//! turning one fault on does not shift the draws of another component.

/// splitmix64's finaliser: a cheap, well-mixed, platform-independent 64-bit permutation.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable hash of `seed` and a list of string parts (FNV-1a folded through [`mix`]).
///
/// Unlike `std::hash`, the result is the same on every platform, build and process.
pub(crate) fn hash_parts(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = mix(seed ^ 0xCBF2_9CE4_8422_2325);
    for part in parts {
        for byte in part.bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01B3);
        }
        // A separator, so ("ab","c") and ("a","bc") differ.
        h = mix(h ^ 0xFF);
    }
    h
}

/// Maps a hash to a float in `[0, 1)` using its top 53 bits.
pub(crate) fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_parts_separates_boundaries() {
        assert_ne!(hash_parts(1, &["ab", "c"]), hash_parts(1, &["a", "bc"]));
        assert_eq!(hash_parts(1, &["ab", "c"]), hash_parts(1, &["ab", "c"]));
        assert_ne!(hash_parts(1, &["x"]), hash_parts(2, &["x"]));
    }

    #[test]
    fn unit_stays_in_range() {
        for i in 0..1000 {
            let u = unit(mix(i));
            assert!((0.0..1.0).contains(&u));
        }
    }
}
