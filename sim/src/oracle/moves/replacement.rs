//! The cheaper-replacement rule: which instance types Karpenter could replace one node
//! with. Upstream (core v1.14.1 `disruption/consolidation.go` `computeConsolidation`) keeps
//! an instance type only when its worst launch price over its available offerings that
//! the replacement's requirements allow (spot first when they allow spot, else on-demand:
//! `cloudprovider/types.go:587` `WorstLaunchPrice`) is strictly below the candidate's
//! price (`provisioning/scheduling/nodeclaim.go:411`). A spot candidate whose replacement
//! may be spot takes the spot-to-spot path (`consolidation.go:212`): never with the
//! `SpotToSpotConsolidation` gate off, and for one node only with at least 15 cheaper spot
//! types (`consolidation.go:311`).
//!
//! To stay sound whatever Karpenter's own availability view (its ICE cache) says, a type
//! counts only when the dearest of *all* its allowed offerings, available or not, is below
//! the price, and at least one of them is available now: then the worst launch price
//! Karpenter computes is below it too.
//!
//! A type holds the pods only as Karpenter's scheduler sizes a new node of it: with its
//! *estimated* capacity memory (7.5 % VM overhead, [`planned_allocatable`]) unless the
//! provider's discovered-capacity cache surely holds what a node of the type reported under
//! the pool's EC2NodeClass's current AMIs, and its resolved instance types surely carry it
//! ([`crate::oracle::discovered_capacity`]: a live node, registered on the class's current
//! AMI at least 5½ minutes ago; aws provider `pkg/providers/instancetype/instancetype.go:270`,
//! `:475-500`, the capacity controller `pkg/controllers/providers/instancetype/capacity/
//! controller.go:70-106`). Otherwise upstream may still plan with the estimate, so the oracle
//! keeps to it, and may miss a move upstream finds.
//!
//! [`planned_allocatable`]: crate::oracle::resources::planned_allocatable

use std::collections::{BTreeMap, BTreeSet};

use dovetail_fakecloud::CapacityType;

use super::host::{Host, Movable};
use crate::oracle::first_fit::{limit_capacity, pool_limits};
use crate::oracle::resources::{
    NodeSelection, Offering, Requirement, Resources, pool_node_labels, pool_taints, tolerates_taints,
};
use crate::oracle::view::PoolView;

/// Spot-to-spot replacement of one node needs at least this many cheaper spot types
/// (`MinInstanceTypesForSpotToSpotConsolidation`, core `consolidation.go:48`).
pub const SPOT_TO_SPOT_MIN_CHEAPER_TYPES: usize = 15;

/// What replacing a node could launch.
#[derive(Clone, Debug, PartialEq)]
pub enum Cheaper {
    /// Instance types that qualify with their worst launch price, cheapest first.
    Options(Vec<(String, f64)>),
    /// Why none does.
    None(String),
}

/// Each NodePool's offerings and the DaemonSet overhead a new node carries.
pub struct Replacements<'a> {
    /// Pool name → every priced offering its requirements allow, with availability.
    pub offerings: &'a BTreeMap<&'a str, Vec<(Offering, bool)>>,
    /// The pools.
    pub pools: &'a BTreeMap<String, PoolView>,
    /// DaemonSet overhead.
    pub overhead: Resources,
    /// (instance type, EC2NodeClass) pairs Karpenter surely sizes new nodes of by the
    /// capacity a registered node reported ([`crate::oracle::discovered_capacity`]).
    pub seen: BTreeSet<(String, String)>,
    /// Pool name → the instance types of its live nodes, one entry per node: what they take
    /// from its `spec.limits`.
    pool_nodes: BTreeMap<String, Vec<String>>,
    /// Pool name → what every one of its live nodes takes from its `spec.limits` together
    /// (each node at the capacity of its type's first offering in the pool, nothing for a
    /// type the pool does not offer), and instance type → that capacity. Summed once per
    /// assessment rather than per question (issue 21: a linear offering lookup per node on
    /// every [`Replacements::options`] call was quadratic on the per-tick path).
    limits_taken: BTreeMap<String, (Resources, BTreeMap<String, Resources>)>,
    /// Pool name → what each of its offerings (in [`Replacements::offerings`] order) would
    /// take from its limits ([`limit_capacity`]): read out of the offering's labels once
    /// per assessment, not per offering of every question (issue 21: 29% of
    /// burst-watch-lag's run).
    capacities: BTreeMap<String, Vec<Resources>>,
}

