//! The instance type store (core `pkg/controllers/nodeoverlay/store.go`): per (NodePool,
//! instance type), the price update of each offering and the extended-resource capacity the
//! NodeOverlays add, plus the set of NodePools the last evaluation covered.
//!
//! The reconciler builds a fresh [`EvaluatedOverlays`] and swaps it in whole (store.go l. 57-59,
//! `atomic.Pointer.Swap`), so a reader never sees half an evaluation.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use crate::apis::NodeOverlay;
use crate::cloudprovider::{CloudError, InstanceType, Offering};
use crate::scheduling::resources::Resources;

use super::price::adjusted_price;

/// Offerings are keyed by their requirements (store.go l. 256 and 276 `of.Requirements.String()`):
/// capacity type, zone and, for reserved offerings, the reservation.
pub type OfferingKey = (String, String, Option<String>);

/// The key of `offering`.
pub fn offering_key(offering: &Offering) -> OfferingKey {
    (offering.capacity_type.clone(), offering.zone.clone(), offering.reservation_id.clone())
}

/// One offering's price change and the weight of the last overlay that selected it.
#[derive(Clone, Debug, PartialEq)]
struct PriceUpdate {
    /// `price` or `priceAdjustment` of the heaviest overlay (applied by [`adjusted_price`]).
    change: String,
    /// The weight of the lightest overlay seen so far (store.go l. 257 updates it on a skip).
    lowest_weight: i32,
}

/// The capacity an instance type gains.
#[derive(Clone, Debug, Default, PartialEq)]
struct CapacityUpdate {
    /// Resource → quantity; the heaviest overlay naming a resource wins (store.go l. 199-205).
    overlay: BTreeMap<String, i64>,
    /// The resources of the last overlay merged (store.go l. 207), checked for conflicts.
    lowest_weight_resources: BTreeSet<String>,
    lowest_weight: i32,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct TypeUpdate {
    price: BTreeMap<OfferingKey, PriceUpdate>,
    capacity: Option<CapacityUpdate>,
}

/// One evaluation of every NodeOverlay against every NodePool's instance types (core
/// `internalInstanceTypeStore`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvaluatedOverlays {
    updates: BTreeMap<String, BTreeMap<String, TypeUpdate>>,
    evaluated_pools: BTreeSet<String>,
}

fn weight(overlay: &NodeOverlay) -> i32 {
    overlay.spec.weight.unwrap_or(0)
}

/// The overlay's capacity as resources; runtime validation has rejected unparseable ones.
pub fn overlay_capacity(overlay: &NodeOverlay) -> BTreeMap<String, i64> {
    let Some(list) = &overlay.spec.capacity else { return BTreeMap::new() };
    let mut out = BTreeMap::new();
    for (name, quantity) in list {
        let mut one = Resources::default();
        let text = match quantity {
            crate::apis::IntOrQuantity::Int(n) => n.to_string(),
            crate::apis::IntOrQuantity::String(s) => s.clone(),
        };
        if one.set_text(name, &text).is_ok() {
            out.insert(name.clone(), one.get(name));
        }
    }
    out
}

impl EvaluatedOverlays {
    /// Records that `pool` was evaluated (its instance types were listed).
    pub fn mark_evaluated(&mut self, pool: &str) {
        self.evaluated_pools.insert(pool.to_owned());
    }

    /// Whether a price overlay would conflict on one of `offerings` (store.go l. 267-286):
    /// an update for the offering already exists whose lowest weight equals the overlay's.
    pub fn is_offering_update_conflicting(
        &self,
        pool: &str,
        instance_type: &str,
        offerings: &[&Offering],
        overlay: &NodeOverlay,
    ) -> bool {
        if overlay.spec.price.is_none() && overlay.spec.price_adjustment.is_none() {
            return false;
        }
        let Some(update) = self.updates.get(pool).and_then(|u| u.get(instance_type)) else { return false };
        offerings
            .iter()
            .filter_map(|o| update.price.get(&offering_key(o)))
            .any(|existing| existing.lowest_weight == weight(overlay))
    }

    /// Whether a capacity overlay conflicts (store.go l. 212-236): same weight as the last
    /// merged capacity overlay and a resource in common with it.
    pub fn is_capacity_update_conflicting(&self, pool: &str, instance_type: &str, overlay: &NodeOverlay) -> bool {
        let Some(capacity) = &overlay.spec.capacity else { return false };
        let Some(existing) =
            self.updates.get(pool).and_then(|u| u.get(instance_type)).and_then(|u| u.capacity.as_ref())
        else {
            return false;
        };
        existing.lowest_weight == weight(overlay)
            && capacity.keys().any(|resource| existing.lowest_weight_resources.contains(resource))
    }

