//! Nodes that Karpenter's own rules forbid it to consolidate, so the cost invariant does
//! not blame the controller for keeping them (karpenter-behaviour.md §5.2 and §5.6):
//!
//! - a node holding a pod with an active `karpenter.sh/do-not-disrupt`, or annotated so
//!   itself, is never a candidate, so it keeps whatever it holds;
//! - consolidation never splits a node: an on-demand node is replaced only by one strictly
//!   cheaper node that holds all its pods;
//! - a spot node can only be *deleted* unless the `SpotToSpotConsolidation` feature gate is
//!   on, and with the gate on a single spot node is replaced only when at least 15 spot
//!   instance types that fit its pods are cheaper than it;
//! - a NodePool with `consolidationPolicy: WhenEmpty` keeps every node that holds a pod,
//!   and one with `consolidateAfter: Never` keeps every node.
//!
//! An on-demand or spot node is pinned only when it cannot be deleted either. That is assumed when one
//! of its pods has topology spread or pod-affinity rules: Karpenter's
//! consolidation simulation treats even `ScheduleAnyway` spread as required, and relaxes
//! it only after trying a new node, so such a pod may need a node of its own. Otherwise the
//! node is pinned when its pods do not fit in the free room of the cluster's other nodes,
//! packed by CPU, memory and pod slots (first-fit decreasing): a node this test calls
//! deletable could have been deleted. Like every oracle here it is written apart from the
//! controller's scheduler.

use std::collections::{BTreeMap, BTreeSet};

use dovetail_fakecloud::CapacityType;

use dovetail_fakecloud::FakeCloud;

use super::protection::do_not_disrupt_active;
use super::resources::{Offering, Resources, allocatable};
use super::view::{PodView, View};

/// Spot-to-spot replacement needs at least this many cheaper instance types (single node).
pub const SPOT_TO_SPOT_MIN_CHEAPER_TYPES: usize = 15;

/// A node the controller may keep whatever it costs.
#[derive(Clone, Debug, PartialEq)]
pub struct PinnedNode {
    /// Node name.
    pub node: String,
    /// Its instance type.
    pub instance_type: String,
    /// What it costs now, USD per hour.
    pub price: f64,
    /// Why Karpenter may not consolidate it.
    pub reason: String,
}

/// A live node as the packing sees it.
struct Host {
    name: String,
    instance_type: String,
    spot: bool,
    price: f64,
    nodepool: Option<String>,
    /// Allocatable minus every active pod bound to it (DaemonSet pods included).
    free: Resources,
    /// Requests of its active, non-DaemonSet pods, largest CPU first.
    movable: Vec<Resources>,
    /// Some movable pod has topology spread or pod (anti-)affinity rules.
    constrained: bool,
    do_not_disrupt: bool,
}

/// The nodes Karpenter's rules pin in place at this moment, in node-name order.
/// `offerings` are each NodePool's allowed offerings now (see [`super::resources::allowed_offerings`]), and
/// `overhead` is the DaemonSet overhead a replacement node would carry.
pub fn pinned_nodes(
    view: &View,
    pods: &[PodView],
    cloud: &FakeCloud,
    offerings: &BTreeMap<String, Vec<Offering>>,
    overhead: &Resources,
    spot_to_spot: bool,
) -> Vec<PinnedNode> {
    let pool_rule = |h: &Host| {
        let pool = h.nodepool.as_ref().and_then(|n| view.pools.get(n))?;
        pool_keeps(&pool.object)
    };
    decide(&hosts(view, pods, cloud), spot_to_spot, pool_rule, |h| cheaper_types(offerings, h, overhead))
}