impl<'a> Replacements<'a> {
    /// The replacements of `pools` with their `offerings`; `pool_nodes` gives each pool's
    /// live nodes' instance types, one entry per node.
    pub fn new(
        offerings: &'a BTreeMap<&'a str, Vec<(Offering, bool)>>,
        pools: &'a BTreeMap<String, PoolView>,
        overhead: Resources,
        seen: BTreeSet<(String, String)>,
        pool_nodes: BTreeMap<String, Vec<String>>,
    ) -> Self {
        let capacities: BTreeMap<String, Vec<Resources>> = offerings
            .iter()
            .map(|(pool, offerings)| (pool.to_string(), offerings.iter().map(|(o, _)| limit_capacity(o)).collect()))
            .collect();
        let limits_taken = pool_nodes
            .iter()
            .map(|(pool, types)| {
                let mut capacity: BTreeMap<String, Resources> = BTreeMap::new();
                let listed = offerings.get(pool.as_str()).into_iter().flatten();
                for ((o, _), c) in listed.zip(capacities.get(pool).into_iter().flatten()) {
                    capacity.entry(o.instance_type.clone()).or_insert(*c);
                }
                let mut taken = Resources::default();
                for t in types {
                    taken.add(&capacity.get(t).copied().unwrap_or_default());
                }
                (pool.clone(), (taken, capacity))
            })
            .collect();
        Self { offerings, pools, overhead, seen, pool_nodes, limits_taken, capacities }
    }
}

/// The nodes one replacement would take over: their pool, pods and price.
pub struct Group<'h> {
    /// The pool the replacement launches from.
    pub nodepool: &'h str,
    /// Every pod it must hold.
    pub pods: Vec<&'h Movable>,
    /// Options must have a worst launch price strictly below this.
    pub below: f64,
    /// Every node replaced is spot.
    pub all_spot: bool,
    /// One node (the spot-to-spot path then needs 15 cheaper types and keeps the 15
    /// cheapest; for several nodes upstream has no such rule: `consolidation.go:297`).
    pub single: bool,
    /// The instance types of the nodes replaced: their capacity goes back to the pool's
    /// limits for the replacement.
    pub replaced: Vec<&'h str>,
}

