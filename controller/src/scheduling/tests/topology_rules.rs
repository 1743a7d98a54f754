//! Topology spread and pod (anti-)affinity rules.

use std::collections::BTreeMap;

use super::*;
use crate::apis::labels;
use crate::scheduling::schedule;
use crate::scheduling::snapshot::{BoundPod, ExistingNode, RequirementsCache};

fn zones_of(results: &crate::scheduling::Results) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for claim in &results.new_node_claims {
        let zone = claim.requirements.get(labels::TOPOLOGY_ZONE_LABEL).and_then(|z| z.single_value());
        *counts.entry(zone.unwrap_or("?").to_owned()).or_insert(0) += claim.pods.len();
    }
    counts
}

#[test]
fn zone_spread_balances_pods_across_zones() {
    let pods = (0..7)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
            p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "web"));
            p
        })
        .collect();
    let results = schedule(&input(types(8), pods));
    assert!(results.pod_errors.is_empty());
    let counts = zones_of(&results);
    assert_eq!(counts.len(), 3, "{counts:?}");
    let (min, max) = (counts.values().min().unwrap(), counts.values().max().unwrap());
    assert!(max - min <= 1, "{counts:?}");
}

#[test]
fn zone_spread_counts_existing_pods() {
    let mut snapshot = input(
        types(8),
        (0..2)
            .map(|i| {
                let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
                p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "web"));
                p
            })
            .collect(),
    );
    snapshot.existing_nodes.push(ExistingNode {
        name: "n1".to_owned(),
        labels: BTreeMap::from([(labels::TOPOLOGY_ZONE_LABEL.to_owned(), "test-zone-1".to_owned())]),
        taints: Vec::new(),
        startup_taints: Vec::new(),
        allocatable: Resources::default(),
        capacity: Resources::default(),
        requested: Resources::default(),
        host_ports: Vec::new(),
        daemon_requests: Default::default(),
        initialized: true,
        marked_for_deletion: false,
        requirements_cache: RequirementsCache::default(),
    });
    snapshot
        .bound_pods
        .push(BoundPod { node_name: "n1".to_owned(), pod: labelled(pod("running", 100, 64), &[("app", "web")]) });
    let results = schedule(&snapshot);
    let counts = zones_of(&results);
    assert_eq!(counts.get("test-zone-1"), None, "zone 1 already has one: {counts:?}");
    assert_eq!(counts.values().sum::<usize>(), 2);
}

/// Pods this pass places again (they run on a node being deleted) are not counted where they
/// run now (core topology.go `NewTopology` excludes the pods it schedules): three pods leaving
/// a deleting node in zone 1 spread one per zone, zone 1 included.
#[test]
fn zone_spread_does_not_count_the_pods_it_is_placing() {
    let leaving: Vec<SchedulablePod> = (0..3)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
            p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "web"));
            p
        })
        .collect();
    let mut snapshot = input(types(8), leaving.clone());
    snapshot.existing_nodes.push(ExistingNode {
        name: "n1".to_owned(),
        labels: BTreeMap::from([(labels::TOPOLOGY_ZONE_LABEL.to_owned(), "test-zone-1".to_owned())]),
        taints: Vec::new(),
        startup_taints: Vec::new(),
        allocatable: Resources::default(),
        capacity: Resources::default(),
        requested: Resources::default(),
        host_ports: Vec::new(),
        daemon_requests: Default::default(),
        initialized: true,
        marked_for_deletion: true,
        requirements_cache: RequirementsCache::default(),
    });
    snapshot.bound_pods.extend(leaving.into_iter().map(|pod| BoundPod { node_name: "n1".to_owned(), pod }));
    let counts = zones_of(&schedule(&snapshot));
    assert_eq!(counts.values().copied().collect::<Vec<_>>(), vec![1, 1, 1], "{counts:?}");
}

