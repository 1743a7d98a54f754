//! Prices (karpenter-behaviour.md §3.4): on-demand from a built-in table (Karpenter's static
//! fallback) until the Price List API answers (`price_list.rs`, merged in with
//! [`PricingProvider::merge_on_demand`]), spot from `DescribeSpotPriceHistory`.
//!
//! Until the first spot update a spot offering costs what on-demand costs; after it, a
//! (type, zone) with no spot price has no price, so its offering is unavailable.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use aws_sdk_ec2::primitives::DateTime;

use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::errors::classify;
use crate::cloudprovider::aws::price_list::{self, OnDemandPrices};
use crate::runtime::SharedClock;

/// The us-east-1 on-demand table compiled into the binary.
const BUILT_IN_ON_DEMAND: &str = include_str!("../../../data/on-demand-prices-us-east-1.csv");

/// Parses `name,price` lines (`#` comments allowed).
///
/// # Errors
/// A line that is not `name,price` with a positive price, naming the line.
pub fn parse_price_table(text: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut prices = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, price) =
            line.split_once(',').ok_or_else(|| format!("line {}: expected `name,price`, got {line:?}", number + 1))?;
        let price: f64 = price
            .trim()
            .parse()
            .map_err(|e| format!("line {}: price {price:?} of {name} is not a number: {e}", number + 1))?;
        if price <= 0.0 || !price.is_finite() {
            return Err(format!("line {}: price of {name} must be positive, got {price}", number + 1));
        }
        prices.insert(name.trim().to_owned(), price);
    }
    Ok(prices)
}

#[derive(Debug, Default)]
struct Prices {
    on_demand: BTreeMap<String, f64>,
    /// `None` until the first successful spot update.
    spot: Option<BTreeMap<(String, String), f64>>,
    seq: u64,
}

/// Shared price book; cheap to clone.
#[derive(Clone, Debug)]
pub struct PricingProvider {
    prices: Arc<RwLock<Prices>>,
}

impl Default for PricingProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl PricingProvider {
    /// A price book seeded with the built-in on-demand table.
    pub fn new() -> Self {
        let on_demand = parse_price_table(BUILT_IN_ON_DEMAND).expect("the built-in price table is valid");
        Self { prices: Arc::new(RwLock::new(Prices { on_demand, spot: None, seq: 0 })) }
    }

    /// The on-demand price of `instance_type`, if known.
    pub fn on_demand(&self, instance_type: &str) -> Option<f64> {
        self.prices.read().expect("prices").on_demand.get(instance_type).copied()
    }

    /// The spot price of `instance_type` in `zone`: on-demand before the first spot update,
    /// then only what the spot market reported.
    pub fn spot(&self, instance_type: &str, zone: &str) -> Option<f64> {
        let prices = self.prices.read().expect("prices");
        match &prices.spot {
            None => prices.on_demand.get(instance_type).copied(),
            Some(spot) => spot.get(&(instance_type.to_owned(), zone.to_owned())).copied(),
        }
    }

    /// Bumped on every change, so instance-type caches know to rebuild.
    pub fn seq(&self) -> u64 {
        self.prices.read().expect("prices").seq
    }

    /// Merges fetched on-demand prices over the known ones (upstream `lo.Assign`: a type the
    /// API no longer lists keeps its last price). Returns how many prices changed.
    pub fn merge_on_demand(&self, fetched: BTreeMap<String, f64>) -> usize {
        let mut prices = self.prices.write().expect("prices");
        let mut changed = 0;
        for (instance_type, price) in fetched {
            if prices.on_demand.insert(instance_type, price) != Some(price) {
                changed += 1;
            }
        }
        if changed > 0 {
            prices.seq += 1;
        }
        changed
    }

    /// Reads on-demand prices from the Price List API (unless the VPC is isolated or the
    /// region is GovCloud) and merges them in; on failure the previous prices are kept.
    ///
    /// # Errors
    /// The Price List API's error, or no price found.
    pub async fn refresh_on_demand(
        &self,
        client: &aws_sdk_pricing::Client,
        region: &str,
        isolated_vpc: bool,
    ) -> Result<OnDemandPrices, CloudError> {
        let fetched = price_list::fetch_on_demand(client, region, isolated_vpc).await?;
        if let OnDemandPrices::Fetched(prices) = &fetched {
            let changed = self.merge_on_demand(prices.clone());
            tracing::debug!(instance_types = prices.len(), changed, "updated on-demand pricing");
        }
        Ok(fetched)
    }

