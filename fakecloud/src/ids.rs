//! Resource identifiers that look like EC2's and depend only on the seed and creation order.

use crate::seed::mix;

/// Hands out EC2-shaped ids (`i-0…`, `r-0…`, `fleet-…`) from a per-kind counter.
///
/// The counter is scrambled through the seed, so ids look random (as EC2's do, which keeps
/// code from relying on their order) while the same seed and the same sequence of calls
/// always produce the same ids.
#[derive(Debug, Clone)]
pub(crate) struct IdGen {
    seed: u64,
    next: u64,
}

impl IdGen {
    pub(crate) fn new(seed: u64) -> Self {
        Self { seed, next: 0 }
    }

    fn draw(&mut self, kind: u64) -> u64 {
        self.next += 1;
        mix(self.seed ^ mix(self.next ^ (kind << 56)))
    }

    /// A 17-hex-digit id with a prefix, e.g. `i-0a1b2c3d4e5f60718`.
    pub(crate) fn long(&mut self, prefix: &str) -> String {
        let kind = prefix.bytes().fold(0u64, |a, b| a.wrapping_mul(31) ^ u64::from(b));
        format!("{prefix}-0{:016x}", self.draw(kind))
    }

    /// A UUID-shaped id, as fleets, SQS messages and request ids use.
    pub(crate) fn uuid(&mut self) -> String {
        let a = self.draw(0xAA);
        let b = self.draw(0xBB);
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xFFFF,
            a & 0x0FFF,
            0x8000 | ((b >> 48) & 0x3FFF),
            b & 0xFFFF_FFFF_FFFF
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_ec2_shaped_and_reproducible() {
        let mut a = IdGen::new(42);
        let mut b = IdGen::new(42);
        let id = a.long("i");
        assert_eq!(id.len(), "i-0123456789abcdef0".len());
        assert!(id.starts_with("i-0"));
        assert_eq!(id, b.long("i"));
        assert_ne!(a.long("i"), id);
        let u = a.uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(u.as_bytes()[14], b'4');
    }
}