impl Replacements<'_> {
    /// The instance types one node of `host`'s pool could replace it with.
    pub fn cheaper(&self, host: &Host, spot_to_spot: bool) -> Cheaper {
        let Some(pool_name) = host.nodepool.as_deref() else { return Cheaper::None("no NodePool".into()) };
        let group = Group {
            nodepool: pool_name,
            pods: host.movable.iter().collect(),
            below: host.price,
            all_spot: host.spot,
            single: true,
            replaced: vec![host.instance_type.as_str()],
        };
        self.options(&group, spot_to_spot)
    }

    /// The instance types one node of the group's pool, holding all its pods, could launch
    /// as under upstream's price rule.
    pub fn options(&self, group: &Group<'_>, spot_to_spot: bool) -> Cheaper {
        let pool_name = group.nodepool;
        let (Some(offerings), Some(pool)) = (self.offerings.get(pool_name), self.pools.get(pool_name)) else {
            return Cheaper::None("its NodePool does not exist".into());
        };
        let mut need = self.overhead;
        for p in &group.pods {
            need.add(&p.requests);
        }
        // The offerings every pod of the node accepts (selectors, affinity, taints).
        let accepts = Acceptance::of(&group.pods, &pool.object, true);
        // Each offering with what it takes from the limits ([`Replacements::capacities`]:
        // built from the same offerings, so the two lists are as long as each other).
        let capacities = self.capacities.get(pool_name).map_or(&[][..], Vec::as_slice);
        let compatible: Vec<(&(Offering, bool), &Resources)> =
            offerings.iter().zip(capacities).filter(|((o, _), _)| accepts.offering(o)).collect();
        let allows_spot = compatible.iter().any(|((o, _), _)| o.capacity_type == CapacityType::Spot);
        let spot_path = group.all_spot && allows_spot;
        if spot_path && !spot_to_spot {
            return Cheaper::None("spot, and SpotToSpotConsolidation is off: it may only be deleted".into());
        }
        let seen = self.seen_types(&pool.object);
        let remaining = self.remaining_limits(pool_name, &pool.object, &group.replaced);
        let mut by_type: BTreeMap<&str, (f64, bool)> = BTreeMap::new();
        for ((o, available), capacity) in compatible {
            if spot_path && o.capacity_type != CapacityType::Spot {
                continue;
            }
            if !capacity.fits_in(&remaining) {
                continue;
            }
            if !need.fits_in(usable(&seen, o)) {
                continue;
            }
            let entry = by_type.entry(o.instance_type.as_str()).or_insert((0.0, false));
            entry.0 = entry.0.max(o.price);
            entry.1 |= *available;
        }
        let mut options: Vec<(String, f64)> = by_type
            .into_iter()
            .filter(|(_, (worst, available))| *available && *worst < group.below)
            .map(|(t, (worst, _))| (t.to_string(), worst))
            .collect();
        options.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        if spot_path && group.single {
            if options.len() < SPOT_TO_SPOT_MIN_CHEAPER_TYPES {
                return Cheaper::None(format!(
                    "spot, and only {} spot types that fit its pods are cheaper (spot-to-spot needs {SPOT_TO_SPOT_MIN_CHEAPER_TYPES})",
                    options.len()
                ));
            }
            options.truncate(SPOT_TO_SPOT_MIN_CHEAPER_TYPES);
        }
        if options.is_empty() {
            return Cheaper::None("no cheaper instance type fits its pods".into());
        }
        Cheaper::Options(options)
    }

    /// Whether `instance_type` could be among upstream's replacement options for a new
    /// node holding at least `pods`: some offering of it that `pods` accept holds them
    /// (with the DaemonSet overhead) and costs less than `below`. Deliberately loose
    /// (any capacity type, available or not): it bounds upstream's options from above.
    pub fn could_offer(&self, nodepool: &str, instance_type: &str, pods: &[&Movable], below: f64) -> bool {
        let (Some(offerings), Some(pool)) = (self.offerings.get(nodepool), self.pools.get(nodepool)) else {
            return false;
        };
        let mut need = self.overhead;
        for p in pods {
            need.add(&p.requests);
        }
        // Loose: the pods' preferences may narrow upstream's options, never widen them.
        let accepts = Acceptance::of(pods, &pool.object, false);
        offerings.iter().any(|(o, _)| {
            o.instance_type == instance_type && o.price < below && need.fits_in(&o.allocatable) && accepts.offering(o)
        })
    }

    /// Whether NodePool `nodepool` could launch a node for `pod` held to the preferred
    /// node-affinity `term` on top of its own constraints: some offering (available or
    /// not, whatever its size) that the pod and the term accept. Loose, so a preference
    /// is taken to bind whenever Karpenter might launch for it.
    pub fn could_launch(&self, nodepool: &str, pod: &Movable, term: &[Requirement]) -> bool {
        let (Some(offerings), Some(pool)) = (self.offerings.get(nodepool), self.pools.get(nodepool)) else {
            return false;
        };
        let held = Movable { preferred: Some(term.to_vec()), ..pod.clone() };
        let accepts = Acceptance::of(&[&held], &pool.object, true);
        offerings.iter().any(|(o, _)| accepts.offering(o))
    }

    /// What the pool's `spec.limits` leave a replacement: the limits, less the capacity of
    /// the pool's live nodes other than the `replaced` ones. Upstream simulates a
    /// consolidation with the candidates out of the cluster state (core
    /// `disruption/helpers.go` `SimulateScheduling`) and its scheduler keeps a new claim's
    /// types within what the limits leave (`scheduling/scheduler.go` l. 709-716,
    /// `filterByRemainingResources`): a pool at its limit cannot replace a node by a larger
    /// one (generated story 391155524: an 8-vCPU m2.4xlarge under `limits.cpu: 8` has no
    /// 16-vCPU m5a.4xlarge replacement).
    ///
    /// The pool's nodes take [`Replacements::limits_taken`] together, less the `replaced`
    /// ones (each counted once per node of its type in the pool). CPU in millicores and
    /// memory in bytes are whole numbers well within `f64`'s exact range, so the sum and
    /// the differences are exact, as the node-by-node subtraction was.
    fn remaining_limits(&self, pool_name: &str, pool: &serde_json::Value, replaced: &[&str]) -> Resources {
        let remaining = pool_limits(pool);
        if remaining.cpu.is_infinite() && remaining.memory.is_infinite() {
            return remaining;
        }
        let Some((taken, capacity)) = self.limits_taken.get(pool_name) else { return remaining };
        let nodes = self.pool_nodes.get(pool_name).map_or(&[][..], Vec::as_slice);
        let mut taken = *taken;
        let mut matched: Vec<bool> = vec![false; nodes.len()];
        for t in replaced {
            let node = (0..nodes.len()).find(|i| !matched[*i] && nodes[*i] == *t);
            if let Some(i) = node {
                matched[i] = true;
                taken = taken.minus(&capacity.get(*t).copied().unwrap_or_default());
            }
        }
        remaining.minus(&taken)
    }

    /// The instance types of [`Replacements::seen`] live with `pool`'s EC2NodeClass: read
    /// once per question, not per offering (issue 21: reading the class out of the pool's
    /// JSON per offering was half of burst-watch-lag's run).
    fn seen_types(&self, pool: &serde_json::Value) -> BTreeSet<&str> {
        let class = node_class(pool);
        self.seen.iter().filter(|(_, c)| *c == class).map(|(t, _)| t.as_str()).collect()
    }
}