    /// Adds the overlay's price to each offering not yet priced by a heavier overlay
    /// (store.go l. 240-265); an already-priced offering only records the lower weight.
    pub fn update_offerings(
        &mut self,
        pool: &str,
        instance_type: &str,
        overlay: &NodeOverlay,
        offerings: &[&Offering],
    ) {
        let Some(change) = overlay.spec.price.as_ref().or(overlay.spec.price_adjustment.as_ref()) else { return };
        let update = self.type_update(pool, instance_type);
        for offering in offerings {
            update
                .price
                .entry(offering_key(offering))
                .and_modify(|existing| existing.lowest_weight = weight(overlay))
                .or_insert_with(|| PriceUpdate { change: change.clone(), lowest_weight: weight(overlay) });
        }
    }

    /// Merges the overlay's capacity, keeping resources a heavier overlay already set
    /// (store.go l. 178-210).
    pub fn update_capacity(&mut self, pool: &str, instance_type: &str, overlay: &NodeOverlay) {
        if overlay.spec.capacity.is_none() {
            return;
        }
        let added = overlay_capacity(overlay);
        let names: BTreeSet<String> = overlay.spec.capacity.iter().flat_map(|c| c.keys().cloned()).collect();
        let update = self.type_update(pool, instance_type);
        let capacity = update.capacity.get_or_insert_with(CapacityUpdate::default);
        for (resource, quantity) in added {
            capacity.overlay.entry(resource).or_insert(quantity);
        }
        capacity.lowest_weight_resources = names;
        capacity.lowest_weight = weight(overlay);
    }

    fn type_update(&mut self, pool: &str, instance_type: &str) -> &mut TypeUpdate {
        self.updates.entry(pool.to_owned()).or_default().entry(instance_type.to_owned()).or_default()
    }

    /// `it` with this evaluation's updates (store.go l. 117-149): capacity overlays merged into
    /// capacity (and so allocatable), price overlays applied per offering. Types without
    /// updates are returned as they are.
    pub fn apply(&self, pool: &str, it: &Arc<InstanceType>) -> Arc<InstanceType> {
        let Some(update) = self.updates.get(pool).and_then(|u| u.get(&it.name)) else { return it.clone() };
        let capacity = update.capacity.as_ref().map(|c| &c.overlay).filter(|c| !c.is_empty());
        if capacity.is_none() && update.price.is_empty() {
            return it.clone();
        }
        let mut overlaid = (**it).clone();
        let mut priced = false;
        for offering in &mut overlaid.offerings {
            if let Some(price) = update.price.get(&offering_key(offering)) {
                offering.price = adjusted_price(offering.price, &price.change);
                priced = true;
            }
        }
        if priced {
            overlaid.mark_price_overlaid();
        }
        if let Some(capacity) = capacity {
            overlaid = overlaid.with_extended_capacity(capacity);
        }
        Arc::new(overlaid)
    }
}

/// The store the reconciler writes and the overlay cloud provider reads (core
/// `InstanceTypeStore`): the current evaluation behind a lock held only to clone or swap the
/// `Arc`.
#[derive(Debug, Default)]
pub struct InstanceTypeStore {
    current: RwLock<Arc<EvaluatedOverlays>>,
}

impl InstanceTypeStore {
    /// A store that has evaluated nothing: every pool is unevaluated.
    pub fn new() -> Self {
        Self::default()
    }

    /// Swaps in a new evaluation (store.go l. 57-59).
    pub fn update(&self, evaluated: EvaluatedOverlays) {
        *self.current.write().expect("overlay store") = Arc::new(evaluated);
    }

    /// The pool's instance types with overlays applied (store.go `ApplyAll`, l. 61-79).
    ///
    /// # Errors
    /// [`CloudError::UnevaluatedNodePool`] when the last evaluation did not cover the pool.
    pub fn apply_all(&self, pool: &str, types: Vec<Arc<InstanceType>>) -> Result<Vec<Arc<InstanceType>>, CloudError> {
        let current = self.current.read().expect("overlay store").clone();
        if !current.evaluated_pools.contains(pool) {
            return Err(CloudError::UnevaluatedNodePool(pool.to_owned()));
        }
        if !current.updates.contains_key(pool) {
            return Ok(types);
        }
        Ok(types.iter().map(|it| current.apply(pool, it)).collect())
    }
}
