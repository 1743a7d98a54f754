//! An independent first-fit-decreasing packing of pending pods onto new nodes: how many
//! nodes a wave of pods needs when each new node is the largest offering the pod may use.
//!
//! Karpenter's scheduler takes pods largest first (core `scheduling/queue.go` sorts by CPU,
//! then memory), tries the NodeClaims it has opened in this pass before opening another,
//! and keeps adding pods to a NodeClaim while any of its instance types still fits them
//! (`scheduling/nodeclaim.go` `Add` filters the instance-type options) — so a claim fills
//! up to the largest allowed type. This module does the same arithmetic from the scenario's
//! side, with nothing from the controller: a bin is one node of one offering of one
//! NodePool (pools in weight order), it starts with the DaemonSet overhead, and a pod joins
//! the first bin whose labels its node selector and required node affinity accept and
//! whose free room holds it. Two scheduling rules change the count and are modelled:
//! a topology spread over zones (Karpenter honours `ScheduleAnyway` spreads too until they
//! fail) deals the group's pods to the zone with fewest of them, a pod anti-affinity on the
//! zone (required, or preferred: Karpenter holds preferences as required until they fail,
//! [`groups`]) sends each pod of the group to a zone with none while one is left, and a
//! spread over `kubernetes.io/hostname` or a pod anti-affinity on it keeps two pods of the
//! same group off one node, as do host ports that collide (kube-scheduler's NodePorts
//! filter, [`super::host_ports`]). A pool's `spec.limits` on CPU and memory are modelled the way
//! Karpenter's scheduler counts them within a pass, since that can *raise* the count: a
//! new NodeClaim may only use types that fit in what remains, and opening it takes the
//! largest of them off the remainder (core `scheduling/scheduler.go` l. 709 filters the
//! options by `remainingResources`, l. 786 `subtractMax`, l. 1049–1066), so a pass may
//! leave pods it could have placed under a larger claim; the next pass counts the claims
//! in flight at their real capacity (`updateRemainingResources`, l. 835–842) and opens
//! more, each sized for what is left ([`Packer::pass`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::host_ports::{HostPort, any_collision, host_ports};
use super::node_preference::preferred_terms;
use super::resources::{NodeSelection, Offering, Requirement, Resources, pool_node_labels, tolerates_pool};

/// Zone label.
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";
/// Hostname label.
pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";

/// One NodePool and the offerings it may launch now.
#[derive(Clone, Debug)]
pub struct PoolSupply<'a> {
    /// Name.
    pub name: String,
    /// The NodePool manifest.
    pub pool: &'a Value,
    /// Allowed, available offerings (`resources::allowed_offerings`).
    pub offerings: Vec<Offering>,
    /// The capacity its live nodes took from its `spec.limits` when the packing starts.
    pub used: Resources,
}

/// One pod to place: its object and requests.
#[derive(Clone, Debug)]
pub struct Demand<'a> {
    /// `namespace/name`, for a stable order.
    pub key: &'a str,
    /// The pod.
    pub pod: &'a Value,
    /// Its requests.
    pub requests: Resources,
}

/// What the packing needed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Packing {
    /// New nodes per NodePool.
    pub nodes: BTreeMap<String, usize>,
    /// Pods no allowed offering can host.
    pub unplaceable: usize,
    /// Of those, the pods an allowed offering would host but for the pool's `spec.limits`
    /// as this packing spent them (see [`Packing::limited`]).
    pub limited: usize,
}

impl Packing {
    /// Nodes over every pool.
    pub fn total(&self) -> usize {
        self.nodes.values().sum()
    }
}

/// One node of the packing.
struct Bin {
    pool: usize,
    labels: BTreeMap<String, String>,
    free: Resources,
    exclusive: BTreeSet<String>,
    /// The host ports its pods bind ([`host_ports`]).
    ports: Vec<HostPort>,
    /// What its pods take (without the DaemonSet overhead).
    used: Resources,
    /// Indexes into the packer's pods placed here, to re-check a smaller offering.
    pods: Vec<usize>,
    /// The capacity its offering takes from the pool's limits.
    capacity: Resources,
    /// The preferred node-affinity terms its pods were placed under ([`Packer::place`]).
    terms: Vec<Vec<Requirement>>,
}

