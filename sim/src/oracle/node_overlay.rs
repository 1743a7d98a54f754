//! NodeOverlays as the oracles price offerings (feature gate `NodeOverlay`).
//!
//! With the gate on, Karpenter prices every offering it schedules, consolidates and launches
//! with through the NodeOverlays (core `pkg/controllers/nodeoverlay/`), so an oracle that
//! judged it at catalog prices would call a legal overlay-driven replacement illegal (the
//! replacement is dearer at catalog prices) and miss an overlay-cheap move never taken. This
//! module reads the NodeOverlays from the simulated API server's store and evaluates them
//! against every NodePool and every catalog offering, written from upstream's documented
//! rules and sharing no code with the controller's `nodeoverlay` module:
//!
//! - order: heavier first, equal weights by name later in the alphabet first (core
//!   `pkg/apis/v1alpha1/nodeoverlay.go` l. 123-137 `OrderByWeight`; no weight counts as 0);
//! - an overlay the CRD lets through but `RuntimeValidate` rejects is ignored
//!   (`nodeoverlay_validation.go`): a restricted capacity resource, `NotIn` without values,
//!   an operator outside the enum;
//! - selection: an overlay selects an offering of a pool when each of its requirements holds
//!   for the pool's name (`karpenter.sh/nodepool`), the pool's template labels and the
//!   offering's labels, a key the offering lacks failing all but `NotIn`/`DoesNotExist`
//!   (core `controllers/nodeoverlay/controller.go` l. 231-245 `getOverlaidOfferings`,
//!   `IsCompatible` without undefined well-known labels);
//! - conflicts: an overlay that would price an offering already priced by an overlay of its
//!   own weight, or add a capacity resource the last capacity overlay of its own weight on the
//!   type also added, conflicts and applies nowhere (controller.go l. 163-181, store.go
//!   l. 212-236 and 267-286); otherwise the heaviest overlay's price holds per offering and
//!   capacity resources merge, heavier first (store.go l. 178-210, 240-265);
//! - prices: `price` is absolute, `priceAdjustment` `±x` adds, `±x%` scales, never below
//!   zero (core `pkg/cloudprovider/types.go` l. 493-525 `AdjustedPrice`).
//!
//! The oracles' resources are CPU, memory and pod slots only, so the capacity overlays are
//! evaluated for their conflicts (which decide whether an overlay applies at all) and kept
//! ([`NodeOverlays::capacity`]), but size nothing. Reserved offerings keep their price
//! (on-demand / 10^7): the catalog offerings evaluated here are on-demand and spot.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use dovetail_fakecloud::{CapacityType, FakeCloud};
use serde_json::Value;

use super::offering_labels::{Labels, shared_labels};
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::Store;

/// Resources a NodeOverlay may not name (core `v1.WellKnownResources` as the CRD and
/// `RuntimeValidate` restrict them).
const RESTRICTED: [&str; 4] = ["cpu", "memory", "ephemeral-storage", "pods"];

/// The operators of the CRD's enum (nodeoverlay.go l. 38).
const OPERATORS: [&str; 8] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"];

/// One requirement of a NodeOverlay (`{key, operator, values}`).
#[derive(Clone, Debug, PartialEq)]
struct Requirement {
    key: String,
    operator: String,
    values: Vec<String>,
}

impl Requirement {
    fn from_json(v: &Value) -> Option<Self> {
        let values = v["values"].as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from));
        Some(Self {
            key: v["key"].as_str()?.to_owned(),
            operator: v["operator"].as_str()?.to_owned(),
            values: values.collect(),
        })
    }

    /// Whether a label `key` with `value` (`None`: the key is undefined) satisfies it; an
    /// undefined key satisfies only `NotIn` and `DoesNotExist`.
    fn matches(&self, value: Option<&str>) -> bool {
        let number = |s: &str| s.parse::<i64>().ok();
        let bound = self.values.first().and_then(|b| number(b));
        let compare = |holds: fn(i64, i64) -> bool| value.and_then(number).zip(bound).is_some_and(|(v, b)| holds(v, b));
        match self.operator.as_str() {
            "In" => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            "NotIn" => value.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            "Gt" => compare(|v, b| v > b),
            "Lt" => compare(|v, b| v < b),
            "Gte" => compare(|v, b| v >= b),
            "Lte" => compare(|v, b| v <= b),
            _ => false,
        }
    }
}

/// One NodeOverlay as the oracle reads it.
#[derive(Clone, Debug, PartialEq)]
struct Overlay {
    name: String,
    weight: i64,
    requirements: Vec<Requirement>,
    /// `price` or `priceAdjustment`.
    change: Option<String>,
    /// Resource → quantity text.
    capacity: Option<BTreeMap<String, String>>,
}

