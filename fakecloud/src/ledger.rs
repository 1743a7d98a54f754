//! The billing ledger and the API call log.
//!
//! Billing follows EC2's Linux rules: per second from the moment an instance enters
//! `running` until it enters `shutting-down` or `stopping`, with a 60-second minimum;
//! on-demand at the catalog price, spot at the market price in effect each second.
//! (Pending time is not billed, as in EC2.)

use std::collections::BTreeMap;
use std::time::Duration;

use crate::capacity::CapacityType;
use crate::catalog::Catalog;
use crate::spot::SpotMarket;

/// Tag that names an instance's NodePool; costs are grouped by it.
pub const NODEPOOL_TAG: &str = "karpenter.sh/nodepool";

/// EC2 bills Linux instances for at least a minute.
pub const MINIMUM_BILLED: Duration = Duration::from_secs(60);

/// One instance's billable interval.
#[derive(Debug, Clone, PartialEq)]
pub struct BillingRecord {
    /// Instance id.
    pub instance_id: String,
    /// Instance type.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
    /// Purchase option.
    pub capacity_type: CapacityType,
    /// Value of the NodePool tag (latest seen), if any.
    pub nodepool: Option<String>,
    /// Entered running.
    pub start: Duration,
    /// Billing stopped, or `None` while still billed.
    pub end: Option<Duration>,
}

/// Money spent and being spent, grouped the ways a cost report needs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CostReport {
    /// Total USD billed up to the report time.
    pub total_usd: f64,
    /// USD per hour of the instances billed at the report time.
    pub rate_usd_per_hour: f64,
    /// Total by `on-demand` / `spot`.
    pub total_by_capacity_type: BTreeMap<String, f64>,
    /// Total by NodePool tag (`""` for untagged).
    pub total_by_nodepool: BTreeMap<String, f64>,
    /// Total by zone.
    pub total_by_zone: BTreeMap<String, f64>,
    /// Current rate by capacity type.
    pub rate_by_capacity_type: BTreeMap<String, f64>,
    /// Current rate by NodePool.
    pub rate_by_nodepool: BTreeMap<String, f64>,
    /// Current rate by zone.
    pub rate_by_zone: BTreeMap<String, f64>,
}

/// One API call as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApiCall {
    /// Simulated time of the call.
    pub at: Duration,
    /// Action, e.g. `CreateFleet` or `SQS.ReceiveMessage`.
    pub action: String,
    /// `OK` or the error code returned.
    pub outcome: String,
}

/// Billing records and the call log.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// Records by instance id.
    pub records: BTreeMap<String, BillingRecord>,
    /// Every API call in order.
    pub calls: Vec<ApiCall>,
}

impl Ledger {
    pub(crate) fn open(&mut self, record: BillingRecord) {
        self.records.insert(record.instance_id.clone(), record);
    }

    pub(crate) fn close(&mut self, instance_id: &str, at: Duration) {
        if let Some(r) = self.records.get_mut(instance_id)
            && r.end.is_none()
        {
            r.end = Some(at);
        }
    }

    pub(crate) fn retag(&mut self, instance_id: &str, nodepool: Option<String>) {
        if let Some(r) = self.records.get_mut(instance_id) {
            r.nodepool = nodepool;
        }
    }

    /// USD billed for one record up to `now`.
    pub fn cost_of(&self, record: &BillingRecord, now: Duration, catalog: &Catalog, market: &SpotMarket) -> f64 {
        let Some(info) = catalog.get(&record.instance_type) else {
            return 0.0;
        };
        let end = record.end.unwrap_or(now).max(record.start);
        // The minimum applies once billing has stopped; a live instance accrues second by second.
        let end = if record.end.is_some() { end.max(record.start + MINIMUM_BILLED) } else { end };
        match record.capacity_type {
            CapacityType::OnDemand => info.on_demand_price.unwrap_or(0.0) * (end - record.start).as_secs_f64() / 3600.0,
            CapacityType::Spot => market.cost(info, &record.zone, record.start, end),
        }
    }

    /// Totals and current rates at `now`.
    pub fn report(&self, now: Duration, catalog: &Catalog, market: &SpotMarket) -> CostReport {
        let mut report = CostReport::default();
        for record in self.records.values() {
            let cost = self.cost_of(record, now, catalog, market);
            let ct = record.capacity_type.as_str().to_string();
            let pool = record.nodepool.clone().unwrap_or_default();
            report.total_usd += cost;
            *report.total_by_capacity_type.entry(ct.clone()).or_default() += cost;
            *report.total_by_nodepool.entry(pool.clone()).or_default() += cost;
            *report.total_by_zone.entry(record.zone.clone()).or_default() += cost;
            if record.end.is_none() && record.start <= now {
                let Some(info) = catalog.get(&record.instance_type) else {
                    continue;
                };
                let rate = match record.capacity_type {
                    CapacityType::OnDemand => info.on_demand_price.unwrap_or(0.0),
                    CapacityType::Spot => market.price(info, &record.zone, now).unwrap_or(0.0),
                };
                report.rate_usd_per_hour += rate;
                *report.rate_by_capacity_type.entry(ct).or_default() += rate;
                *report.rate_by_nodepool.entry(pool).or_default() += rate;
                *report.rate_by_zone.entry(record.zone.clone()).or_default() += rate;
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::small;
    use crate::config::{CloudConfig, EPOCH_2026};
    use std::time::UNIX_EPOCH;

    #[test]
    fn on_demand_bills_per_second_with_a_minute_minimum() {
        let catalog = small();
        let market = SpotMarket::new(&CloudConfig::new(1, UNIX_EPOCH + EPOCH_2026));
        let mut ledger = Ledger::default();
        let rec = |id: &str, start: u64, end: Option<u64>| BillingRecord {
            instance_id: id.into(),
            instance_type: "m5.large".into(),
            zone: "us-west-2a".into(),
            capacity_type: CapacityType::OnDemand,
            nodepool: Some("default".into()),
            start: Duration::from_secs(start),
            end: end.map(Duration::from_secs),
        };
        ledger.open(rec("a", 10, Some(3610)));
        ledger.open(rec("b", 0, Some(30)));
        ledger.open(rec("c", 100, None));
        let r = ledger.report(Duration::from_secs(1900), &catalog, &market);
        let expected = 0.096 + 0.096 / 60.0 + 0.096 * 1800.0 / 3600.0;
        assert!((r.total_usd - expected).abs() < 1e-12, "{} vs {expected}", r.total_usd);
        assert!((r.rate_usd_per_hour - 0.096).abs() < 1e-12);
        assert!((r.total_by_nodepool["default"] - expected).abs() < 1e-12);
    }
}
