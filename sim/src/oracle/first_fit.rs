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
//! fail) deals the group's pods round-robin over the zones the pod may use, and a spread
//! over `kubernetes.io/hostname` or a required pod anti-affinity on it keeps two pods of
//! the same group off one node. Pool limits are not modelled: they only lower what a
//! controller may launch.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::resources::{Offering, Resources, pod_allows, pool_node_labels, tolerates_pool};

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
    /// What its pods take (without the DaemonSet overhead).
    used: Resources,
    /// Indexes into the packer's pods placed here, to re-check a smaller offering.
    pods: Vec<usize>,
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

/// The spread and anti-affinity groups a pod belongs to: zone-spread groups and
/// one-per-node groups.
fn groups(pod: &Value) -> (Vec<String>, Vec<String>) {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let (mut zone, mut host) = (Vec::new(), Vec::new());
    for c in pod["spec"]["topologySpreadConstraints"].as_array().into_iter().flatten() {
        let key = selector_key("spread", namespace, &c["labelSelector"]);
        match c["topologyKey"].as_str() {
            Some(ZONE_KEY) => zone.push(key),
            Some(HOSTNAME_KEY) => host.push(key),
            _ => {}
        }
    }
    let anti = pod.pointer("/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution");
    for term in anti.and_then(Value::as_array).into_iter().flatten() {
        if term["topologyKey"] == HOSTNAME_KEY {
            host.push(selector_key("anti", namespace, &term["labelSelector"]));
        }
    }
    (zone, host)
}

/// The offerings of `supply` a pod may use, with the labels a node of each carries.
fn usable<'s>(
    supply: &'s PoolSupply<'_>,
    pod: &Value,
    zone: Option<&str>,
) -> impl Iterator<Item = (&'s Offering, BTreeMap<String, String>)> + 's {
    let extra = pool_node_labels(supply.pool);
    let pod = pod.clone();
    let zone = zone.map(String::from);
    supply.offerings.iter().filter_map(move |o| {
        if zone.as_deref().is_some_and(|z| o.zone != z) {
            return None;
        }
        let mut labels = (*o.labels).clone();
        labels.extend(extra.clone());
        pod_allows(&pod, &labels).then_some((o, labels))
    })
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
    for demand in decreasing(pods) {
        packer.place(demand);
    }
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
        let first_new = packer.bins.len();
        for demand in decreasing(batch) {
            packer.place(demand);
        }
        packer.shrink_from(first_new);
    }
    packer.packing
}