/// The rules over the cluster's `hosts`: `pool_rule` says why a host's NodePool keeps its
/// nodes (if it does; see [`pool_keeps`]), `cheaper_types` counts the spot types cheaper than a host that
/// fit its pods.
fn decide(
    hosts: &[Host],
    spot_to_spot: bool,
    pool_rule: impl Fn(&Host) -> Option<PoolRule>,
    cheaper_types: impl Fn(&Host) -> usize,
) -> Vec<PinnedNode> {
    let mut out = Vec::new();
    for (i, host) in hosts.iter().enumerate() {
        let pin = |reason: String| PinnedNode {
            node: host.name.clone(),
            instance_type: host.instance_type.clone(),
            price: host.price,
            reason,
        };
        let pool = pool_rule(host);
        if host.movable.is_empty() {
            if let Some(rule) = pool.filter(|r| r.even_empty) {
                out.push(pin(rule.reason.to_string()));
            }
            continue;
        }
        if let Some(rule) = pool {
            out.push(pin(rule.reason.to_string()));
            continue;
        }
        if host.do_not_disrupt {
            out.push(pin("a do-not-disrupt pod or annotation keeps it out of consolidation".to_string()));
            continue;
        }
        let reason = if !host.spot {
            if cheaper_types(host) > 0 {
                continue;
            }
            "no cheaper instance type fits its pods, so no replacement is cheaper".to_string()
        } else if !spot_to_spot {
            "spot, and spot-to-spot consolidation is off: it may only be deleted".to_string()
        } else {
            let cheaper = cheaper_types(host);
            if cheaper >= SPOT_TO_SPOT_MIN_CHEAPER_TYPES {
                continue;
            }
            format!(
                "spot, and only {cheaper} spot types that fit its pods are cheaper (spot-to-spot needs {SPOT_TO_SPOT_MIN_CHEAPER_TYPES})"
            )
        };
        let why_not_deleted = if host.constrained {
            "and its pods carry spread or pod-affinity rules (Karpenter's simulation treats even ScheduleAnyway as required first)"
        } else {
            let others: Vec<Resources> =
                hosts.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, h)| h.free).collect();
            if fits_elsewhere(&host.movable, others) {
                continue;
            }
            "and its pods fit on no other node"
        };
        out.push(pin(format!("{reason}, {why_not_deleted}")));
    }
    out
}

/// A NodePool setting that keeps nodes out of consolidation.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PoolRule {
    reason: &'static str,
    /// It keeps empty nodes too.
    even_empty: bool,
}

/// Why a NodePool's disruption settings keep its nodes, if they do:
/// `consolidateAfter: Never` consolidates nothing, not even empty nodes, and
/// `consolidationPolicy: WhenEmpty` consolidates only empty nodes.
fn pool_keeps(pool: &serde_json::Value) -> Option<PoolRule> {
    let disruption = &pool["spec"]["disruption"];
    if disruption["consolidateAfter"] == "Never" {
        Some(PoolRule { reason: "its NodePool has consolidateAfter: Never", even_empty: true })
    } else if disruption["consolidationPolicy"] == "WhenEmpty" {
        Some(PoolRule {
            reason: "its NodePool consolidates only empty nodes (consolidationPolicy: WhenEmpty)",
            even_empty: false,
        })
    } else {
        None
    }
}

/// Live, not-deleting nodes backed by a live instance, with their free room.
fn hosts(view: &View, pods: &[PodView], cloud: &FakeCloud) -> Vec<Host> {
    let now = view.now;
    let instances: BTreeMap<&str, _> =
        view.instances.iter().filter(|i| i.live).map(|i| (i.provider_id.as_str(), i)).collect();
    let mut pods_by_node: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    for p in pods.iter().filter(|p| p.active()) {
        if let Some(n) = p.node_name.as_deref() {
            pods_by_node.entry(n).or_default().push(p);
        }
    }
    let mut hosts = Vec::new();
    for (name, node) in &view.nodes {
        if node.deleting {
            continue;
        }
        let Some(instance) = instances.get(node.provider_id.as_str()) else { continue };
        let Some(info) = cloud.catalog().get(&instance.instance_type) else { continue };
        let spot = instance.capacity_type == CapacityType::Spot;
        // Priced at the cloud's own clock, as its bill is.
        let price = if spot {
            cloud.spot_price(&info.name, &instance.zone, cloud.now()).unwrap_or(0.0)
        } else {
            info.on_demand_price.unwrap_or(0.0)
        };
        let mut used = Resources::default();
        let mut movable = Vec::new();
        let mut do_not_disrupt = node.do_not_disrupt;
        let mut constrained = false;
        for p in pods_by_node.get(name.as_str()).into_iter().flatten() {
            used.add(&p.requests);
            if !p.daemonset {
                movable.push(p.requests);
                do_not_disrupt |= do_not_disrupt_active(&p.object, now);
                constrained |= has_placement_rules(&p.object);
            }
        }
        movable.sort_by(|a, b| b.cpu.total_cmp(&a.cpu).then(b.memory.total_cmp(&a.memory)));
        hosts.push(Host {
            name: name.clone(),
            instance_type: instance.instance_type.clone(),
            spot,
            price,
            nodepool: node.nodepool.clone(),
            free: allocatable(info).minus(&used),
            movable,
            constrained,
            do_not_disrupt,
        });
    }
    hosts
}