impl Overlay {
    /// The overlay in `object`, `None` when runtime validation rejects it.
    fn read(object: &Value) -> Option<Self> {
        let spec = &object["spec"];
        let requirements: Vec<Requirement> =
            spec["requirements"].as_array().into_iter().flatten().filter_map(Requirement::from_json).collect();
        let invalid_requirement = requirements
            .iter()
            .any(|r| !OPERATORS.contains(&r.operator.as_str()) || (r.operator == "NotIn" && r.values.is_empty()));
        let capacity: Option<BTreeMap<String, String>> = spec["capacity"].as_object().map(|c| {
            c.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned))).collect()
        });
        let restricted = capacity.iter().flat_map(BTreeMap::keys).any(|k| RESTRICTED.contains(&k.as_str()));
        if invalid_requirement || restricted {
            return None;
        }
        let text = |field: &str| spec[field].as_str().map(str::to_owned);
        Some(Self {
            name: object["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
            weight: spec["weight"].as_i64().unwrap_or(0),
            requirements,
            change: text("price").or_else(|| text("priceAdjustment")),
            capacity,
        })
    }

    /// Whether it selects an offering with `labels` of the pool with `pool_labels`.
    fn selects(&self, pool_labels: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(pool_labels.get(&r.key).or_else(|| labels.get(&r.key)).map(String::as_str)))
    }
}

/// An offering: (pool, instance type, zone, capacity type).
type OfferingKey = (String, String, String, CapacityType);

/// One offering's price change and the weight of the lightest overlay that selected it.
#[derive(Clone, Debug, PartialEq)]
struct Price {
    change: String,
    lowest_weight: i64,
}

/// One (pool, instance type)'s added capacity.
#[derive(Clone, Debug, Default, PartialEq)]
struct Capacity {
    merged: BTreeMap<String, String>,
    /// The resources of the last (lightest) capacity overlay merged, and its weight.
    last: BTreeSet<String>,
    lowest_weight: i64,
}

/// A catalog offering the overlays are evaluated against.
pub type UniverseOffering = (String, String, CapacityType, Labels);

/// The NodeOverlays' effect on every pool's offerings; empty (prices unchanged) when the
/// gate is off.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeOverlays {
    enabled: bool,
    /// The overlays' and pools' (name, resourceVersion) this evaluation was made from.
    read_from: Vec<(String, String)>,
    prices: BTreeMap<OfferingKey, Price>,
    capacity: BTreeMap<(String, String), Capacity>,
    conflicts: BTreeSet<String>,
}

/// The labels an overlay can select a pool by: its name and its template labels.
fn pool_labels(pool: &Value) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = pool
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    labels.insert("karpenter.sh/nodepool".into(), pool["metadata"]["name"].as_str().unwrap_or_default().into());
    labels
}

/// Every catalog offering (instance type, zone, capacity type) with its labels: upstream
/// evaluates overlays against every instance type a pool's node class offers, not only the
/// ones the pool's requirements allow.
pub fn universe(cloud: &FakeCloud) -> Vec<UniverseOffering> {
    let catalog = cloud.catalog();
    let mut out = Vec::new();
    for t in catalog.types() {
        for zone in catalog.zones() {
            if !catalog.is_offered(&t.name, &zone.name) {
                continue;
            }
            for ct in [CapacityType::OnDemand, CapacityType::Spot] {
                if t.supports(ct.as_str()) {
                    out.push((t.name.clone(), zone.name.clone(), ct, shared_labels(t, &zone.name, &zone.id, ct)));
                }
            }
        }
    }
    out
}

/// `base` after an overlay's `price`/`priceAdjustment` `change`.
pub fn adjusted_price(base: f64, change: &str) -> f64 {
    let signed = change.starts_with('+') || change.starts_with('-');
    let adjusted = match (signed, change.strip_suffix('%')) {
        (false, _) => change.parse::<f64>().unwrap_or(base),
        (true, Some(percent)) => percent.parse::<f64>().map_or(base, |p| base * (1.0 + p / 100.0)),
        (true, None) => change.parse::<f64>().map_or(base, |d| base + d),
    };
    adjusted.max(0.0)
}

impl NodeOverlays {
    /// Overlays to be read from the store (the gate is on); nothing evaluated yet.
    pub fn enabled() -> Self {
        Self { enabled: true, read_from: vec![("".into(), "unread".into())], ..Self::default() }
    }

    /// `self` brought up to the store's NodeOverlays and `pools`: evaluated again only when
    /// an overlay or a pool changed. Unchanged when the gate is off.
    pub fn refreshed(self: Arc<Self>, store: &Store, cloud: &FakeCloud, pools: &[&Value]) -> Arc<Self> {
        if !self.enabled {
            return self;
        }
        let key = ResourceKey { group: "karpenter.sh".into(), plural: "nodeoverlays".into() };
        let overlays: Vec<Arc<Value>> = store.iter(&key, None).cloned().collect();
        let version = |o: &Value| {
            let m = &o["metadata"];
            (
                m["name"].as_str().unwrap_or_default().to_owned(),
                m["resourceVersion"].as_str().unwrap_or_default().to_owned(),
            )
        };
        let read_from: Vec<(String, String)> =
            overlays.iter().map(|o| version(o)).chain(pools.iter().map(|p| version(p))).collect();
        if read_from == self.read_from {
            return self;
        }
        let values: Vec<&Value> = overlays.iter().map(AsRef::as_ref).collect();
        let mut evaluated = Self::evaluate(&values, pools, &universe(cloud));
        evaluated.read_from = read_from;
        Arc::new(evaluated)
    }