    /// Replaces the spot prices.
    pub fn set_spot(&self, spot: BTreeMap<(String, String), f64>) {
        let mut prices = self.prices.write().expect("prices");
        if prices.spot.as_ref() != Some(&spot) {
            prices.spot = Some(spot);
            prices.seq += 1;
        }
    }

    /// Fetches the current spot prices (latest per type and zone) and stores them; on failure the
    /// previous prices are kept.
    ///
    /// # Errors
    /// The EC2 error.
    pub async fn refresh_spot(&self, ec2: &aws_sdk_ec2::Client, clock: &SharedClock) -> Result<usize, CloudError> {
        let now = clock.now();
        let start = DateTime::from_secs(now.as_second());
        let pages = ec2
            .describe_spot_price_history()
            .product_descriptions("Linux/UNIX")
            .product_descriptions("Linux/UNIX (Amazon VPC)")
            .start_time(start)
            .max_results(1000)
            .into_paginator()
            .send()
            .try_collect()
            .await
            .map_err(|e| classify(&e))?;
        // Latest timestamp wins per (type, zone).
        let mut latest: BTreeMap<(String, String), (i64, f64)> = BTreeMap::new();
        for page in pages {
            for price in page.spot_price_history() {
                let (Some(instance_type), Some(zone), Some(value)) =
                    (price.instance_type(), price.availability_zone(), price.spot_price())
                else {
                    continue;
                };
                let Ok(value) = value.parse::<f64>() else { continue };
                let at = price.timestamp().map_or(0, DateTime::secs);
                let key = (instance_type.as_str().to_owned(), zone.to_owned());
                if latest.get(&key).is_none_or(|(seen, _)| at >= *seen) {
                    latest.insert(key, (at, value));
                }
            }
        }
        let count = latest.len();
        self.set_spot(latest.into_iter().map(|(key, (_, price))| (key, price)).collect());
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_table_prices_common_types() {
        let pricing = PricingProvider::new();
        let m5 = pricing.on_demand("m5.large").expect("m5.large is priced");
        assert!((m5 - 0.096).abs() < 1e-9, "m5.large costs {m5}");
        assert!(pricing.on_demand("no.such").is_none());
    }

    #[test]
    fn spot_equals_on_demand_until_the_first_update_then_only_market_prices() {
        let pricing = PricingProvider::new();
        assert_eq!(pricing.spot("m5.large", "us-east-1a"), pricing.on_demand("m5.large"));
        let seq = pricing.seq();
        pricing.set_spot(BTreeMap::from([(("m5.large".to_owned(), "us-east-1a".to_owned()), 0.035)]));
        assert!(pricing.seq() > seq);
        assert_eq!(pricing.spot("m5.large", "us-east-1a"), Some(0.035));
        assert_eq!(pricing.spot("m5.large", "us-east-1b"), None);
    }

    #[test]
    fn fetched_on_demand_prices_merge_over_the_table() {
        let pricing = PricingProvider::new();
        let seq = pricing.seq();
        let changed = pricing.merge_on_demand(BTreeMap::from([
            ("m5.large".to_owned(), 0.2),
            ("c5.large".to_owned(), pricing.on_demand("c5.large").expect("priced")),
        ]));
        assert_eq!(changed, 1, "c5.large kept its price");
        assert!(pricing.seq() > seq, "instance types rebuild after a change");
        assert_eq!(pricing.on_demand("m5.large"), Some(0.2));
        assert!(pricing.on_demand("m5.xlarge").is_some(), "a type the API did not list keeps its price");
        let seq = pricing.seq();
        assert_eq!(pricing.merge_on_demand(BTreeMap::from([("m5.large".to_owned(), 0.2)])), 0);
        assert_eq!(pricing.seq(), seq, "nothing changed, nothing to rebuild");
    }

    #[test]
    fn bad_price_lines_are_named() {
        let error = parse_price_table("m5.large,0.096\nbroken\n").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
        let error = parse_price_table("m5.large,-1\n").unwrap_err();
        assert!(error.contains("positive"), "{error}");
    }
}