#[test]
fn hostname_anti_affinity_puts_one_pod_per_node() {
    let pods = (0..5)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "db")]);
            p.shape.anti_affinity.push(term(labels::HOSTNAME_LABEL, "db"));
            p
        })
        .collect();
    let results = schedule(&input(types(8), pods));
    assert!(results.pod_errors.is_empty());
    assert_eq!(results.new_node_claims.len(), 5);
}

#[test]
fn inverse_anti_affinity_keeps_selected_pods_away_from_running_owners() {
    let mut snapshot = input(types(8), vec![labelled(pod("web", 100, 64), &[("app", "web")])]);
    let mut node = ExistingNode {
        name: "n1".to_owned(),
        labels: BTreeMap::from([(labels::HOSTNAME_LABEL.to_owned(), "n1".to_owned())]),
        taints: Vec::new(),
        startup_taints: Vec::new(),
        allocatable: Resources { pods: 10, ..Resources::cpu_memory(4000, 4 << 30) },
        capacity: Resources::default(),
        requested: Resources::default(),
        host_ports: Vec::new(),
        daemon_requests: Default::default(),
        initialized: true,
        marked_for_deletion: false,
        requirements_cache: RequirementsCache::default(),
    };
    node.labels.insert(labels::TOPOLOGY_ZONE_LABEL.to_owned(), "test-zone-1".to_owned());
    snapshot.existing_nodes.push(node);
    let mut owner = pod("loner", 100, 64);
    owner.shape.anti_affinity.push(term(labels::HOSTNAME_LABEL, "web"));
    snapshot.bound_pods.push(BoundPod { node_name: "n1".to_owned(), pod: owner });
    let results = schedule(&snapshot);
    assert!(results.existing_node_assignments.is_empty(), "{:?}", results.existing_node_assignments);
    assert_eq!(results.new_node_claims.len(), 1);
}

#[test]
fn hostname_spread_puts_one_pod_per_node() {
    let pods = (0..4)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
            p.shape.spreads.push(spread(labels::HOSTNAME_LABEL, "web"));
            p
        })
        .collect();
    assert_eq!(schedule(&input(types(8), pods)).new_node_claims.len(), 4);
}

#[test]
fn zone_self_affinity_keeps_pods_in_one_zone() {
    let pods = (0..6)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 2000, 64), &[("app", "cache")]);
            p.shape.affinity.push(term(labels::TOPOLOGY_ZONE_LABEL, "cache"));
            p.shape.anti_affinity.push(term(labels::HOSTNAME_LABEL, "cache"));
            p
        })
        .collect();
    let results = schedule(&input(types(8), pods));
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
    assert_eq!(results.new_node_claims.len(), 6);
    assert_eq!(zones_of(&results).len(), 1, "{:?}", zones_of(&results));
}

#[test]
fn affinity_to_pods_that_do_not_exist_fails() {
    let mut p = pod("p", 100, 64);
    p.shape.affinity.push(term(labels::TOPOLOGY_ZONE_LABEL, "missing"));
    let results = schedule(&input(types(4), vec![p]));
    assert!(results.pod_errors["default/p"].contains("pod affinity"), "{:?}", results.pod_errors);
}

#[test]
fn schedule_anyway_spread_is_relaxed_when_it_cannot_hold() {
    // Only zone 1 is allowed by the pool; a ScheduleAnyway spread with minDomains 3 would force
    // a zero minimum and still allow one pod per zone... so use maxSkew against a pinned zone.
    let pool = node_pool(
        "one-zone",
        serde_json::json!({"template": {"spec": {"requirements": [
            {"key": labels::TOPOLOGY_ZONE_LABEL, "operator": "In", "values": ["test-zone-1"]}
        ]}}}),
    );
    let pods: Vec<_> = (0..3)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
            let mut s = spread(labels::TOPOLOGY_ZONE_LABEL, "web");
            s.schedule_anyway = true;
            s.min_domains = Some(3);
            p.shape.spreads.push(s);
            p
        })
        .collect();
    let mut snapshot = input(types(4), pods.clone());
    snapshot.node_pools = vec![pool_input(pool, types(4))];
    let results = schedule(&snapshot);
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);

    let strict: Vec<_> = pods
        .into_iter()
        .map(|mut p| {
            p.shape.spreads[0].schedule_anyway = false;
            p
        })
        .collect();
    snapshot.pods = strict;
    let results = schedule(&snapshot);
    assert_eq!(results.pod_errors.len(), 2, "minDomains 3 with one zone allows one pod: {:?}", results.pod_errors);
}

