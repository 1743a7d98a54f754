//! The launch plan of one NodeClaim (aws `pkg/providers/instance/filter/filter.go` and
//! `instance.go` `getCapacityType`, v1.14.1): which instance types and offerings one CreateFleet
//! may use, cheapest first.

use std::sync::Arc;

use crate::apis::{NodeClaim, labels};
use crate::cloudprovider::{CloudError, InstanceType};
use crate::scheduling::requirements::Requirements;

use super::MAX_FLEET_INSTANCE_TYPES;
use super::instance_types::{EXOTIC_LABELS, InstanceTypeProvider};

/// The instance types (cheapest first, at most 60) and their offerings a launch may use.
#[derive(Debug)]
pub struct LaunchPlan {
    /// `spot` or `on-demand`.
    pub capacity_type: String,
    /// Types with the offerings of `capacity_type` usable for this claim.
    pub types: Vec<(Arc<InstanceType>, Vec<crate::cloudprovider::Offering>)>,
}

impl LaunchPlan {
    /// Applies §2.5: compatible and available, the exotic filter, capacity type reserved >
    /// spot > on-demand, spot offerings above the cheapest on-demand dropped, truncation to 60.
    /// With minValues the exotic and spot-price filters are skipped.
    ///
    /// # Errors
    /// `InsufficientCapacity` when a filter leaves nothing.
    pub fn new(
        claim: &NodeClaim,
        requirements: &Requirements,
        types: &[Arc<InstanceType>],
        catalog: &InstanceTypeProvider,
    ) -> Result<Self, CloudError> {
        let mut candidates: Vec<&Arc<InstanceType>> = types
            .iter()
            .filter(|t| requirements.compatible(&t.requirements).is_ok() && t.has_compatible_offering(requirements))
            .collect();
        if candidates.is_empty() {
            return Err(CloudError::InsufficientCapacity(
                "no compatible instance type has an available offering".into(),
            ));
        }
        let wants_exotic = EXOTIC_LABELS.iter().any(|key| requirements.has(key))
            || claim
                .spec
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .is_some_and(|requests| requests.keys().any(|k| k.contains('/')));
        // aws filter/filter.go l. 340-342 and 389-391 (v1.14.1): with minValues on the claim
        // neither the exotic filter nor the spot-price filter runs, so they cannot shrink the
        // type set below what minValues asks for.
        let has_min_values = requirements.iter().any(|(_, r)| r.min_values.is_some());
        if !wants_exotic && !has_min_values {
            let plain: Vec<_> = candidates.iter().copied().filter(|t| !catalog.is_exotic(&t.name)).collect();
            if !plain.is_empty() {
                candidates = plain;
            }
        }
        let usable = |t: &InstanceType, capacity_type: &str| -> Vec<crate::cloudprovider::Offering> {
            t.offerings
                .iter()
                .filter(|o| o.available && o.capacity_type == capacity_type && o.is_compatible(requirements))
                .cloned()
                .collect()
        };
        let offered = |capacity_type: &str| candidates.iter().any(|t| !usable(t, capacity_type).is_empty());
        // aws `instance.go` l. 745-759 `getCapacityType`: reserved, then spot, then on-demand.
        let capacity_type = if requirements.allows(labels::CAPACITY_TYPE_LABEL, labels::CAPACITY_TYPE_RESERVED)
            && offered(labels::CAPACITY_TYPE_RESERVED)
        {
            labels::CAPACITY_TYPE_RESERVED
        } else if requirements.allows(labels::CAPACITY_TYPE_LABEL, labels::CAPACITY_TYPE_SPOT)
            && offered(labels::CAPACITY_TYPE_SPOT)
        {
            labels::CAPACITY_TYPE_SPOT
        } else if requirements.allows(labels::CAPACITY_TYPE_LABEL, labels::CAPACITY_TYPE_ON_DEMAND)
            && offered(labels::CAPACITY_TYPE_ON_DEMAND)
        {
            labels::CAPACITY_TYPE_ON_DEMAND
        } else {
            return Err(CloudError::InsufficientCapacity("no allowed capacity type has an available offering".into()));
        };
        let cheapest_on_demand = candidates
            .iter()
            .flat_map(|t| usable(t, labels::CAPACITY_TYPE_ON_DEMAND))
            .map(|o| o.price)
            .min_by(f64::total_cmp);
        let mut planned: Vec<(f64, Arc<InstanceType>, Vec<crate::cloudprovider::Offering>)> = candidates
            .iter()
            .filter_map(|t| {
                let mut offerings = usable(t, capacity_type);
                if capacity_type == labels::CAPACITY_TYPE_SPOT
                    && !has_min_values
                    && let Some(limit) = cheapest_on_demand
                {
                    offerings.retain(|o| o.price <= limit);
                }
                offerings.sort_by(|a, b| a.price.total_cmp(&b.price).then_with(|| a.zone.cmp(&b.zone)));
                if capacity_type == labels::CAPACITY_TYPE_RESERVED {
                    // aws `filter/filter.go` l. 290-320 `ReservedOfferingFilter`: one reservation
                    // per zone, so a launch never targets two reservations of one type and zone.
                    // (Upstream keeps the one with the most capacity; we keep the first by id.)
                    offerings.sort_by(|a, b| a.zone.cmp(&b.zone).then_with(|| a.reservation_id.cmp(&b.reservation_id)));
                    offerings.dedup_by(|a, b| a.zone == b.zone);
                }
                let cheapest = offerings.first()?.price;
                Some((cheapest, (*t).clone(), offerings))
            })
            .collect();
        if planned.is_empty() {
            return Err(CloudError::InsufficientCapacity(
                "every spot offering costs more than the cheapest on-demand offering".into(),
            ));
        }
        planned.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
        planned.truncate(MAX_FLEET_INSTANCE_TYPES);
        Ok(Self {
            capacity_type: capacity_type.to_owned(),
            types: planned.into_iter().map(|(_, t, o)| (t, o)).collect(),
        })
    }
}