    /// Evaluates `overlays` against each of `pools` over `universe`.
    pub fn evaluate(overlays: &[&Value], pools: &[&Value], universe: &[UniverseOffering]) -> Self {
        let mut read: Vec<Overlay> = overlays.iter().filter_map(|o| Overlay::read(o)).collect();
        read.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| b.name.cmp(&a.name)));
        let pools: Vec<(String, BTreeMap<String, String>)> = pools
            .iter()
            .map(|p| (p["metadata"]["name"].as_str().unwrap_or_default().to_owned(), pool_labels(p)))
            .collect();
        let mut out = Self { enabled: true, ..Self::default() };
        for overlay in &read {
            let selected: Vec<OfferingKey> = pools
                .iter()
                .flat_map(|(pool, labels)| {
                    universe
                        .iter()
                        .filter(|(_, _, _, l)| overlay.selects(labels, l))
                        .map(|(t, z, ct, _)| (pool.clone(), t.clone(), z.clone(), *ct))
                })
                .collect();
            if out.conflicts_with(overlay, &selected) {
                out.conflicts.insert(overlay.name.clone());
            } else {
                out.store(overlay, &selected);
            }
        }
        out
    }

    /// Whether `overlay` conflicts on one of the offerings it selects.
    fn conflicts_with(&self, overlay: &Overlay, selected: &[OfferingKey]) -> bool {
        let price = overlay.change.is_some()
            && selected.iter().any(|k| self.prices.get(k).is_some_and(|p| p.lowest_weight == overlay.weight));
        let capacity = overlay.capacity.as_ref().is_some_and(|added| {
            selected.iter().any(|(pool, t, _, _)| {
                self.capacity
                    .get(&(pool.clone(), t.clone()))
                    .is_some_and(|c| c.lowest_weight == overlay.weight && added.keys().any(|r| c.last.contains(r)))
            })
        });
        price || capacity
    }

    /// Records `overlay` on the offerings it selects: their price if no heavier overlay set
    /// one, its capacity resources no heavier overlay added.
    fn store(&mut self, overlay: &Overlay, selected: &[OfferingKey]) {
        for k in selected {
            if let Some(change) = &overlay.change {
                self.prices
                    .entry(k.clone())
                    .and_modify(|p| p.lowest_weight = overlay.weight)
                    .or_insert_with(|| Price { change: change.clone(), lowest_weight: overlay.weight });
            }
        }
        let Some(added) = &overlay.capacity else { return };
        let types: BTreeSet<(String, String)> = selected.iter().map(|(p, t, _, _)| (p.clone(), t.clone())).collect();
        for pool_type in types {
            let c = self.capacity.entry(pool_type).or_default();
            for (resource, quantity) in added {
                c.merged.entry(resource.clone()).or_insert_with(|| quantity.clone());
            }
            c.last = added.keys().cloned().collect();
            c.lowest_weight = overlay.weight;
        }
    }

    /// What Karpenter prices an offering of `pool` at whose catalog or market price is `base`.
    pub fn price(&self, pool: Option<&str>, instance_type: &str, zone: &str, ct: CapacityType, base: f64) -> f64 {
        if self.prices.is_empty() {
            return base;
        }
        let Some(pool) = pool else { return base };
        let k = (pool.to_owned(), instance_type.to_owned(), zone.to_owned(), ct);
        self.prices.get(&k).map_or(base, |p| adjusted_price(base, &p.change))
    }

    /// Sets each of `offerings` of `pool` (a NodePool object), given as (instance type, zone,
    /// capacity type, price), to its overlaid price.
    pub fn reprice<'a>(
        &self,
        pool: &Value,
        offerings: impl Iterator<Item = (&'a str, &'a str, CapacityType, &'a mut f64)>,
    ) {
        if self.prices.is_empty() {
            return;
        }
        let name = pool["metadata"]["name"].as_str();
        for (instance_type, zone, ct, price) in offerings {
            *price = self.price(name, instance_type, zone, ct, *price);
        }
    }

    /// The extended resources the overlays add to `instance_type` in `pool`.
    pub fn capacity(&self, pool: &str, instance_type: &str) -> Option<&BTreeMap<String, String>> {
        self.capacity.get(&(pool.to_owned(), instance_type.to_owned())).map(|c| &c.merged)
    }

    /// Whether the overlay named `name` conflicts with a heavier-or-equal one.
    pub fn conflicts(&self, name: &str) -> bool {
        self.conflicts.contains(name)
    }
}

#[cfg(test)]
#[path = "node_overlay_tests.rs"]
mod tests;
