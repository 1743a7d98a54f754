//! Capacity pools: how many more instances of a type EC2 can place in a zone right now.
//!
//! One pool per (instance type, zone, capacity type). A pool's size is a pure function of
//! the seed and its key, so it does not depend on the order pools are first touched. Free
//! slots are consumed by launches, returned by terminations and refill slowly over time;
//! the refill is computed lazily from the elapsed time, so idle pools cost nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::CloudConfig;
use crate::seed::{hash_parts, unit};

/// On-demand or spot: the two purchase options the fake models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CapacityType {
    /// Pay-as-you-go, never interrupted.
    OnDemand,
    /// Spare capacity at the spot price, reclaimed with two minutes' notice.
    Spot,
}

impl CapacityType {
    /// The name EC2 and Karpenter use: `on-demand` or `spot`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OnDemand => "on-demand",
            Self::Spot => "spot",
        }
    }

    /// Parses `on-demand` / `spot`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "on-demand" => Some(Self::OnDemand),
            "spot" => Some(Self::Spot),
            _ => None,
        }
    }
}

/// Identifies a pool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PoolKey {
    /// Instance type name.
    pub instance_type: String,
    /// Zone name.
    pub zone: String,
    /// Purchase option.
    pub capacity_type: CapacityType,
}

impl PoolKey {
    /// Builds a key.
    pub fn new(instance_type: &str, zone: &str, capacity_type: CapacityType) -> Self {
        Self { instance_type: instance_type.into(), zone: zone.into(), capacity_type }
    }
}

/// One pool's state. `free` is as of `refilled_at`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// Free instance slots as of `refilled_at`.
    pub free: u32,
    /// The most free slots the pool refills to.
    pub size: u32,
    /// One slot comes back per this period (`None` = never refills).
    pub refill_period: Option<Duration>,
    /// When `free` was last brought up to date.
    pub refilled_at: Duration,
}

impl Pool {
    fn refill(&mut self, now: Duration) {
        let Some(period) = self.refill_period.filter(|p| !p.is_zero()) else {
            self.refilled_at = now;
            return;
        };
        if now <= self.refilled_at {
            return;
        }
        if self.free >= self.size {
            self.refilled_at = now;
            return;
        }
        let elapsed = now - self.refilled_at;
        let slots = (elapsed.as_nanos() / period.as_nanos()) as u64;
        let missing = u64::from(self.size - self.free);
        if slots >= missing {
            self.free = self.size;
            self.refilled_at = now;
        } else {
            self.free += slots as u32;
            self.refilled_at += period * slots as u32;
        }
    }
}

/// All pools, created lazily with seeded sizes.
#[derive(Debug, Clone)]
pub struct Pools {
    seed: u64,
    on_demand: (u32, u32),
    spot: (u32, u32),
    refill_period: Duration,
    pools: BTreeMap<PoolKey, Pool>,
}

impl Pools {
    pub(crate) fn new(config: &CloudConfig) -> Self {
        Self {
            seed: config.seed,
            on_demand: config.on_demand_pool,
            spot: config.spot_pool,
            refill_period: config.pool_refill_period,
            pools: BTreeMap::new(),
        }
    }

    fn initial(&self, key: &PoolKey, vcpu: u32) -> Pool {
        let (lo, hi) = match key.capacity_type {
            CapacityType::OnDemand => self.on_demand,
            CapacityType::Spot => self.spot,
        };
        let u = unit(hash_parts(self.seed, &["pool", &key.instance_type, &key.zone, key.capacity_type.as_str()]));
        let two_vcpu_equivalents = f64::from(lo) + u * f64::from(hi.saturating_sub(lo));
        // Bigger instances are scarcer: a 96-vCPU pool holds 1/48 as many instances.
        let size = (two_vcpu_equivalents * 2.0 / f64::from(vcpu.max(2))).round().max(1.0) as u32;
        Pool { free: size, size, refill_period: Some(self.refill_period), refilled_at: Duration::ZERO }
    }

