//! EC2-style request throttling: a token bucket per API action.
//!
//! EC2 meters each action with a bucket (a burst capacity and a refill rate); an empty
//! bucket answers `RequestLimitExceeded`. Buckets refill continuously in simulated time.

use std::collections::BTreeMap;
use std::time::Duration;

/// A bucket's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketSpec {
    /// Burst size.
    pub capacity: f64,
    /// Tokens added per second.
    pub refill_per_sec: f64,
}

/// Bucket shapes per action, with EC2's published defaults as the starting point
/// (describe-class 100 burst / 20 per s, mutating 200 / 5, RunInstances 1000 / 2,
/// TerminateInstances 1000 / 20).
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleConfig {
    /// Overrides by action name.
    pub per_action: BTreeMap<String, BucketSpec>,
    /// Actions starting with `Describe`.
    pub describe: BucketSpec,
    /// Every other action.
    pub mutating: BucketSpec,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        let per_action = [
            ("RunInstances", BucketSpec { capacity: 1000.0, refill_per_sec: 2.0 }),
            ("TerminateInstances", BucketSpec { capacity: 1000.0, refill_per_sec: 20.0 }),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Self {
            per_action,
            describe: BucketSpec { capacity: 100.0, refill_per_sec: 20.0 },
            mutating: BucketSpec { capacity: 200.0, refill_per_sec: 5.0 },
        }
    }
}

impl ThrottleConfig {
    /// A config where every action allows `capacity` calls in a burst and `refill_per_sec` after.
    pub fn uniform(capacity: f64, refill_per_sec: f64) -> Self {
        let spec = BucketSpec { capacity, refill_per_sec };
        Self { per_action: BTreeMap::new(), describe: spec, mutating: spec }
    }

    fn spec(&self, action: &str) -> BucketSpec {
        if let Some(spec) = self.per_action.get(action) {
            *spec
        } else if action.starts_with("Describe") {
            self.describe
        } else {
            self.mutating
        }
    }
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: Duration,
}

/// Live buckets.
#[derive(Debug, Clone)]
pub struct Throttle {
    config: ThrottleConfig,
    buckets: BTreeMap<String, Bucket>,
}

impl Throttle {
    /// Full buckets with the given shapes.
    pub fn new(config: ThrottleConfig) -> Self {
        Self { config, buckets: BTreeMap::new() }
    }

    /// Takes a token for `action` at `now`; `false` means throttled.
    pub fn admit(&mut self, action: &str, now: Duration) -> bool {
        let spec = self.config.spec(action);
        let bucket = self.buckets.entry(action.to_string()).or_insert(Bucket { tokens: spec.capacity, at: now });
        let elapsed = now.saturating_sub(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * spec.refill_per_sec).min(spec.capacity);
        bucket.at = bucket.at.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_bursts_then_refills() {
        let mut t = Throttle::new(ThrottleConfig::uniform(2.0, 1.0));
        assert!(t.admit("DescribeInstances", Duration::ZERO));
        assert!(t.admit("DescribeInstances", Duration::ZERO));
        assert!(!t.admit("DescribeInstances", Duration::ZERO));
        assert!(t.admit("CreateFleet", Duration::ZERO), "buckets are per action");
        assert!(!t.admit("DescribeInstances", Duration::from_millis(900)));
        assert!(t.admit("DescribeInstances", Duration::from_millis(1900)));
    }
}