/// The packing in progress.
struct Packer<'p, 'a> {
    pools: &'p [PoolSupply<'a>],
    overhead: Resources,
    bins: Vec<Bin>,
    /// The pods placed so far (for [`Packer::shrink_from`]).
    pods: Vec<Value>,
    /// Pods per zone-spread group and zone so far (placed nodes' pods included), to deal
    /// the next one to the zone that has fewest: what a skew constraint converges to.
    dealt: BTreeMap<String, BTreeMap<String, usize>>,
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
            packing: Packing::default(),
        }
    }

    /// Opens the node `placed` describes, with its pods on it.
    fn place_node(&mut self, placed: &Placed<'_>) {
        let Some(pool) = self.pools.iter().position(|p| p.name == placed.pool) else { return };
        let mut labels = (*placed.offering.labels).clone();
        labels.extend(pool_node_labels(self.pools[pool].pool));
        let mut used = Resources::default();
        let mut exclusive = BTreeSet::new();
        for d in &placed.pods {
            for group in groups(d.pod).0 {
                *self.dealt.entry(group).or_default().entry(placed.offering.zone.clone()).or_insert(0) += 1;
            }
            let mut need = d.requests;
            need.pods = need.pods.max(1.0);
            used.add(&need);
            exclusive.extend(groups(d.pod).1);
        }
        let mut taken = used;
        taken.add(&self.overhead);
        self.bins.push(Bin {
            pool,
            labels,
            free: placed.offering.allocatable.minus(&taken),
            exclusive,
            used,
            pods: Vec::new(),
        });
        *self.packing.nodes.entry(placed.pool.clone()).or_insert(0) += 1;
    }

    /// Places one pod: the first node that takes it, else a new node of the largest
    /// offering it may use.
    fn place(&mut self, demand: &Demand<'_>) {
        let pools = self.pools;
        let (zone_groups, host_groups) = groups(demand.pod);
        let tolerated: Vec<usize> = (0..pools.len()).filter(|i| tolerates_pool(demand.pod, pools[*i].pool)).collect();
        let zone = zone_groups.first().and_then(|group| {
            let zones: BTreeSet<&str> = tolerated
                .iter()
                .flat_map(|i| usable(&pools[*i], demand.pod, None).map(|(o, _)| o.zone.as_str()).collect::<Vec<_>>())
                .collect();
            let counts = self.dealt.entry(group.clone()).or_default();
            let zone = zones.iter().min_by_key(|z| counts.get(**z).copied().unwrap_or(0)).map(|z| z.to_string());
            if let Some(z) = &zone {
                *counts.entry(z.clone()).or_insert(0) += 1;
            }
            zone
        });
        let mut need = demand.requests;
        need.pods = need.pods.max(1.0);
        let fits = |bin: &Bin| {
            tolerated.contains(&bin.pool)
                && zone.as_deref().is_none_or(|z| bin.labels.get(ZONE_KEY).map(String::as_str) == Some(z))
                && pod_allows(demand.pod, &bin.labels)
                && need.fits_in(&bin.free)
                && host_groups.iter().all(|g| !bin.exclusive.contains(g))
        };
        let index = self.pods.len();
        if let Some(bin) = self.bins.iter_mut().find(|b| fits(b)) {
            bin.free = bin.free.minus(&need);
            bin.used.add(&need);
            bin.exclusive.extend(host_groups);
            bin.pods.push(index);
            self.pods.push(demand.pod.clone());
            return;
        }
        let mut with_overhead = need;
        with_overhead.add(&self.overhead);
        let opened = tolerated.iter().find_map(|i| {
            usable(&pools[*i], demand.pod, zone.as_deref())
                .filter(|(o, _)| with_overhead.fits_in(&o.allocatable))
                .max_by(|(a, _), (b, _)| {
                    a.allocatable
                        .cpu
                        .total_cmp(&b.allocatable.cpu)
                        .then(a.allocatable.memory.total_cmp(&b.allocatable.memory))
                        .then(b.price.total_cmp(&a.price))
                        .then(b.instance_type.cmp(&a.instance_type))
                        .then(b.zone.cmp(&a.zone))
                })
                .map(|(o, labels)| Bin {
                    pool: *i,
                    labels,
                    free: o.allocatable.minus(&with_overhead),
                    exclusive: BTreeSet::new(),
                    used: need,
                    pods: vec![index],
                })
        });
        match opened {
            Some(mut bin) => {
                bin.exclusive.extend(host_groups);
                *self.packing.nodes.entry(pools[bin.pool].name.clone()).or_insert(0) += 1;
                self.bins.push(bin);
                self.pods.push(demand.pod.clone());
            }
            None => self.packing.unplaceable += 1,
        }
    }

    /// Shrinks each node from `first` on to the smallest offering of its pool, in its zone,
    /// that every pod on it allows and that holds them with the DaemonSet overhead.
    fn shrink_from(&mut self, first: usize) {
        for bin in &mut self.bins[first..] {
            let supply = &self.pools[bin.pool];
            let zone = bin.labels.get(ZONE_KEY).cloned();
            let mut need = bin.used;
            need.add(&self.overhead);
            let extra = pool_node_labels(supply.pool);
            let smallest = supply
                .offerings
                .iter()
                .filter(|o| zone.as_deref().is_none_or(|z| o.zone == z) && need.fits_in(&o.allocatable))
                .map(|o| {
                    let mut labels = (*o.labels).clone();
                    labels.extend(extra.clone());
                    (o, labels)
                })
                .filter(|(_, labels)| bin.pods.iter().all(|i| pod_allows(&self.pods[*i], labels)))
                .min_by(|(a, _), (b, _)| {
                    a.allocatable
                        .cpu
                        .total_cmp(&b.allocatable.cpu)
                        .then(a.allocatable.memory.total_cmp(&b.allocatable.memory))
                        .then(a.price.total_cmp(&b.price))
                        .then(a.instance_type.cmp(&b.instance_type))
                });
            if let Some((o, labels)) = smallest {
                bin.free = o.allocatable.minus(&need);
                bin.labels = labels;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dovetail_fakecloud::CapacityType;
    use serde_json::json;

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    fn offering(name: &str, zone: &str, cpu: f64, memory_gib: f64, price: f64) -> Offering {
        let labels: BTreeMap<String, String> = [
            ("node.kubernetes.io/instance-type", name),
            (ZONE_KEY, zone),
            ("karpenter.sh/capacity-type", "on-demand"),
            ("kubernetes.io/arch", "amd64"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Offering {
            instance_type: name.into(),
            zone: zone.into(),
            capacity_type: CapacityType::OnDemand,
            price,
            allocatable: Resources { cpu, memory: memory_gib * GIB, pods: 58.0 },
            labels: labels.into(),
        }
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"namespace": "default", "name": "p"}, "spec": spec})
    }

    fn demands<'a>(keys: &'a [String], pod: &'a Value, cpu: f64) -> Vec<Demand<'a>> {
        keys.iter()
            .map(|k| Demand { key: k, pod, requests: Resources { cpu, memory: 0.25 * GIB, pods: 1.0 } })
            .collect()
    }

    fn supply(pool: &Value) -> Vec<PoolSupply<'_>> {
        vec![PoolSupply {
            name: "default".into(),
            pool,
            offerings: vec![
                offering("m.large", "a", 1900.0, 7.0, 0.1),
                offering("m.4xlarge", "a", 15_800.0, 60.0, 0.8),
                offering("m.4xlarge", "b", 15_800.0, 60.0, 0.8),
                offering("m.4xlarge", "c", 15_800.0, 60.0, 0.8),
            ],
        }]
    }

    #[test]
    fn fifty_small_identical_pods_need_one_large_node() {
        let pool = json!({"metadata": {"name": "default"}, "spec": {}});
        let keys: Vec<String> = (0..50).map(|i| format!("default/p{i:02}")).collect();
        let p = pod(json!({}));
        let packing = first_fit_decreasing(&demands(&keys, &p, 200.0), &supply(&pool), &Resources::default());
        assert_eq!(packing.nodes.get("default"), Some(&1));
        assert_eq!(packing.unplaceable, 0);
        // DaemonSet overhead is taken from every node: 50 × 300m no longer fits one.
        let overhead = Resources { cpu: 1000.0, memory: 0.0, pods: 1.0 };
        let packing = first_fit_decreasing(&demands(&keys, &p, 300.0), &supply(&pool), &overhead);
        assert_eq!(packing.total(), 2);
    }

    #[test]
    fn zone_spread_and_hostname_anti_affinity_raise_the_count() {
        let pool = json!({"metadata": {"name": "default"}, "spec": {}});
        let keys: Vec<String> = (0..6).map(|i| format!("default/p{i}")).collect();
        let spread = pod(json!({"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "w"}}}
        ]}));
        assert_eq!(
            first_fit_decreasing(&demands(&keys, &spread, 200.0), &supply(&pool), &Resources::default()).total(),
            3
        );
        let anti = pod(json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": HOSTNAME_KEY, "labelSelector": {"matchLabels": {"app": "w"}}}
        ]}}}));
        assert_eq!(
            first_fit_decreasing(&demands(&keys, &anti, 200.0), &supply(&pool), &Resources::default()).total(),
            6
        );
    }

    #[test]
    fn a_pod_no_offering_allows_is_unplaceable() {
        let pool = json!({"metadata": {"name": "default"}, "spec": {}});
        let keys = vec!["default/gpu".to_string()];
        let p = pod(json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}));
        let packing = first_fit_decreasing(&demands(&keys, &p, 200.0), &supply(&pool), &Resources::default());
        assert_eq!((packing.total(), packing.unplaceable), (0, 1));
        let tainted = json!({"metadata": {"name": "default"}, "spec": {"template": {"spec": {"taints": [
            {"key": "gpu", "effect": "NoSchedule"}]}}}});
        let p = pod(json!({}));
        let packing = first_fit_decreasing(&demands(&keys, &p, 200.0), &supply(&tainted), &Resources::default());
        assert_eq!(packing.unplaceable, 1, "a pod that does not tolerate the pool's taint");
    }

    #[test]
    fn passes_of_one_pod_fill_the_smallest_node_each_opens_before_opening_another() {
        let pool = json!({"metadata": {"name": "default"}, "spec": {}});
        let keys: Vec<String> = (0..50).map(|i| format!("default/p{i:02}")).collect();
        let p = pod(json!({}));
        let all = demands(&keys, &p, 200.0);
        let one_pass = first_fit_in_batches(std::slice::from_ref(&all), &supply(&pool), &Resources::default(), &[]);
        assert_eq!(one_pass.total(), 1, "one pass sees the burst: one large node");
        // One pod per pass: each new node is the smallest that fits (m.large, 9 pods of
        // 200m), and later passes fill it before opening the next: ceil(50 / 9) = 6.
        let passes: Vec<Vec<Demand<'_>>> = all.iter().map(|d| vec![d.clone()]).collect();
        let packing = first_fit_in_batches(&passes, &supply(&pool), &Resources::default(), &[]);
        assert_eq!(packing.total(), 6);
    }

    #[test]
    fn a_placed_node_is_counted_and_its_free_room_used_first() {
        let pool = json!({"metadata": {"name": "default"}, "spec": {}});
        let keys: Vec<String> = (0..12).map(|i| format!("default/p{i:02}")).collect();
        let p = pod(json!({}));
        let all = demands(&keys, &p, 200.0);
        // Four pods already run on an m.large (1900m): five more fit there, three need one
        // new node.
        let placed = Placed {
            pool: "default".into(),
            offering: offering("m.large", "a", 1900.0, 7.0, 0.1),
            pods: all[..4].to_vec(),
        };
        let packing = first_fit_in_batches(&[all[4..].to_vec()], &supply(&pool), &Resources::default(), &[placed]);
        assert_eq!(packing.total(), 2);
        let unknown =
            Placed { pool: "other".into(), offering: offering("m.large", "a", 1900.0, 7.0, 0.1), pods: Vec::new() };
        let packing =
            first_fit_in_batches(std::slice::from_ref(&all), &supply(&pool), &Resources::default(), &[unknown]);
        assert_eq!(packing.total(), 1, "a node of a pool the packing does not know is not counted");
    }

    /// A placed node's spread pods count in its zone: with two of the group already in zone
    /// a, the next two go to b and c, and a third fills the placed node's zone last. Without
    /// them the dealing would start again at a, as if no zone had any.
    #[test]
    fn a_placed_nodes_spread_pods_count_in_its_zone() {
        let pool = json!({"metadata": {"name": "default"}, "spec": {}});
        let keys: Vec<String> = (0..5).map(|i| format!("default/p{i}")).collect();
        let spread = pod(json!({"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "w"}}}
        ]}));
        let all = demands(&keys, &spread, 200.0);
        let placed = Placed {
            pool: "default".into(),
            offering: offering("m.4xlarge", "a", 15_800.0, 60.0, 0.8),
            pods: all[..2].to_vec(),
        };
        let packing = first_fit_in_batches(&[all[2..4].to_vec()], &supply(&pool), &Resources::default(), &[placed]);
        assert_eq!(packing.total(), 3, "the placed node in a, new ones in b and c");
        let placed = Placed {
            pool: "default".into(),
            offering: offering("m.4xlarge", "a", 15_800.0, 60.0, 0.8),
            pods: all[..2].to_vec(),
        };
        let packing = first_fit_in_batches(&[all[2..5].to_vec()], &supply(&pool), &Resources::default(), &[placed]);
        assert_eq!(packing.total(), 3, "b, c, then the placed node's zone again, on the placed node");
    }
}