#[test]
fn capacity_type_spread_alternates_spot_and_on_demand() {
    let pods = (0..4)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
            p.shape.spreads.push(spread(labels::CAPACITY_TYPE_LABEL, "web"));
            p
        })
        .collect();
    let results = schedule(&input(types(8), pods));
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
    let mut counts = BTreeMap::new();
    for claim in &results.new_node_claims {
        let capacity_type = claim.requirements.get(labels::CAPACITY_TYPE_LABEL).and_then(|c| c.single_value());
        *counts.entry(capacity_type.unwrap_or("?").to_owned()).or_insert(0) += claim.pods.len();
    }
    assert_eq!(counts, BTreeMap::from([("on-demand".to_owned(), 2), ("spot".to_owned(), 2)]));
}

#[test]
fn spread_ignores_nodes_outside_the_pods_node_affinity_when_honored() {
    // A running matching pod in zone 1 on a node the spreading pods' affinity excludes does
    // not count, so zone 1 is not penalised.
    let mut snapshot = input(
        types(8),
        (0..3)
            .map(|i| {
                let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
                p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "web"));
                p.shape.node_selector = requirements(serde_json::json!([
                    {"key": "pool", "operator": "DoesNotExist"}
                ]));
                p
            })
            .collect(),
    );
    snapshot.existing_nodes.push(ExistingNode {
        name: "other".to_owned(),
        labels: BTreeMap::from([
            (labels::TOPOLOGY_ZONE_LABEL.to_owned(), "test-zone-1".to_owned()),
            ("pool".to_owned(), "other".to_owned()),
        ]),
        taints: Vec::new(),
        startup_taints: Vec::new(),
        allocatable: Resources::default(),
        capacity: Resources::default(),
        requested: Resources::default(),
        host_ports: Vec::new(),
        daemon_requests: Default::default(),
        initialized: true,
        marked_for_deletion: false,
        requirements_cache: RequirementsCache::default(),
    });
    snapshot
        .bound_pods
        .push(BoundPod { node_name: "other".to_owned(), pod: labelled(pod("running", 100, 64), &[("app", "web")]) });
    let results = schedule(&snapshot);
    let counts = zones_of(&results);
    assert_eq!(counts.values().copied().collect::<Vec<_>>(), [1, 1, 1], "{counts:?}");

    // With nodeAffinityPolicy Ignore the running pod counts: two new pods avoid zone 1.
    snapshot.pods.truncate(2);
    for p in &mut snapshot.pods {
        p.shape.spreads[0].honor_node_affinity = false;
    }
    let counts = zones_of(&schedule(&snapshot));
    assert_eq!(counts.get("test-zone-1"), None, "{counts:?}");
}

/// Core `topologygroup.go` `nextDomainAffinity` l. 364-366: a self-selecting hostname
/// affinity bootstraps one node only; once that node holds matching pods, pods that no longer
/// fit on it do not open a second node (they are unschedulable, as in core's "first empty
/// topology domain only" test).
#[test]
fn self_affinity_opens_only_the_first_empty_domain() {
    let pods = (0..4)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 600, 64), &[("app", "web")]);
            p.shape.affinity.push(term(labels::HOSTNAME_LABEL, "web"));
            p
        })
        .collect();
    // One 1-vCPU type: a node holds one 600m pod.
    let results = schedule(&input(types(1), pods));
    assert_eq!(results.new_node_claims.len(), 1);
    assert_eq!(results.new_node_claims[0].pods.len(), 1);
    assert_eq!(results.pod_errors.len(), 3, "{:?}", results.pod_errors);
}

