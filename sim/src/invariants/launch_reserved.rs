//! `launchConformance`'s reserved-capacity rule: an on-demand launch of an offering a free,
//! selected capacity reservation holds is a launch Karpenter does not make.
//!
//! Karpenter offers each reservation its EC2NodeClass selects
//! (`capacityReservationSelectorTerms`, resolved into the class's status every minute: aws
//! `pkg/controllers/nodeclass/capacityreservation.go` l. 37) as a `reserved` offering of the
//! reservation's instance type in its zone, priced at on-demand / 10^7 and available while
//! the reservation has instances left and is not expiring (aws
//! `pkg/providers/instancetype/offering/reserved_capacity_resolver.go` l. 63-99). A NodeClaim
//! whose requirements allow `reserved` therefore launches into the reservation before it
//! pays on-demand for the very same type and zone: the reserved offering is the cheapest
//! (core `pkg/controllers/provisioning/scheduling/nodeclaim.go` orders by price; aws
//! `pkg/providers/instance/instance.go` launches reserved first).
//!
//! Judged [`SETTLE`] after the launch, from the cloud's truth: the reservation must have had a
//! free slot, and not been expiring, at every observation from [`STALE`] before the launch
//! until the judgement (Karpenter's availability count is polled and may lag a freed slot; a
//! concurrent launch that took the last slot makes the reservation full and the launch
//! legal). Only with the `ReservedCapacity` gate on for the whole run.

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_fakecloud::{CapacityType, FakeCloud, ReservationType};
use serde_json::Value;

use crate::apiserver::store::Store;
use crate::oracle::resources::Requirement;
use crate::oracle::view::{ClaimView, InstanceView, key};

/// How long before a launch a reservation must have been free: twice the class's 1-minute
/// reservation poll (aws `capacityreservation.go` l. 37).
pub const STALE: Duration = Duration::from_secs(120);

/// How long after a launch it is judged: a launch batch's other instances are seen by then.
pub const SETTLE: Duration = Duration::from_secs(5);

/// A capacity block (only a block) is `expiring`, and offered to no launch, this long before
/// its end (aws `pkg/apis/v1/ec2nodeclass_status.go` l. 238-263).
pub const EXPIRING_LEAD: Duration = Duration::from_secs(40 * 60);

/// Each reservation's last observation without a usable slot, and when it was first seen.
#[derive(Default)]
pub struct ReservationClock {
    first_seen: BTreeMap<String, Duration>,
    last_unusable: BTreeMap<String, Duration>,
}

impl ReservationClock {
    /// Records the cloud's reservations at `now`.
    pub fn sample(&mut self, cloud: &FakeCloud, now: Duration) {
        for r in cloud.capacity_reservations() {
            self.first_seen.entry(r.id.clone()).or_insert(now);
            let expiring = r.reservation_type == ReservationType::CapacityBlock
                && r.end.is_some_and(|end| now + EXPIRING_LEAD >= end);
            let usable = r.available > 0 && !expiring && r.end.is_none_or(|end| now < end);
            if !usable {
                self.last_unusable.insert(r.id.clone(), now);
            }
        }
    }

    /// Whether reservation `id` had a usable slot at every observation since `from`.
    fn free_since(&self, id: &str, from: Duration) -> bool {
        self.first_seen.get(id).is_some_and(|seen| *seen <= from)
            && self.last_unusable.get(id).is_none_or(|last| *last < from)
    }
}

/// Whether the claim's `karpenter.sh/capacity-type` requirement allows `reserved` (a claim
/// without one is left alone: it is the pool's default, not a choice).
fn allows_reserved(claim: &ClaimView) -> bool {
    let reqs: Vec<Requirement> = claim.requirements.iter().filter_map(Requirement::from_json).collect();
    let on_key: Vec<&Requirement> = reqs.iter().filter(|r| r.key == "karpenter.sh/capacity-type").collect();
    !on_key.is_empty() && on_key.iter().all(|r| r.matches_value(Some("reserved")))
}

