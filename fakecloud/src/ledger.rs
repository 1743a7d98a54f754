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
    /// The capacity reservation it runs in: the reservation pays for it, so the record
    /// itself costs nothing ([`Ledger::reservation_cost`]).
    pub capacity_reservation_id: Option<String>,
    /// When its reservation ended under it (an ODCR's end date): from then on the instance runs,
    /// and bills, as an ordinary on-demand instance (`FakeCloud::end_reservation`).
    pub reservation_released: Option<Duration>,
}

/// A capacity reservation's bill: EC2 charges every reserved instance at the on-demand rate
/// from the reservation's start to its end, used or not. (A capacity block is prepaid at a
/// market price EC2 publishes separately; the fake bills it at the on-demand rate too.)
#[derive(Debug, Clone, PartialEq)]
pub struct ReservationBill {
    /// Instance type reserved.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
    /// Instances reserved.
    pub count: u32,
    /// Billing start.
    pub start: Duration,
    /// Billing end, if the reservation ends.
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
    /// Capacity reservations' bills by reservation id.
    pub reservations: BTreeMap<String, ReservationBill>,
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

    /// `instance_id`'s reservation ended at `at`: it bills on its own from then on.
    pub(crate) fn release_reservation(&mut self, instance_id: &str, at: Duration) {
        if let Some(r) = self.records.get_mut(instance_id)
            && r.capacity_reservation_id.is_some()
            && r.reservation_released.is_none()
            && r.end.is_none()
        {
            r.reservation_released = Some(at);
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
        let start = match (&record.capacity_reservation_id, record.reservation_released) {
            (Some(_), None) => return 0.0,
            (Some(_), Some(released)) => released.max(record.start),
            (None, _) => record.start,
        };
        let end = record.end.unwrap_or(now).max(start);
        // The minimum applies once billing has stopped; a live instance accrues second by second.
        let end = if record.end.is_some() { end.max(start + MINIMUM_BILLED) } else { end };
        match record.capacity_type {
            CapacityType::OnDemand => info.on_demand_price.unwrap_or(0.0) * (end - start).as_secs_f64() / 3600.0,
            CapacityType::Spot => market.cost(info, &record.zone, start, end),
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
                    _ if record.capacity_reservation_id.is_some() && record.reservation_released.is_none() => 0.0,
                    CapacityType::OnDemand => info.on_demand_price.unwrap_or(0.0),
                    CapacityType::Spot => market.price(info, &record.zone, now).unwrap_or(0.0),
                };
                report.rate_usd_per_hour += rate;
                *report.rate_by_capacity_type.entry(ct).or_default() += rate;
                *report.rate_by_nodepool.entry(pool).or_default() += rate;
                *report.rate_by_zone.entry(record.zone.clone()).or_default() += rate;
            }
        }
        for bill in self.reservations.values() {
            let (cost, rate) = Self::reservation_cost(bill, now, catalog);
            report.total_usd += cost;
            *report.total_by_capacity_type.entry(RESERVED.into()).or_default() += cost;
            *report.total_by_zone.entry(bill.zone.clone()).or_default() += cost;
            if rate > 0.0 {
                report.rate_usd_per_hour += rate;
                *report.rate_by_capacity_type.entry(RESERVED.into()).or_default() += rate;
                *report.rate_by_zone.entry(bill.zone.clone()).or_default() += rate;
            }
        }
        report
    }

    /// A reservation's cost up to `now` and its rate at `now` (USD, USD/hour): every reserved
    /// instance at the on-demand price while the reservation lasts. It belongs to no NodePool,
    /// so `total_by_nodepool` leaves it out.
    pub fn reservation_cost(bill: &ReservationBill, now: Duration, catalog: &Catalog) -> (f64, f64) {
        let price = catalog.get(&bill.instance_type).and_then(|i| i.on_demand_price).unwrap_or(0.0);
        let hourly = price * f64::from(bill.count);
        let end = bill.end.map_or(now, |e| e.min(now)).max(bill.start);
        let active = bill.start <= now && bill.end.is_none_or(|e| now < e);
        (hourly * (end - bill.start).as_secs_f64() / 3600.0, if active { hourly } else { 0.0 })
    }
}

/// The cost report's key for what reservations cost.
pub const RESERVED: &str = "reserved";

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
            capacity_reservation_id: None,
            reservation_released: None,
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

    #[test]
    fn a_reservation_bills_every_slot_and_its_instances_nothing() {
        let catalog = small();
        let market = SpotMarket::new(&CloudConfig::new(1, UNIX_EPOCH + EPOCH_2026));
        let mut ledger = Ledger::default();
        ledger.reservations.insert(
            "cr-00000000000000001".into(),
            ReservationBill {
                instance_type: "m5.large".into(),
                zone: "us-west-2a".into(),
                count: 3,
                start: Duration::ZERO,
                end: Some(Duration::from_secs(7200)),
            },
        );
        ledger.open(BillingRecord {
            instance_id: "i-1".into(),
            instance_type: "m5.large".into(),
            zone: "us-west-2a".into(),
            capacity_type: CapacityType::OnDemand,
            nodepool: Some("default".into()),
            start: Duration::from_secs(60),
            end: None,
            capacity_reservation_id: Some("cr-00000000000000001".into()),
            reservation_released: None,
        });
        let r = ledger.report(Duration::from_secs(3600), &catalog, &market);
        assert!((r.total_usd - 3.0 * 0.096).abs() < 1e-12, "{}", r.total_usd);
        assert!((r.rate_usd_per_hour - 3.0 * 0.096).abs() < 1e-12);
        assert!((r.total_by_capacity_type[RESERVED] - 3.0 * 0.096).abs() < 1e-12);
        assert_eq!(r.total_by_nodepool.get("default").copied(), Some(0.0));
        let after = ledger.report(Duration::from_secs(9000), &catalog, &market);
        assert!((after.total_usd - 6.0 * 0.096).abs() < 1e-12, "billing stops at the end");
        assert_eq!(after.rate_usd_per_hour, 0.0);
    }

    #[test]
    fn an_instance_whose_reservation_ends_bills_on_demand_from_then_on() {
        let catalog = small();
        let market = SpotMarket::new(&CloudConfig::new(1, UNIX_EPOCH + EPOCH_2026));
        let mut ledger = Ledger::default();
        ledger.open(BillingRecord {
            instance_id: "i-1".into(),
            instance_type: "m5.large".into(),
            zone: "us-west-2a".into(),
            capacity_type: CapacityType::OnDemand,
            nodepool: Some("default".into()),
            start: Duration::from_secs(60),
            end: None,
            capacity_reservation_id: Some("cr-00000000000000001".into()),
            reservation_released: None,
        });
        ledger.release_reservation("i-1", Duration::from_secs(1800));
        let r = ledger.report(Duration::from_secs(3600), &catalog, &market);
        assert!((r.total_usd - 0.096 / 2.0).abs() < 1e-12, "{}", r.total_usd);
        assert!((r.rate_usd_per_hour - 0.096).abs() < 1e-12);
    }
}