/// Core `topology.go` `updateInverseAntiAffinity` l. 328-335 tracks only required
/// anti-affinity: pods a *preferred* anti-affinity term selects may share its zone.
#[test]
fn preferred_anti_affinity_keeps_no_one_away() {
    let mut pods: Vec<SchedulablePod> = ["test-zone-1", "test-zone-2", "test-zone-3"]
        .iter()
        .map(|zone| {
            let mut p = pod(&format!("owner-{zone}"), 100, 64);
            p.shape.node_selector = requirements(serde_json::json!([
                {"key": labels::TOPOLOGY_ZONE_LABEL, "operator": "In", "values": [zone]}]));
            p.shape.preferred_anti_affinity.push((10, term(labels::TOPOLOGY_ZONE_LABEL, "web")));
            p
        })
        .collect();
    pods.push(labelled(pod("selected", 100, 64), &[("app", "web")]));
    let results = schedule(&input(types(8), pods));
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
}

/// Core passes a pod's `StrictRequirements` to the topology (`nodeclaim.go` l. 201): a
/// preferred zone does not narrow the domains a zonal spread balances over (2/2/2, not 3/3).
#[test]
fn a_preferred_node_affinity_does_not_narrow_a_spread() {
    let pods = (0..6)
        .map(|i| {
            let mut p = labelled(pod(&format!("p{i}"), 100, 64), &[("app", "web")]);
            p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "web"));
            let preferred = requirements(serde_json::json!([
                {"key": labels::TOPOLOGY_ZONE_LABEL, "operator": "In", "values": ["test-zone-1", "test-zone-2"]}]));
            p.shape.preferred_node_terms.push((1, preferred));
            p
        })
        .collect();
    let results = schedule(&input(types(8), pods));
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
    let counts = zones_of(&results);
    assert_eq!(counts.values().copied().collect::<Vec<_>>(), [2, 2, 2], "{counts:?}");
}

/// A spread tie between min-count zones goes to a zone the new claim can launch in (core's
/// random pick reaches it on a later pass); a single min-count zone is kept even when it cannot
/// launch, as in core, and without a `launchable` test the first in name order wins.
#[test]
fn spread_tie_prefers_a_launchable_zone_but_never_leaves_the_minimum() {
    use crate::scheduling::topology::Topology;
    let zone = labels::TOPOLOGY_ZONE_LABEL;
    let mut p = labelled(pod("p", 100, 64), &[("app", "web")]);
    p.shape.spreads.push(spread(zone, "web"));
    let mut topology = Topology::new();
    for z in ["zone-a", "zone-b", "zone-c"] {
        topology.register_domain(zone, z);
    }
    let pod_reqs = Requirements::new();
    let claim = Requirements::new();
    let picked = |topology: &mut Topology, launchable: Option<crate::scheduling::topology::Launchable>| {
        let reqs = topology.add_requirements(0, &p.shape, &pod_reqs, &claim, launchable).expect("a domain");
        reqs.get(zone).and_then(|r| r.single_value()).expect("one zone").to_owned()
    };
    let not_a = |_: &str, d: &str| d != "zone-a";
    let none = |_: &str, _: &str| false;
    assert_eq!(picked(&mut topology, None), "zone-a");
    assert_eq!(picked(&mut topology, Some(&not_a)), "zone-b");
    assert_eq!(picked(&mut topology, Some(&none)), "zone-a", "no launchable tie: name order");
    // zone-b and zone-c hold a pod each: zone-a is the only minimum, launchable or not.
    let mut on = |z: &str| {
        let node = requirements(serde_json::json!([{"key": zone, "operator": "In", "values": [z]}]));
        topology.record(0, &p.shape, &node, &[]);
    };
    on("zone-b");
    on("zone-c");
    assert_eq!(picked(&mut topology, Some(&not_a)), "zone-a");
}