/// What Karpenter's scheduler counts on pods using on a new node of `o` (see the module
/// docs): the kubelet's allocatable once a node of the type and the pool's EC2NodeClass is
/// live (`seen`: [`Replacements::seen_types`]), else the estimate.
fn usable<'o>(seen: &BTreeSet<&str>, o: &'o Offering) -> &'o Resources {
    if seen.contains(o.instance_type.as_str()) { &o.allocatable } else { &o.planned }
}

/// The name of the EC2NodeClass a NodePool's nodes use.
pub fn node_class(pool: &serde_json::Value) -> String {
    pool.pointer("/spec/template/spec/nodeClassRef/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Whether a set of pods accepts a pool's offerings: every pod tolerates the pool's taints
/// and its node constraints allow the offering's labels with the pool's labels over them
/// (a node carries both; the pool's win). The taints and each distinct set of constraints
/// are read once, not per offering: pods of one workload share their constraints.
struct Acceptance {
    /// Every pod tolerates the pool's taints.
    tolerated: bool,
    /// The labels the pool puts on its nodes.
    pool_labels: BTreeMap<String, String>,
    /// The pods' distinct node constraints, each with the preferred term it is held to.
    selections: Vec<(NodeSelection, Option<Vec<Requirement>>)>,
}

impl Acceptance {
    /// `preferences`: hold each pod to its [`Movable::preferred`] term too.
    fn of(pods: &[&Movable], pool: &serde_json::Value, preferences: bool) -> Self {
        let taints = pool_taints(pool);
        let tolerated = pods.iter().all(|p| tolerates_taints(&p.object, taints));
        let mut selections: Vec<(NodeSelection, Option<Vec<Requirement>>)> = Vec::new();
        for p in pods {
            let selection = (NodeSelection::of(&p.object), p.preferred.clone().filter(|_| preferences));
            if !selections.contains(&selection) {
                selections.push(selection);
            }
        }
        Self { tolerated, pool_labels: pool_node_labels(pool), selections }
    }

    fn offering(&self, o: &Offering) -> bool {
        let label = |k: &str| self.pool_labels.get(k).or_else(|| o.labels.get(k)).map(String::as_str);
        self.tolerated
            && self.selections.iter().all(|(s, preferred)| {
                s.allows(label) && preferred.iter().flatten().all(|r| r.matches_value(label(&r.key)))
            })
    }
}
