//! EC2 capacity reservations: on-demand capacity reservations (ODCRs, `reservationType:
//! default`) and capacity blocks for ML (`capacity-block`).
//!
//! A reservation holds `total` instances of one type in one zone. A launch lands in it only
//! when the launch template targets it by id (`CapacityReservationSpecification.
//! CapacityReservationTarget.CapacityReservationId`), which is how Karpenter launches reserved
//! capacity (aws `pkg/providers/launchtemplate/types.go` l. 151-178, v1.14.1). Open matching
//! of untargeted on-demand launches is not modelled: Karpenter with `ReservedCapacity` on
//! sends preference `none` for on-demand and spot launches, so it never relies on it.
//!
//! Billing is the reservation's, not the instance's (EC2 bills an ODCR at the on-demand rate
//! whether used or not; an instance running in it adds nothing): see
//! [`crate::ledger::Ledger::reservation_cost`].
//!
//! A capacity block ends: EC2 starts terminating its instances 30 minutes before the end time
//! (aws `pkg/controllers/capacityreservation/expiration/controller.go` l. 47-49: "10 minutes
//! before EC2 begins reclaiming", Karpenter's own drain begins 40 minutes before), and at the
//! end the reservation is `expired`.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::tags::{Filter, Tags};

/// How long before a capacity block's end EC2 begins terminating its instances.
pub const CAPACITY_BLOCK_RECLAIM_LEAD: Duration = Duration::from_secs(30 * 60);
/// How long before a capacity block's end EC2 warns that it is ending (the EventBridge
/// "Capacity Block Reservation Expiration Warning", 40 minutes ahead; Karpenter's
/// `expiring` state starts at the same time, aws `apis/v1/ec2nodeclass_status.go`).
pub const CAPACITY_BLOCK_WARNING_LEAD: Duration = Duration::from_secs(40 * 60);

/// `reservationType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReservationType {
    /// An on-demand capacity reservation.
    Default,
    /// A capacity block for ML.
    CapacityBlock,
}

impl ReservationType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::CapacityBlock => "capacity-block",
        }
    }
}

/// `instanceMatchCriteria`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchCriteria {
    /// Any matching on-demand launch may use it.
    Open,
    /// Only launches that name it.
    Targeted,
}

impl MatchCriteria {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Targeted => "targeted",
        }
    }
}

/// One reservation as a scenario configures it (see [`crate::CloudConfig::capacity_reservations`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ReservationSpec {
    /// `cr-` followed by 17 hex digits; drawn from the cloud's ids when absent.
    pub id: Option<String>,
    /// Instance type reserved.
    pub instance_type: String,
    /// Availability zone name.
    pub zone: String,
    /// Instances reserved.
    pub count: u32,
    /// `open` or `targeted`.
    pub match_criteria: MatchCriteria,
    /// Owning account; the cloud's account when absent.
    pub owner_id: Option<String>,
    /// When it ends (simulated time); never when absent. Required for capacity blocks.
    pub end: Option<Duration>,
    /// `default` or `capacity-block`.
    pub reservation_type: ReservationType,
    /// Tags (what `capacityReservationSelectorTerms[].tags` select on).
    pub tags: Tags,
}

/// A reservation in the cloud.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityReservation {
    /// `cr-…`
    pub id: String,
    /// Instance type reserved.
    pub instance_type: String,
    /// Zone name.
    pub zone: String,
    /// Zone id.
    pub zone_id: String,
    /// Instances reserved.
    pub total: u32,
    /// Instances that may still launch into it.
    pub available: u32,
    /// `open` or `targeted`.
    pub match_criteria: MatchCriteria,
    /// Owning account.
    pub owner_id: String,
    /// When it began (instant zero: scenarios seed reservations up front).
    pub start: Duration,
    /// When it ends, if it does.
    pub end: Option<Duration>,
    /// `default` or `capacity-block`.
    pub reservation_type: ReservationType,
    /// Tags.
    pub tags: Tags,
    /// The live instances running in it.
    pub instances: BTreeSet<String>,
}

impl CapacityReservation {
    /// `active` before its end, `expired` from it on.
    pub fn state(&self, now: Duration) -> &'static str {
        if self.end.is_some_and(|end| now >= end) { "expired" } else { "active" }
    }

    /// Whether the reservation passes every DescribeCapacityReservations filter.
    pub fn matches(&self, filters: &[Filter], now: Duration) -> bool {
        filters.iter().all(|f| {
            f.match_tags(&self.tags).unwrap_or_else(|| match f.name.as_str() {
                "state" => f.matches(self.state(now)),
                "owner-id" => f.matches(&self.owner_id),
                "instance-type" => f.matches(&self.instance_type),
                "availability-zone" => f.matches(&self.zone),
                "availability-zone-id" => f.matches(&self.zone_id),
                "instance-match-criteria" => f.matches(self.match_criteria.as_str()),
                "reservation-type" => f.matches(self.reservation_type.as_str()),
                "capacity-reservation-id" => f.matches(&self.id),
                _ => false,
            })
        })
    }
}

/// Whether `id` has the shape EC2 gives reservation ids (`cr-` and 17 lowercase hex digits).
pub fn is_reservation_id(id: &str) -> bool {
    id.strip_prefix("cr-")
        .is_some_and(|hex| hex.len() == 17 && hex.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reservation() -> CapacityReservation {
        CapacityReservation {
            id: "cr-0123456789abcdef0".into(),
            instance_type: "m5.large".into(),
            zone: "us-west-2a".into(),
            zone_id: "usw2-az1".into(),
            total: 2,
            available: 2,
            match_criteria: MatchCriteria::Targeted,
            owner_id: "123456789012".into(),
            start: Duration::ZERO,
            end: Some(Duration::from_secs(3600)),
            reservation_type: ReservationType::CapacityBlock,
            tags: [("team".to_string(), "ml".to_string())].into(),
            instances: BTreeSet::new(),
        }
    }

    fn filter(name: &str, value: &str) -> Filter {
        Filter { name: name.into(), values: vec![value.into()] }
    }

    #[test]
    fn a_reservation_expires_at_its_end_time() {
        let r = reservation();
        assert_eq!(r.state(Duration::from_secs(3599)), "active");
        assert_eq!(r.state(Duration::from_secs(3600)), "expired");
    }

    #[test]
    fn filters_match_the_fields_karpenter_queries() {
        let r = reservation();
        let now = Duration::ZERO;
        assert!(r.matches(&[filter("state", "active"), filter("tag:team", "ml")], now));
        assert!(r.matches(&[filter("instance-match-criteria", "targeted"), filter("owner-id", "123456789012")], now));
        assert!(r.matches(&[filter("tag-key", "team")], now));
        assert!(!r.matches(&[filter("tag:team", "web")], now));
        assert!(!r.matches(&[filter("state", "active")], Duration::from_secs(4000)));
        assert!(!r.matches(&[filter("no-such-filter", "x")], now));
    }

    #[test]
    fn reservation_ids_have_ec2s_shape() {
        assert!(is_reservation_id("cr-0123456789abcdef0"));
        assert!(!is_reservation_id("cr-0123"));
        assert!(!is_reservation_id("cr-0123456789ABCDEF0"));
        assert!(!is_reservation_id("r-0123456789abcdef0"));
    }
}