/// Whether a pod has topology spread constraints or pod (anti-)affinity: rules under which
/// room elsewhere may not be a place it can go.
fn has_placement_rules(pod: &serde_json::Value) -> bool {
    let spec = &pod["spec"];
    spec["topologySpreadConstraints"].as_array().is_some_and(|c| !c.is_empty())
        || !spec["affinity"]["podAffinity"].is_null()
        || !spec["affinity"]["podAntiAffinity"].is_null()
}

/// Distinct instance types the node's NodePool allows, in any zone, that are cheaper than
/// the node and whose allocatable (after DaemonSet overhead) holds all its pods: spot
/// offerings for a spot node (the spot-to-spot path), any capacity type for an on-demand one.
fn cheaper_types(offerings: &BTreeMap<String, Vec<Offering>>, host: &Host, overhead: &Resources) -> usize {
    let Some(allowed) = host.nodepool.as_ref().and_then(|n| offerings.get(n)) else { return 0 };
    let mut need = Resources::default();
    for r in &host.movable {
        need.add(r);
    }
    need.add(overhead);
    let types: BTreeSet<&str> = allowed
        .iter()
        .filter(|o| !host.spot || o.capacity_type == CapacityType::Spot)
        .filter(|o| o.price < host.price && need.fits_in(&o.allocatable))
        .map(|o| o.instance_type.as_str())
        .collect();
    types.len()
}