/// What one offering takes from its pool's `spec.limits`: the instance's CPU and memory
/// (its `instance-cpu` and `instance-memory` labels), in the packing's units.
pub(crate) fn limit_capacity(o: &Offering) -> Resources {
    let label = |k: &str| o.labels.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    Resources {
        cpu: label("karpenter.k8s.aws/instance-cpu") * 1000.0,
        memory: label("karpenter.k8s.aws/instance-memory") * 1024.0 * 1024.0,
        pods: 0.0,
    }
}

/// A pool's `spec.limits` on CPU (millicores) and memory (bytes); infinite where unset or
/// unreadable (the loader rejects unreadable ones).
pub(crate) fn pool_limits(pool: &Value) -> Resources {
    let get = |k: &str| {
        pool.pointer(&format!("/spec/limits/{k}")).and_then(|v| match v {
            Value::String(t) => Some(t.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    let cpu =
        get("cpu").and_then(|t| crate::actors::quantity::parse_milli(&t).ok()).map_or(f64::INFINITY, |v| v as f64);
    let memory =
        get("memory").and_then(|t| crate::actors::quantity::parse_value(&t).ok()).map_or(f64::INFINITY, |v| v as f64);
    Resources { cpu, memory, pods: f64::INFINITY }
}

/// Pool order: `spec.weight` descending, then name (Karpenter's `OrderByWeight`).
pub fn by_weight(pools: &mut [PoolSupply<'_>]) {
    let weight = |p: &PoolSupply<'_>| p.pool.pointer("/spec/weight").and_then(Value::as_i64).unwrap_or(0);
    pools.sort_by(|a, b| weight(b).cmp(&weight(a)).then_with(|| a.name.cmp(&b.name)));
}

/// The label selector of a constraint, as a group key (pods it counts together).
fn selector_key(kind: &str, namespace: &str, selector: &Value) -> String {
    format!("{kind}:{namespace}:{selector}")
}

/// The spread and anti-affinity groups a pod belongs to.
#[derive(Default)]
struct Groups {
    /// Zone-spread groups: the pods are dealt to the zone with fewest of the group.
    zone_spread: Vec<String>,
    /// The `maxSkew` of the first zone spread.
    zone_skew: usize,
    /// Zone anti-affinity groups, with whether the term is required: a pod goes to a zone
    /// with none of its group while one is left.
    zone_anti: Vec<(String, bool)>,
    /// One-per-node groups.
    host: Vec<String>,
}

impl Groups {
    /// Every group counted per zone.
    fn per_zone(&self) -> impl Iterator<Item = &String> {
        self.zone_spread.iter().chain(self.zone_anti.iter().map(|(g, _)| g))
    }
}

/// The groups of `pod`. Karpenter treats every preference as required until the pod fails
/// to schedule, and only then relaxes it (core `scheduling/scheduler.go` l. 84, `Relax` at
/// l. 543; `scheduling/preferences.go` `Relax`, l. 38–44, drops preferred pod
/// anti-affinity terms, `removePreferredPodAntiAffinityTerm`, l. 117, and `ScheduleAnyway`
/// spreads): so a preferred anti-affinity term counts like a required one, except that a
/// zone term nobody can satisfy any more is dropped instead of leaving the pod unplaced. On
/// `kubernetes.io/hostname` a new node always satisfies it, so it never needs relaxing.
fn groups(pod: &Value) -> Groups {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let mut groups = Groups::default();
    for c in pod["spec"]["topologySpreadConstraints"].as_array().into_iter().flatten() {
        let key = selector_key("spread", namespace, &c["labelSelector"]);
        match c["topologyKey"].as_str() {
            Some(ZONE_KEY) => {
                if groups.zone_spread.is_empty() {
                    groups.zone_skew = c["maxSkew"].as_u64().unwrap_or(1).max(1) as usize;
                }
                groups.zone_spread.push(key)
            }
            Some(HOSTNAME_KEY) => groups.host.push(key),
            _ => {}
        }
    }
    let anti = &pod["spec"]["affinity"]["podAntiAffinity"];
    let required = anti["requiredDuringSchedulingIgnoredDuringExecution"].as_array().into_iter().flatten();
    let preferred = anti["preferredDuringSchedulingIgnoredDuringExecution"].as_array().into_iter().flatten();
    let terms = required.map(|t| (t, true)).chain(preferred.map(|t| (&t["podAffinityTerm"], false)));
    for (term, required) in terms {
        match term["topologyKey"].as_str() {
            Some(HOSTNAME_KEY) => groups.host.push(selector_key("anti", namespace, &term["labelSelector"])),
            Some(ZONE_KEY) => {
                groups.zone_anti.push((selector_key("zone-anti", namespace, &term["labelSelector"]), required))
            }
            _ => {}
        }
    }
    groups
}

/// Whether `labels` satisfy a preferred node-affinity term held as required (none: yes).
fn holds(term: Option<&[Requirement]>, labels: &BTreeMap<String, String>) -> bool {
    term.is_none_or(|t| t.iter().all(|r| r.matches(labels)))
}

/// The offerings of `supply` a pod may use; with `term`, only those that satisfy that
/// preferred term too. A node's labels ([`node_labels`]) are looked up in place: building
/// them per offering per pod was most of the packing's cost (issue 21, the r-tenth cut).
fn usable<'s>(
    supply: &'s PoolSupply<'_>,
    pod: &Value,
    zones: Option<&BTreeSet<String>>,
    term: Option<&[Requirement]>,
) -> impl Iterator<Item = &'s Offering> + 's {
    let extra = pool_node_labels(supply.pool);
    let selection = NodeSelection::of(pod);
    let zones = zones.cloned();
    let term: Option<Vec<Requirement>> = term.map(<[Requirement]>::to_vec);
    supply.offerings.iter().filter(move |o| {
        if zones.as_ref().is_some_and(|zs| !zs.contains(&o.zone)) {
            return false;
        }
        let label = |k: &str| extra.get(k).or_else(|| o.labels.get(k)).map(String::as_str);
        selection.allows(label) && term.iter().flatten().all(|r| r.matches_value(label(&r.key)))
    })
}

/// The labels a node of offering `o` of a pool carries: the offering's, with the pool's
/// (`extra`, [`pool_node_labels`]) over them.
fn node_labels(o: &Offering, extra: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut labels = (*o.labels).clone();
    labels.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    labels
}

/// Pods largest first (CPU, then memory, then key): Karpenter's queue order.
fn decreasing<'d, 'a>(pods: &'d [Demand<'a>]) -> Vec<&'d Demand<'a>> {
    let mut order: Vec<&Demand<'a>> = pods.iter().collect();
    order.sort_by(|a, b| {
        b.requests
            .cpu
            .total_cmp(&a.requests.cpu)
            .then(b.requests.memory.total_cmp(&a.requests.memory))
            .then(a.key.cmp(b.key))
    });
    order
}

/// Packs `pods` first-fit-decreasing onto new nodes of `pools` (in the order given), each
/// node starting with `overhead` (DaemonSet pods) taken.
pub fn first_fit_decreasing(pods: &[Demand<'_>], pools: &[PoolSupply<'_>], overhead: &Resources) -> Packing {
    let mut packer = Packer::new(pools, overhead);
    packer.pass(pods.to_vec());
    packer.packing
}

/// A node a pod already runs on, placed before the packing starts: its offering and the
/// pods it hosts. The packing counts it and fills its free room first.
#[derive(Clone, Debug)]
pub struct Placed<'a> {
    /// Its NodePool.
    pub pool: String,
    /// The offering it runs as.
    pub offering: Offering,
    /// The pods on it.
    pub pods: Vec<Demand<'a>>,
}

/// Packs `batches` in turn, as a provisioner that sees one batch per pass packs them
/// (Karpenter's `scheduling/scheduler.go` `add`, l. 582–612: a pod tries the nodes that
/// exist or are in flight before a new NodeClaim): each batch first-fit-decreasing onto
/// the `placed` nodes and the nodes earlier batches opened, then onto new ones; after
/// each batch, each node it opened shrinks to the smallest offering of its pool that still
/// holds its pods, because a launch may be any of the instance types that fit them (core
/// `scheduling/nodeclaim.go` `Add` keeps every type that fits; the AWS provider launches
/// on-demand by `lowest-price`, `pkg/providers/instance/types.go` l. 244), and the next
/// batch only finds that room. The count is the most nodes a provisioner that reuses
/// in-flight room can reach for these batches.
pub fn first_fit_in_batches(
    batches: &[Vec<Demand<'_>>],
    pools: &[PoolSupply<'_>],
    overhead: &Resources,
    placed: &[Placed<'_>],
) -> Packing {
    let mut packer = Packer::new(pools, overhead);
    for p in placed {
        packer.place_node(p);
    }
    for batch in batches {
        packer.pass(batch.clone());
    }
    packer.packing
}

/// The packing in progress.
struct Packer<'p, 'a> {
    pools: &'p [PoolSupply<'a>],
    overhead: Resources,
    bins: Vec<Bin>,
    /// The node constraints of the pods placed so far (for [`Packer::shrink_from`]).
    pods: Vec<NodeSelection>,
    /// Pods per zone-spread group and zone so far (placed nodes' pods included), to deal
    /// the next one to the zone that has fewest: what a skew constraint converges to.
    dealt: BTreeMap<String, BTreeMap<String, usize>>,
    /// Per pool, what its limits leave in this pass ([`Packer::start_pass`]).
    remaining: Vec<Resources>,
    packing: Packing,
}

impl<'p, 'a> Packer<'p, 'a> {
    fn new(pools: &'p [PoolSupply<'a>], overhead: &Resources) -> Self {
        Self {
            pools,
            overhead: *overhead,
            bins: Vec::new(),
            pods: Vec::new(),
            dealt: BTreeMap::new(),
            remaining: Vec::new(),
            packing: Packing::default(),
        }
    }

    /// What each pool's limits leave at the start of a pass: the limit, less what its nodes
    /// took before the packing and the capacity of every node the packing has (core
    /// `updateRemainingResources`, l. 835–842, counts nodes in flight at their capacity).
    fn start_pass(&mut self) {
        self.remaining = self
            .pools
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut left = pool_limits(p.pool).minus(&p.used);
                for bin in self.bins.iter().filter(|b| b.pool == i) {
                    left = left.minus(&bin.capacity);
                }
                left
            })
            .collect();
    }

    /// One provisioning pass over `pods`, largest first; the nodes it opens shrink at its
    /// end ([`Packer::shrink_from`]). Pods a pool's limits left without a node go to the
    /// next pass, which sees the room the shrunk nodes leave under the limits; when a pass
    /// places none of them, they are unplaceable.
    fn pass(&mut self, pods: Vec<Demand<'_>>) {
        let mut todo = pods;
        loop {
            self.start_pass();
            let first_new = self.bins.len();
            let mut deferred = Vec::new();
            for demand in decreasing(&todo) {
                if !self.place(demand) {
                    deferred.push(demand.clone());
                }
            }
            self.shrink_from(first_new);
            if deferred.is_empty() {
                return;
            }
            if deferred.len() == todo.len() {
                self.packing.unplaceable += deferred.len();
                self.packing.limited += deferred.iter().filter(|d| self.fits_without_limits(d)).count();
                return;
            }
            todo = deferred;
        }
    }

    /// Whether some pool would open a node for `demand` if its limits left room.
    fn fits_without_limits(&self, demand: &Demand<'_>) -> bool {
        let groups = groups(demand.pod);
        let mut need = demand.requests;
        need.pods = need.pods.max(1.0);
        need.add(&self.overhead);
        let tolerated: Vec<usize> =
            (0..self.pools.len()).filter(|i| tolerates_pool(demand.pod, self.pools[*i].pool)).collect();
        let zones = self.zones_for(demand.pod, &groups, &tolerated, None);
        tolerated
            .iter()
            .any(|i| usable(&self.pools[*i], demand.pod, zones.as_ref(), None).any(|o| need.fits_in(&o.allocatable)))
    }

    /// Opens the node `placed` describes, with its pods on it.
    fn place_node(&mut self, placed: &Placed<'_>) {
        let Some(pool) = self.pools.iter().position(|p| p.name == placed.pool) else { return };
        let mut labels = (*placed.offering.labels).clone();
        labels.extend(pool_node_labels(self.pools[pool].pool));
        let mut used = Resources::default();
        let mut exclusive = BTreeSet::new();
        let mut ports = Vec::new();
        for d in &placed.pods {
            let groups = groups(d.pod);
            for group in groups.per_zone() {
                *self.dealt.entry(group.clone()).or_default().entry(placed.offering.zone.clone()).or_insert(0) += 1;
            }
            let mut need = d.requests;
            need.pods = need.pods.max(1.0);
            used.add(&need);
            exclusive.extend(groups.host);
            ports.extend(host_ports(d.pod));
        }
        let mut taken = used;
        taken.add(&self.overhead);
        self.bins.push(Bin {
            pool,
            labels,
            free: placed.offering.allocatable.minus(&taken),
            exclusive,
            ports,
            used,
            pods: Vec::new(),
            capacity: limit_capacity(&placed.offering),
            terms: Vec::new(),
        });
        *self.packing.nodes.entry(placed.pool.clone()).or_insert(0) += 1;
    }

    /// The zones a pod of `groups` may go to now, `None` when it has no zone rule: the
    /// zones free of each of its anti-affinity groups (a preferred group none is free of is
    /// relaxed, a required one leaves no zone), then of those the one with fewest of its
    /// first spread group. Under a preferred node-affinity `term` the zones are those its
    /// offerings reach, but the skew still counts from the fewest in any zone the pod's
    /// required rules reach: core `topologygroup.go` `nextDomainTopologySpread` (l. 229–297)
    /// takes the minimum over all the group's domains (l. 231; the domains a pod counts come
    /// from its node selector and required affinity only, `topologynodefilter.go`
    /// `MakeTopologyNodeFilter`, l. 39–66) and admits a domain of the node's only while its
    /// count stays within `maxSkew` of that minimum (l. 283), so a spot-preferring pod whose
    /// turn is a zone without spot fails and is relaxed.
    fn zones_for(
        &self,
        pod: &Value,
        groups: &Groups,
        tolerated: &[usize],
        term: Option<&[Requirement]>,
    ) -> Option<BTreeSet<String>> {
        if groups.zone_spread.is_empty() && groups.zone_anti.is_empty() {
            return None;
        }
        let count =
            |group: &String, zone: &String| self.dealt.get(group).and_then(|c| c.get(zone)).copied().unwrap_or(0);
        let reach = |term: Option<&[Requirement]>| -> BTreeSet<String> {
            tolerated
                .iter()
                .flat_map(|i| usable(&self.pools[*i], pod, None, term).map(|o| o.zone.clone()).collect::<Vec<_>>())
                .collect()
        };
        let mut zones = reach(term);
        if let (Some(group), Some(_)) = (groups.zone_spread.first(), term) {
            let min = reach(None).iter().map(|z| count(group, z)).min().unwrap_or(0);
            zones.retain(|z| count(group, z) < min + groups.zone_skew);
        }
        for (group, required) in &groups.zone_anti {
            let free: BTreeSet<String> = zones.iter().filter(|z| count(group, z) == 0).cloned().collect();
            if !free.is_empty() || *required {
                zones = free;
            }
        }
        if let Some(group) = groups.zone_spread.first() {
            zones = zones.iter().min_by_key(|z| count(group, z)).cloned().into_iter().collect();
        }
        Some(zones)
    }

    /// Places one pod, holding its preferred node-affinity terms as required one at a time,
    /// heaviest first, and then none, as Karpenter does (core `pkg/scheduling/
    /// requirements.go` `newPodRequirements`, l. 95–101, requires the heaviest term;
    /// `scheduling/preferences.go` `Relax`, l. 38–44, and `removePreferredNodeAffinityTerm`,
    /// l. 59–72, drop it only when the pod fails, and the next one becomes required): a
    /// spot-preferring pod opens a spot node rather than join an on-demand one with room.
    /// `false` when no level places it: left for the next pass.
    fn place(&mut self, demand: &Demand<'_>) -> bool {
        let terms = preferred_terms(demand.pod);
        terms.iter().map(|t| Some(t.as_slice())).chain([None]).any(|term| self.place_under(demand, term))
    }

    /// Places one pod under `term`: the first node that takes it, else a new node of the
    /// largest offering it may use within what its pool's limits leave.
    fn place_under(&mut self, demand: &Demand<'_>, term: Option<&[Requirement]>) -> bool {
        let pools = self.pools;
        let groups = groups(demand.pod);
        let tolerated: Vec<usize> = (0..pools.len()).filter(|i| tolerates_pool(demand.pod, pools[*i].pool)).collect();
        let zones = self.zones_for(demand.pod, &groups, &tolerated, term);
        let in_zone = |labels: &BTreeMap<String, String>| {
            zones.as_ref().is_none_or(|zs| labels.get(ZONE_KEY).is_some_and(|z| zs.contains(z)))
        };
        let mut need = demand.requests;
        need.pods = need.pods.max(1.0);
        let ports = host_ports(demand.pod);
        let selection = NodeSelection::of(demand.pod);
        let fits = |bin: &Bin| {
            tolerated.contains(&bin.pool)
                && in_zone(&bin.labels)
                && selection.allows(|k| bin.labels.get(k).map(String::as_str))
                && holds(term, &bin.labels)
                && need.fits_in(&bin.free)
                && groups.host.iter().all(|g| !bin.exclusive.contains(g))
                && !any_collision(&ports, &bin.ports)
        };
        let index = self.pods.len();
        let zone = if let Some(bin) = self.bins.iter_mut().find(|b| fits(b)) {
            bin.free = bin.free.minus(&need);
            bin.used.add(&need);
            bin.exclusive.extend(groups.host.iter().cloned());
            bin.ports.extend(ports.iter().cloned());
            bin.pods.push(index);
            bin.terms.extend(term.map(<[Requirement]>::to_vec));
            self.pods.push(selection);
            bin.labels.get(ZONE_KEY).cloned()
        } else {
            let mut with_overhead = need;
            with_overhead.add(&self.overhead);
            let remaining = &self.remaining;
            let opened = tolerated.iter().find_map(|i| {
                usable(&pools[*i], demand.pod, zones.as_ref(), term)
                    .filter(|o| with_overhead.fits_in(&o.allocatable))
                    .filter(|o| remaining.get(*i).is_none_or(|left| limit_capacity(o).fits_in(left)))
                    .max_by(|a, b| {
                        a.allocatable
                            .cpu
                            .total_cmp(&b.allocatable.cpu)
                            .then(a.allocatable.memory.total_cmp(&b.allocatable.memory))
                            .then(b.price.total_cmp(&a.price))
                            .then(b.instance_type.cmp(&a.instance_type))
                            .then(b.zone.cmp(&a.zone))
                    })
                    .map(|o| Bin {
                        pool: *i,
                        labels: node_labels(o, &pool_node_labels(pools[*i].pool)),
                        free: o.allocatable.minus(&with_overhead),
                        exclusive: groups.host.iter().cloned().collect(),
                        ports: ports.clone(),
                        used: need,
                        pods: vec![index],
                        capacity: limit_capacity(o),
                        terms: term.map(<[Requirement]>::to_vec).into_iter().collect(),
                    })
            });
            let Some(bin) = opened else {
                return false;
            };
            if let Some(left) = self.remaining.get_mut(bin.pool) {
                *left = left.minus(&bin.capacity);
            }
            *self.packing.nodes.entry(pools[bin.pool].name.clone()).or_insert(0) += 1;
            let zone = bin.labels.get(ZONE_KEY).cloned();
            self.bins.push(bin);
            self.pods.push(selection);
            zone
        };
        if let Some(zone) = zone {
            for group in groups.per_zone() {
                *self.dealt.entry(group.clone()).or_default().entry(zone.clone()).or_insert(0) += 1;
            }
        }
        true
    }

    /// Shrinks each node from `first` on to the offering Karpenter would launch for it: the
    /// cheapest of its pool, in its zone, that every pod on it allows and that holds them
    /// with the DaemonSet overhead (a claim's options are ordered by price and the fleet
    /// request launches the cheapest available: core `scheduling/nodeclaim.go`
    /// `InstanceTypeOptions` ordered by `OrderByPrice`, aws `providers/instance/instance.go`
    /// CreateFleet `lowest-price` / `price-capacity-optimized`). Under a pool's limits this
    /// matters: a cheap large type takes more of the limit than the smallest one, and the
    /// next pass's claims are sized for what is left.
    fn shrink_from(&mut self, first: usize) {
        for bin in &mut self.bins[first..] {
            let supply = &self.pools[bin.pool];
            let zone = bin.labels.get(ZONE_KEY).cloned();
            let mut need = bin.used;
            need.add(&self.overhead);
            let extra = pool_node_labels(supply.pool);
            let launched = supply
                .offerings
                .iter()
                .filter(|o| zone.as_deref().is_none_or(|z| o.zone == z) && need.fits_in(&o.allocatable))
                .filter(|o| {
                    let label = |k: &str| extra.get(k).or_else(|| o.labels.get(k)).map(String::as_str);
                    bin.pods.iter().all(|i| self.pods[*i].allows(label))
                        && bin.terms.iter().all(|t| t.iter().all(|r| r.matches_value(label(&r.key))))
                })
                .min_by(|a, b| {
                    a.price
                        .total_cmp(&b.price)
                        .then(a.allocatable.cpu.total_cmp(&b.allocatable.cpu))
                        .then(a.allocatable.memory.total_cmp(&b.allocatable.memory))
                        .then(a.instance_type.cmp(&b.instance_type))
                });
            if let Some(o) = launched {
                bin.free = o.allocatable.minus(&need);
                bin.labels = node_labels(o, &extra);
                bin.capacity = limit_capacity(o);
            }
        }
    }
}

#[cfg(test)]
#[path = "first_fit_tests.rs"]
mod tests;
