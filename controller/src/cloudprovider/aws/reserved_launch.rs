//! What a reserved launch adds to the launch path (aws `pkg/providers/instance/instance.go`,
//! v1.14.1): one reservation type per fleet, the reservation each override targets, what the
//! launched NodeClaim says of its reservation, and what the fleet's errors teach about
//! reservations rather than offerings.

use std::collections::BTreeMap;

use crate::apis::ec2nodeclass::{CapacityReservationType, EC2NodeClassStatus};
use crate::apis::{NodeClaim, labels};

use super::LaunchPlan;
use super::capacity_reservations::Availability;
use super::instances::FleetResult;

/// Whether each of the class's reservations is a capacity block, by id.
pub fn capacity_blocks(status: &EC2NodeClassStatus) -> BTreeMap<String, bool> {
    status
        .capacity_reservations
        .iter()
        .flatten()
        .map(|r| (r.id.clone(), r.reservation_type == Some(CapacityReservationType::CapacityBlock)))
        .collect()
}

/// Keeps the offerings of one reservation type, the type of the cheapest offering (aws
/// `filter/filter.go` `CapacityReservationTypeFilter` / `CapacityBlockFilter`: a fleet has one
/// default target capacity type). Returns whether that type is a capacity block.
pub fn one_reservation_type(plan: &mut LaunchPlan, blocks: &BTreeMap<String, bool>) -> bool {
    let is_block = |id: &Option<String>| id.as_ref().and_then(|id| blocks.get(id)).copied().unwrap_or(false);
    let block = plan.types.first().and_then(|(_, o)| o.first()).is_some_and(|o| is_block(&o.reservation_id));
    for (_, offerings) in &mut plan.types {
        offerings.retain(|o| is_block(&o.reservation_id) == block);
    }
    plan.types.retain(|(_, o)| !o.is_empty());
    block
}

/// The reservation a launch of `instance_type` in `zone` went into (aws `instance.go`
/// l. 678-697 `getCapacityReservationDetailsForInstance`).
pub fn reservation_of(plan: &LaunchPlan, instance_type: &str, zone: &str) -> Option<String> {
    plan.types
        .iter()
        .filter(|(t, _)| t.name == instance_type)
        .flat_map(|(_, offerings)| offerings.iter())
        .find(|o| o.zone == zone)
        .and_then(|o| o.reservation_id.clone())
}

/// A refused reserved launch empties the reservation instead of caching the offering as
/// unavailable (aws `instance.go` l. 610 and 653-675 `updateUnavailableOfferingsCache`).
pub fn note_refusals(plan: &LaunchPlan, result: &FleetResult, availability: &Availability) {
    for refused in &result.unavailable {
        if let Some(id) = reservation_of(plan, &refused.instance_type, &refused.zone) {
            tracing::debug!(capacity_reservation = %id, code = %refused.code, "marking capacity reservation unavailable");
            availability.mark_unavailable(&id);
        }
    }
}

/// The reservation labels of a launched claim: a reserved launch names its reservation and its
/// type (aws `cloudprovider.go` `instanceToNodeClaim`, `ReservedCapacityLabels`); any other
/// launch carries none, even when its type's requirements list a reservation.
pub fn label_reservation(claim: &mut NodeClaim, reservation: Option<(&str, bool)>) {
    let node_labels = claim.metadata.labels.get_or_insert_with(BTreeMap::new);
    node_labels.remove(labels::CAPACITY_RESERVATION_ID_LABEL);
    node_labels.remove(labels::CAPACITY_RESERVATION_TYPE_LABEL);
    if let Some((id, block)) = reservation {
        node_labels.insert(labels::CAPACITY_RESERVATION_ID_LABEL.to_owned(), id.to_owned());
        let kind = if block { "capacity-block" } else { "default" };
        node_labels.insert(labels::CAPACITY_RESERVATION_TYPE_LABEL.to_owned(), kind.to_owned());
    }
}

/// The types as the launch sees them now: a reserved offering whose reservation has no slot
/// left (taken by launches since the scheduler listed the types) is unavailable. Together with
/// [`hold`] this plays the part of core's `ReservationManager` (karpenter
/// `scheduling/reservationmanager.go`, `nodeclaim.go` l. 299-345), which upstream applies while
/// scheduling: no more launches target a reservation than it can take.
pub fn with_live_counts(
    types: &[std::sync::Arc<crate::cloudprovider::InstanceType>],
    availability: &Availability,
) -> Vec<std::sync::Arc<crate::cloudprovider::InstanceType>> {
    types
        .iter()
        .map(|t| {
            let exhausted = |o: &crate::cloudprovider::Offering| {
                o.available && o.reservation_id.as_deref().is_some_and(|id| availability.count(id) == 0)
            };
            if !t.offerings.iter().any(exhausted) {
                return t.clone();
            }
            let mut live = (**t).clone();
            for offering in &mut live.offerings {
                if exhausted(offering) {
                    offering.available = false;
                }
            }
            std::sync::Arc::new(live)
        })
        .collect()
}

/// Takes a slot of every reservation a reserved launch may use, before the fleet call, so a
/// concurrent launch sees them taken (core reserves pessimistically too, `nodeclaim.go`
/// l. 323-331). [`release`] gives back the ones the launch did not use.
pub fn hold(plan: &LaunchPlan, availability: &Availability) -> Vec<String> {
    let mut held: Vec<String> =
        plan.types.iter().flat_map(|(_, o)| o.iter()).filter_map(|o| o.reservation_id.clone()).collect();
    held.sort();
    held.dedup();
    for id in &held {
        availability.mark_launched(id);
    }
    held
}

/// Gives back every held slot but the one the launch used.
pub fn release(held: &[String], used: Option<&str>, availability: &Availability) {
    for id in held.iter().filter(|id| Some(id.as_str()) != used) {
        availability.mark_terminated(id);
    }
}