/// First-fit decreasing of `pods` (largest CPU first) into `free` rooms.
fn fits_elsewhere(pods: &[Resources], mut free: Vec<Resources>) -> bool {
    'pods: for pod in pods {
        for room in free.iter_mut() {
            if pod.fits_in(room) {
                *room = room.minus(pod);
                continue 'pods;
            }
        }
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(cpu: f64, memory: f64, pods: f64) -> Resources {
        Resources { cpu, memory, pods }
    }

    /// A node with `pods` one-CPU pods and `free_cpu` millicores to spare (memory and pod
    /// slots plentiful).
    fn host(name: &str, spot: bool, pods: usize, free_cpu: f64) -> Host {
        Host {
            name: name.into(),
            instance_type: "m5.large".into(),
            spot,
            price: 0.05,
            nodepool: Some("default".into()),
            free: r(free_cpu, 1e12, 100.0),
            movable: vec![r(1_000.0, 1.0, 1.0); pods],
            constrained: false,
            do_not_disrupt: false,
        }
    }

    fn names(pinned: &[PinnedNode]) -> Vec<&str> {
        pinned.iter().map(|p| p.node.as_str()).collect()
    }

    fn no_pool_rule(_: &Host) -> Option<PoolRule> {
        None
    }

    #[test]
    fn a_spot_node_whose_pods_fit_elsewhere_is_never_excused() {
        // a's one pod fits in b's spare CPU: Karpenter may delete a, gate or no gate.
        let hosts = [host("a", true, 1, 0.0), host("b", true, 1, 1_500.0)];
        let pinned = decide(&hosts, false, no_pool_rule, |_| 0);
        assert_eq!(names(&pinned), ["b"], "b's pod fits nowhere, a's fits on b");
        assert!(pinned[0].reason.contains("spot-to-spot consolidation is off"), "{}", pinned[0].reason);
    }

    #[test]
    fn spot_to_spot_needs_fifteen_cheaper_types_to_replace() {
        let hosts = [host("a", true, 2, 0.0)];
        assert!(decide(&hosts, true, no_pool_rule, |_| 15).is_empty(), "15 cheaper types: replaceable");
        let pinned = decide(&hosts, true, no_pool_rule, |_| 14);
        assert_eq!(names(&pinned), ["a"]);
        assert!(pinned[0].reason.contains("only 14 spot types"), "{}", pinned[0].reason);
    }

    #[test]
    fn an_on_demand_node_is_excused_only_when_no_move_helps() {
        let hosts = [host("od", false, 3, 0.0), host("empty", true, 0, 0.0)];
        assert!(decide(&hosts, false, no_pool_rule, |_| 1).is_empty(), "one cheaper type: replaceable");
        let pinned = decide(&hosts, false, no_pool_rule, |_| 0);
        assert_eq!(names(&pinned), ["od"], "no cheaper type and no room elsewhere: a local optimum");
        assert!(pinned[0].reason.contains("no cheaper instance type"), "{}", pinned[0].reason);
        let roomy = [host("od", false, 3, 0.0), host("roomy", false, 0, 5_000.0)];
        assert!(decide(&roomy, false, no_pool_rule, |_| 0).is_empty(), "its pods fit elsewhere: deletable");
    }

    #[test]
    fn do_not_disrupt_spread_and_pool_rules_pin() {
        let mut keep = host("keep", true, 1, 0.0);
        keep.do_not_disrupt = true;
        let mut spread = host("spread", true, 1, 0.0);
        spread.constrained = true;
        let roomy = host("roomy", false, 0, 10_000.0);
        // Room exists on `roomy` for both, but a do-not-disrupt node is never a candidate,
        // and spread pods get the benefit of the doubt.
        let pinned = decide(&[keep, spread, roomy], false, no_pool_rule, |_| 0);
        assert_eq!(names(&pinned), ["keep", "spread"]);
        assert!(pinned[0].reason.contains("do-not-disrupt"), "{}", pinned[0].reason);
        assert!(pinned[1].reason.contains("spread"), "{}", pinned[1].reason);
        let when_empty = PoolRule { reason: "WhenEmpty", even_empty: false };
        let hosts = [host("od", false, 1, 0.0), host("empty", false, 0, 0.0)];
        let pinned = decide(&hosts, false, |_| Some(when_empty), |_| 0);
        assert_eq!(names(&pinned), ["od"], "a WhenEmpty pool keeps nodes with pods whatever they are, not empty ones");
        let never = PoolRule { reason: "Never", even_empty: true };
        assert_eq!(names(&decide(&hosts, false, |_| Some(never), |_| 0)), ["od", "empty"]);
    }

    #[test]
    fn when_empty_keeps_nodes_with_pods_and_never_keeps_every_node() {
        let pool = |disruption: serde_json::Value| serde_json::json!({"spec": {"disruption": disruption}});
        let when_empty = pool(serde_json::json!({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1m"}));
        assert!(pool_keeps(&when_empty).is_some_and(|r| r.reason.contains("WhenEmpty") && !r.even_empty));
        let never =
            pool(serde_json::json!({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "Never"}));
        assert!(pool_keeps(&never).is_some_and(|r| r.reason.contains("Never") && r.even_empty));
        let underutilized = pool(serde_json::json!({"consolidationPolicy": "WhenEmptyOrUnderutilized"}));
        assert_eq!(pool_keeps(&underutilized), None);
        assert_eq!(pool_keeps(&serde_json::json!({})), None, "the default policy consolidates");
    }

    #[test]
    fn pods_fit_elsewhere_only_when_every_one_finds_room() {
        let pods = [r(1_000.0, 1.0, 1.0), r(500.0, 1.0, 1.0)];
        assert!(fits_elsewhere(&pods, vec![r(1_000.0, 1.0, 1.0), r(600.0, 1.0, 1.0)]));
        assert!(fits_elsewhere(&pods, vec![r(1_500.0, 2.0, 2.0)]));
        assert!(!fits_elsewhere(&pods, vec![r(1_500.0, 2.0, 1.0)]), "pod slots count");
        assert!(!fits_elsewhere(&pods, vec![r(900.0, 5.0, 5.0), r(900.0, 5.0, 5.0)]), "no room for the 1-CPU pod");
        assert!(!fits_elsewhere(&pods, vec![]));
        assert!(fits_elsewhere(&[], vec![]));
    }
}
