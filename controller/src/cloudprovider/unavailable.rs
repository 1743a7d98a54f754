//! The unavailable-offerings cache (aws:pkg/cache/unavailableofferings.go): an ICE'd
//! (capacity type, instance type, zone) is skipped for 3 minutes. The cache is keyed in a
//! `BTreeMap` and read with the injected clock; a sequence number lets instance-type caches notice
//! that availability changed.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::types::Offering;
use crate::runtime::SharedClock;
use crate::runtime::clock::add;

/// How long an ICE'd offering stays unavailable.
pub const UNAVAILABLE_OFFERINGS_TTL: Duration = Duration::from_secs(180);

#[derive(Debug, Default)]
struct Inner {
    /// (capacity type, instance type, zone) → expiry.
    offerings: BTreeMap<(String, String, String), jiff::Timestamp>,
    /// Whole capacity types (e.g. spot without the service-linked role) → expiry.
    capacity_types: BTreeMap<String, jiff::Timestamp>,
    seq: u64,
}

/// The ICE cache shared by the launch path, the instance-type provider and interruption.
pub struct UnavailableOfferings {
    clock: SharedClock,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for UnavailableOfferings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnavailableOfferings").field("inner", &self.inner).finish()
    }
}

impl UnavailableOfferings {
    /// An empty cache reading `clock`.
    pub fn new(clock: SharedClock) -> Self {
        Self { clock, inner: Mutex::new(Inner::default()) }
    }

    /// Marks an offering unavailable for [`UNAVAILABLE_OFFERINGS_TTL`].
    pub fn mark_unavailable(&self, reason: &str, capacity_type: &str, instance_type: &str, zone: &str) {
        let until = add(self.clock.now(), UNAVAILABLE_OFFERINGS_TTL);
        tracing::debug!(reason, capacity_type, instance_type, zone, "removing offering from offerings");
        let mut inner = self.inner.lock().expect("ice cache lock");
        inner.offerings.insert((capacity_type.into(), instance_type.into(), zone.into()), until);
        inner.seq += 1;
    }

    /// Marks a whole capacity type unavailable for [`UNAVAILABLE_OFFERINGS_TTL`].
    pub fn mark_capacity_type_unavailable(&self, capacity_type: &str) {
        let until = add(self.clock.now(), UNAVAILABLE_OFFERINGS_TTL);
        let mut inner = self.inner.lock().expect("ice cache lock");
        inner.capacity_types.insert(capacity_type.into(), until);
        inner.seq += 1;
    }

    /// Whether the offering is currently ICE-cached.
    pub fn is_unavailable(&self, capacity_type: &str, instance_type: &str, zone: &str) -> bool {
        let now = self.clock.now();
        let inner = self.inner.lock().expect("ice cache lock");
        inner.capacity_types.get(capacity_type).is_some_and(|until| *until > now)
            || inner
                .offerings
                .get(&(capacity_type.to_string(), instance_type.to_string(), zone.to_string()))
                .is_some_and(|until| *until > now)
    }

    /// Applies the cache to an instance type's offerings.
    pub fn apply(&self, instance_type: &str, offerings: &mut [Offering]) {
        for offering in offerings {
            if offering.reservation_id.is_none()
                && self.is_unavailable(&offering.capacity_type, instance_type, &offering.zone)
            {
                offering.available = false;
            }
        }
    }

    /// Drops expired entries (swept every 10 s in Karpenter); returns how many were dropped.
    pub fn sweep(&self) -> usize {
        let now = self.clock.now();
        let mut inner = self.inner.lock().expect("ice cache lock");
        let before = inner.offerings.len() + inner.capacity_types.len();
        inner.offerings.retain(|_, until| *until > now);
        inner.capacity_types.retain(|_, until| *until > now);
        let dropped = before - inner.offerings.len() - inner.capacity_types.len();
        if dropped > 0 {
            inner.seq += 1;
        }
        dropped
    }

    /// Changes whenever an entry is added or expires (for cache invalidation).
    pub fn seq(&self) -> u64 {
        self.inner.lock().expect("ice cache lock").seq
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::runtime::clock::{Clock, ManualClock};

    #[test]
    fn ice_entry_expires_after_three_minutes() {
        let clock = Arc::new(ManualClock::new(jiff::Timestamp::from_second(0).unwrap()));
        let cache = UnavailableOfferings::new(clock.clone());
        cache.mark_unavailable("InsufficientInstanceCapacity", "spot", "m5.large", "us-east-1a");
        assert!(cache.is_unavailable("spot", "m5.large", "us-east-1a"));
        assert!(!cache.is_unavailable("on-demand", "m5.large", "us-east-1a"));
        clock.advance(Duration::from_secs(179));
        assert!(cache.is_unavailable("spot", "m5.large", "us-east-1a"));
        clock.advance(Duration::from_secs(1));
        assert!(!cache.is_unavailable("spot", "m5.large", "us-east-1a"));
        assert_eq!(cache.sweep(), 1);
        let _ = clock.now();
    }
}