/// Whether one of `terms` (`capacityReservationSelectorTerms`) selects the reservation: by
/// `id`, or by every `tags` entry and the `ownerID` when given (aws
/// `pkg/providers/capacityreservation/types.go` queries).
fn selected(terms: &[Value], r: &dovetail_fakecloud::CapacityReservation) -> bool {
    terms.iter().any(|t| {
        if let Some(id) = t["id"].as_str() {
            return id == r.id;
        }
        let Some(tags) = t["tags"].as_object() else { return false };
        let owner = t["ownerID"].as_str().is_none_or(|o| o == r.owner_id);
        owner
            && tags.iter().all(|(k, v)| {
                let want = v.as_str().unwrap_or_default();
                r.tags.get(k).is_some_and(|have| want == "*" || have == want)
            })
    })
}

/// The reservation `instance` should have launched into, when the claim broke the rule.
pub fn missed_reservation(
    clock: &ReservationClock,
    store: &Store,
    cloud: &FakeCloud,
    claim: &ClaimView,
    pool: &Value,
    instance: &InstanceView,
) -> Option<String> {
    if instance.capacity_type != CapacityType::OnDemand || instance.reserved || !allows_reserved(claim) {
        return None;
    }
    let class_name = pool.pointer("/spec/template/spec/nodeClassRef/name").and_then(Value::as_str)?;
    let class =
        store.iter(&key("karpenter.k8s.aws", "ec2nodeclasses"), None).find(|c| c["metadata"]["name"] == class_name)?;
    let terms = class.pointer("/spec/capacityReservationSelectorTerms").and_then(Value::as_array)?;
    let from = instance.launched.saturating_sub(STALE);
    cloud
        .capacity_reservations()
        .filter(|r| r.instance_type == instance.instance_type && r.zone == instance.zone)
        .filter(|r| selected(terms, r))
        .find(|r| clock.free_since(&r.id, from))
        .map(|r| r.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reservation(tags: &[(&str, &str)]) -> dovetail_fakecloud::CapacityReservation {
        dovetail_fakecloud::CapacityReservation {
            id: "cr-1".into(),
            instance_type: "m5.large".into(),
            zone: "us-east-1a".into(),
            zone_id: "use1-az1".into(),
            total: 3,
            available: 1,
            match_criteria: dovetail_fakecloud::MatchCriteria::Targeted,
            owner_id: "111122223333".into(),
            start: Duration::ZERO,
            end: None,
            reservation_type: dovetail_fakecloud::ReservationType::Default,
            tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            instances: Default::default(),
        }
    }

    #[test]
    fn terms_select_by_id_or_by_every_tag_and_the_owner() {
        let r = reservation(&[("team", "web"), ("env", "prod")]);
        assert!(selected(&[json!({"id": "cr-1"})], &r));
        assert!(!selected(&[json!({"id": "cr-2"})], &r));
        assert!(selected(&[json!({"tags": {"team": "web"}})], &r));
        assert!(selected(&[json!({"tags": {"team": "*"}})], &r));
        assert!(!selected(&[json!({"tags": {"team": "web", "env": "dev"}})], &r));
        assert!(selected(&[json!({"tags": {"team": "web"}, "ownerID": "111122223333"})], &r));
        assert!(!selected(&[json!({"tags": {"team": "web"}, "ownerID": "999"})], &r));
        assert!(selected(&[json!({"id": "cr-9"}), json!({"tags": {"env": "prod"}})], &r));
    }

    #[test]
    fn only_a_claim_allowing_reserved_is_held_to_it() {
        let claim = |values: &[&str]| {
            let mut c = ClaimView::for_test("c", "default", "aws:///us-east-1a/i-1");
            c.requirements = vec![json!({"key": "karpenter.sh/capacity-type", "operator": "In", "values": values})];
            c
        };
        assert!(allows_reserved(&claim(&["reserved", "on-demand"])));
        assert!(!allows_reserved(&claim(&["on-demand"])));
        let mut none = claim(&["reserved"]);
        none.requirements.clear();
        assert!(!allows_reserved(&none));
    }

    #[test]
    fn a_reservation_is_free_since_a_time_only_if_every_later_look_found_a_slot() {
        let mut clock = ReservationClock::default();
        clock.first_seen.insert("cr-1".into(), Duration::ZERO);
        assert!(clock.free_since("cr-1", Duration::from_secs(10)));
        clock.last_unusable.insert("cr-1".into(), Duration::from_secs(30));
        assert!(!clock.free_since("cr-1", Duration::from_secs(10)));
        assert!(clock.free_since("cr-1", Duration::from_secs(31)));
        assert!(!clock.free_since("cr-2", Duration::from_secs(31)), "never seen");
    }
}