    fn entry(&mut self, key: &PoolKey, vcpu: u32, now: Duration) -> &mut Pool {
        if !self.pools.contains_key(key) {
            let pool = self.initial(key, vcpu);
            self.pools.insert(key.clone(), pool);
        }
        let pool = self.pools.get_mut(key).expect("inserted above");
        pool.refill(now);
        pool
    }

    /// Free slots in a pool at `now`.
    pub fn free(&mut self, key: &PoolKey, vcpu: u32, now: Duration) -> u32 {
        self.entry(key, vcpu, now).free
    }

    /// Free slots in a pool at `now`, without touching any state (observers use it).
    pub fn peek_free(&self, key: &PoolKey, vcpu: u32, now: Duration) -> u32 {
        let mut pool = self.pools.get(key).cloned().unwrap_or_else(|| self.initial(key, vcpu));
        pool.refill(now);
        pool.free
    }

    /// Takes one slot; `false` (and nothing changes) if the pool is empty.
    pub(crate) fn take(&mut self, key: &PoolKey, vcpu: u32, now: Duration) -> bool {
        let pool = self.entry(key, vcpu, now);
        if pool.free == 0 {
            return false;
        }
        pool.free -= 1;
        true
    }

    /// Returns a slot when an instance terminates.
    pub(crate) fn give_back(&mut self, key: &PoolKey, vcpu: u32, now: Duration) {
        let pool = self.entry(key, vcpu, now);
        pool.free = (pool.free + 1).min(pool.size);
    }

    /// A pool's state at `now` (created with its seeded size on first use), so a scenario
    /// can restore it after emptying it.
    pub fn snapshot(&mut self, key: &PoolKey, vcpu: u32, now: Duration) -> Pool {
        self.entry(key, vcpu, now).clone()
    }

    /// Scenario control: set a pool's free slots, size and refill period (`None` = no refill).
    /// Setting `free = 0` with no refill produces persistent ICE for that offering.
    pub fn set(&mut self, key: &PoolKey, free: u32, size: u32, refill_period: Option<Duration>, now: Duration) {
        self.pools.insert(key.clone(), Pool { free, size: size.max(free), refill_period, refilled_at: now });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EPOCH_2026;
    use std::time::UNIX_EPOCH;

    fn pools(seed: u64) -> Pools {
        Pools::new(&CloudConfig::new(seed, UNIX_EPOCH + EPOCH_2026))
    }

    #[test]
    fn sizes_are_seeded_and_order_independent() {
        let a_key = PoolKey::new("m5.large", "us-west-2a", CapacityType::Spot);
        let b_key = PoolKey::new("c5.large", "us-west-2a", CapacityType::Spot);
        let mut p1 = pools(3);
        let mut p2 = pools(3);
        let a1 = p1.free(&a_key, 2, Duration::ZERO);
        let _ = p2.free(&b_key, 2, Duration::ZERO);
        assert_eq!(p2.free(&a_key, 2, Duration::ZERO), a1);
        assert!((40..=400).contains(&a1));
    }

    #[test]
    fn take_exhausts_and_refill_restores() {
        let key = PoolKey::new("m5.large", "us-west-2a", CapacityType::Spot);
        let mut p = pools(1);
        p.set(&key, 2, 3, Some(Duration::from_secs(60)), Duration::ZERO);
        assert!(p.take(&key, 2, Duration::ZERO));
        assert!(p.take(&key, 2, Duration::ZERO));
        assert!(!p.take(&key, 2, Duration::from_secs(59)));
        assert_eq!(p.free(&key, 2, Duration::from_secs(60)), 1);
        assert_eq!(p.free(&key, 2, Duration::from_secs(150)), 2);
        assert_eq!(p.free(&key, 2, Duration::from_secs(10_000)), 3);
        p.give_back(&key, 2, Duration::from_secs(10_000));
        assert_eq!(p.free(&key, 2, Duration::from_secs(10_000)), 3, "capped at size");
    }

    #[test]
    fn a_pool_without_refill_stays_empty() {
        let key = PoolKey::new("m5.large", "us-west-2a", CapacityType::OnDemand);
        let mut p = pools(1);
        p.set(&key, 0, 10, None, Duration::ZERO);
        assert_eq!(p.free(&key, 2, Duration::from_secs(86_400)), 0);
    }
}
