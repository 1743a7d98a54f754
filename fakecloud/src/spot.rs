//! The spot market: a seeded, bounded price process per pool and the interruption hazard.
//!
//! A pool's price is piecewise constant over periods (default one hour). The price in
//! period k is a pure function of `(seed, type, zone, k)`: a two-term moving average of
//! hashed noise around the reference price, so it wanders smoothly, stays within
//! ±amplitude, never exceeds on-demand (as in EC2 since 2017), and can be evaluated at any
//! time without replaying history. Scenarios can pin a pool's price from a given time on.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::catalog::{InstanceTypeInfo, InterruptionBucket};
use crate::config::CloudConfig;
use crate::seed::{hash_parts, unit};

/// Thirty days: the Spot Advisor's interruption frequency is a share per month.
const MONTH: Duration = Duration::from_secs(30 * 86_400);

/// Bucket assumed for types the Spot Advisor does not list.
const DEFAULT_BUCKET: InterruptionBucket = InterruptionBucket::From5To10;

/// The spot price process and scenario price overrides.
#[derive(Debug, Clone)]
pub struct SpotMarket {
    seed: u64,
    period: Duration,
    amplitude: f64,
    overrides: BTreeMap<(String, String), Vec<(Duration, f64)>>,
}

impl SpotMarket {
    pub(crate) fn new(config: &CloudConfig) -> Self {
        assert!(!config.spot_price_period.is_zero(), "spot price period must be positive");
        assert!((0.0..1.0).contains(&config.spot_price_amplitude), "amplitude in [0, 1)");
        Self {
            seed: config.seed,
            period: config.spot_price_period,
            amplitude: config.spot_price_amplitude,
            overrides: BTreeMap::new(),
        }
    }

    /// Length of one price period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Start of the period containing `t`.
    pub fn period_start(&self, t: Duration) -> Duration {
        let k = t.as_nanos() / self.period.as_nanos();
        self.period * k as u32
    }

    fn noise(&self, ty: &str, zone: &str, k: u128) -> f64 {
        unit(hash_parts(self.seed, &["spot-price", ty, zone, &k.to_string()])) * 2.0 - 1.0
    }

    /// A zone's stable premium or discount on the reference price, within ±10%.
    fn zone_factor(&self, ty: &str, zone: &str) -> f64 {
        0.9 + 0.2 * unit(hash_parts(self.seed, &["spot-zone", ty, zone]))
    }

    /// The spot price of `info` in `zone` at `t`, in USD/hour; `None` if the type has no
    /// price at all (Karpenter then treats the offering as unavailable).
    pub fn price(&self, info: &InstanceTypeInfo, zone: &str, t: Duration) -> Option<f64> {
        if let Some(points) = self.overrides.get(&(info.name.clone(), zone.to_string()))
            && let Some((_, price)) = points.iter().rev().find(|(from, _)| *from <= t)
        {
            return Some(*price);
        }
        let reference = info.spot_reference_price()?;
        let k = t.as_nanos() / self.period.as_nanos();
        let prev = if k == 0 { 0.0 } else { self.noise(&info.name, zone, k - 1) };
        let wiggle = 0.6 * self.noise(&info.name, zone, k) + 0.4 * prev;
        let price = reference * self.zone_factor(&info.name, zone) * (1.0 + self.amplitude * wiggle);
        let cap = info.on_demand_price.unwrap_or(f64::INFINITY);
        // Round to EC2's six decimals so the wire value and the billed value agree.
        Some((price.min(cap) * 1e6).round() / 1e6)
    }

    /// Scenario control: from `from` on, the pool costs `price` USD/hour.
    pub fn pin_price(&mut self, instance_type: &str, zone: &str, from: Duration, price: f64) {
        let points = self.overrides.entry((instance_type.into(), zone.into())).or_default();
        points.push((from, price));
        points.sort_by_key(|a| a.0);
    }

    /// USD for running `info` in `zone` on spot from `start` to `end`, integrating the
    /// piecewise-constant price per second.
    pub fn cost(&self, info: &InstanceTypeInfo, zone: &str, start: Duration, end: Duration) -> f64 {
        let mut total = 0.0;
        let mut t = start;
        let pins: Vec<Duration> = self
            .overrides
            .get(&(info.name.clone(), zone.to_string()))
            .map(|p| p.iter().map(|(from, _)| *from).collect())
            .unwrap_or_default();
        // Bounded: one step per period boundary or pin inside [start, end).
        while t < end {
            let mut next = (self.period_start(t) + self.period).min(end);
            if let Some(pin) = pins.iter().find(|p| **p > t && **p < next) {
                next = *pin;
            }
            let price = self.price(info, zone, t).unwrap_or(0.0);
            total += price * (next - t).as_secs_f64() / 3600.0;
            t = next;
        }
        total
    }

    /// Draws the time until a spot instance of this type is interrupted, from an exponential
    /// distribution whose monthly probability is the Spot Advisor bucket's midpoint times
    /// `multiplier`. `u` is a uniform draw in `[0, 1)`. `None` = not within ten years.
    pub fn time_to_interruption(info: &InstanceTypeInfo, multiplier: f64, u: f64) -> Option<Duration> {
        if multiplier <= 0.0 {
            return None;
        }
        let p = info.interruption.unwrap_or(DEFAULT_BUCKET).monthly_fraction();
        let rate_per_sec = -(1.0 - p).ln() / MONTH.as_secs_f64() * multiplier;
        let secs = -(1.0 - u).ln() / rate_per_sec;
        (secs.is_finite() && secs < 10.0 * 365.0 * 86_400.0).then(|| Duration::from_secs_f64(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::small;
    use crate::config::EPOCH_2026;
    use std::time::UNIX_EPOCH;

    fn market(seed: u64) -> SpotMarket {
        SpotMarket::new(&CloudConfig::new(seed, UNIX_EPOCH + EPOCH_2026))
    }

    #[test]
    fn prices_are_bounded_and_seeded() {
        let catalog = small();
        let m5 = catalog.get("m5.large").expect("m5.large");
        let m = market(9);
        for hour in 0..200u64 {
            let t = Duration::from_secs(hour * 3600 + 17);
            let p = m.price(m5, "us-west-2a", t).expect("priced");
            assert!((0.04 * 0.9 * 0.85 - 1e-6..=0.04 * 1.1 * 1.15 + 1e-6).contains(&p), "{p}");
            assert_eq!(Some(p), market(9).price(m5, "us-west-2a", t));
        }
        let a = m.price(m5, "us-west-2a", Duration::ZERO);
        assert_ne!(a, market(10).price(m5, "us-west-2a", Duration::ZERO));
    }

    #[test]
    fn cost_integrates_across_periods_and_pins() {
        let catalog = small();
        let m5 = catalog.get("m5.large").expect("m5.large");
        let mut m = market(9);
        let p0 = m.price(m5, "us-west-2a", Duration::ZERO).expect("priced");
        let p1 = m.price(m5, "us-west-2a", Duration::from_secs(3600)).expect("priced");
        let c = m.cost(m5, "us-west-2a", Duration::from_secs(1800), Duration::from_secs(5400));
        assert!((c - (p0 * 0.5 + p1 * 0.5)).abs() < 1e-12);
        m.pin_price("m5.large", "us-west-2a", Duration::from_secs(2700), 0.5);
        let c = m.cost(m5, "us-west-2a", Duration::from_secs(1800), Duration::from_secs(3600));
        assert!((c - (p0 * 0.25 + 0.5 * 0.25)).abs() < 1e-12);
    }

    #[test]
    fn hazard_follows_the_bucket() {
        let catalog = small();
        let m5 = catalog.get("m5.large").expect("m5.large");
        let median = SpotMarket::time_to_interruption(m5, 1.0, 0.5).expect("finite");
        // Months, not minutes, at the real rate; a multiplier of 1000 brings it to hours.
        assert!(median > Duration::from_secs(30 * 86_400));
        let fast = SpotMarket::time_to_interruption(m5, 1000.0, 0.5).expect("finite");
        assert!(fast < Duration::from_secs(86_400));
        assert_eq!(SpotMarket::time_to_interruption(m5, 0.0, 0.5), None);
    }
}
