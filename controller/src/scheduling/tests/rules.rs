//! One test per scheduling rule of karpenter-behaviour.md §2.3–2.4.

use std::collections::BTreeMap;

use super::*;
use crate::apis::labels;
use crate::scheduling::instance_selection::{MinValuesPolicy, truncate_instance_types};
use crate::scheduling::resources::GIB;
use crate::scheduling::snapshot::{ExistingNode, PreferencePolicy, RequirementsCache};
use crate::scheduling::taints::{Taint, TaintEffect, Toleration};
use crate::scheduling::{Requirement, schedule};

#[test]
fn identical_pods_pack_into_one_claim_with_the_cheapest_type_first() {
    let pods = (0..10).map(|i| pod(&format!("p{i}"), 500, 128)).collect();
    let results = schedule(&input(types(16), pods));
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
    assert_eq!(results.new_node_claims.len(), 1);
    let claim = &results.new_node_claims[0];
    assert_eq!(claim.pods.len(), 10);
    assert!(claim.instance_type_options.iter().all(|it| it.allocatable().cpu_milli >= 5000));
    let prices: Vec<f64> = claim
        .instance_type_options
        .iter()
        .map(|it| it.cheapest_offering(&claim.requirements).map_or(f64::INFINITY, |o| o.price))
        .collect();
    assert!(prices.windows(2).all(|w| w[0] <= w[1]), "cheapest first: {prices:?}");
    let names = claim.node_claim_requirements();
    let names = names.get(labels::INSTANCE_TYPE_LABEL).unwrap();
    assert_eq!(names.values().len(), claim.instance_type_options.len());
    assert!(!claim.requirements.has(labels::HOSTNAME_LABEL), "placeholder hostname is not a requirement");
}

#[test]
fn a_single_small_pod_gets_the_cheapest_type() {
    let results = schedule(&input(types(16), vec![pod("p", 100, 64)]));
    assert_eq!(results.new_node_claims[0].instance_type_options[0].name, "c5.1xlarge");
}

#[test]
fn pods_are_packed_largest_first() {
    // Large pods are placed before small ones regardless of input order, so the small pods
    // fill the gaps of the claim the large pods opened.
    let mut pods: Vec<_> = (0..4).map(|i| pod(&format!("small{i}"), 100, 64)).collect();
    pods.push(pod("big", 3000, 1024));
    let results = schedule(&input(types(8), pods));
    assert_eq!(results.new_node_claims.len(), 1);
    assert_eq!(results.new_node_claims[0].pods[0], "default/big");
}

fn existing_node(name: &str, cpu_milli: i64, memory: i64) -> ExistingNode {
    ExistingNode {
        name: name.to_owned(),
        labels: BTreeMap::from([
            (labels::TOPOLOGY_ZONE_LABEL.to_owned(), "test-zone-1".to_owned()),
            (labels::NODE_POOL_LABEL.to_owned(), "default".to_owned()),
            (labels::HOSTNAME_LABEL.to_owned(), name.to_owned()),
        ]),
        taints: Vec::new(),
        startup_taints: Vec::new(),
        allocatable: Resources { pods: 110, ..Resources::cpu_memory(cpu_milli, memory) },
        capacity: Resources { pods: 110, ..Resources::cpu_memory(cpu_milli, memory) },
        requested: Resources::default(),
        host_ports: Vec::new(),
        daemon_requests: Default::default(),
        initialized: true,
        marked_for_deletion: false,
        requirements_cache: RequirementsCache::default(),
    }
}

#[test]
fn existing_capacity_is_used_before_new_claims() {
    let mut snapshot = input(types(8), (0..4).map(|i| pod(&format!("p{i}"), 1000, 256)).collect());
    snapshot.existing_nodes.push(existing_node("node-a", 3000, 4 * GIB));
    let results = schedule(&snapshot);
    assert_eq!(results.existing_node_assignments["node-a"].len(), 3);
    assert_eq!(results.new_node_claims.len(), 1);
    assert_eq!(results.new_node_claims[0].pods.len(), 1);
}

#[test]
fn deleting_nodes_take_no_pods_and_initialized_nodes_go_first() {
    let mut snapshot = input(types(8), vec![pod("p", 1000, 256)]);
    let mut deleting = existing_node("a-deleting", 8000, 8 * GIB);
    deleting.marked_for_deletion = true;
    let mut uninitialized = existing_node("b-uninitialized", 8000, 8 * GIB);
    uninitialized.initialized = false;
    snapshot.existing_nodes = vec![deleting, uninitialized, existing_node("c-ready", 8000, 8 * GIB)];
    let results = schedule(&snapshot);
    assert_eq!(results.existing_node_assignments.keys().collect::<Vec<_>>(), ["c-ready"]);
}

#[test]
fn node_selector_operators_narrow_the_instance_types() {
    let mut big = pod("big", 100, 64);
    big.shape.node_selector = requirements(serde_json::json!([
        {"key": labels::INSTANCE_CPU_LABEL, "operator": "Gte", "values": ["8"]},
        {"key": labels::INSTANCE_CPU_LABEL, "operator": "Lt", "values": ["12"]},
        {"key": labels::INSTANCE_CATEGORY_LABEL, "operator": "NotIn", "values": ["r"]},
        {"key": labels::CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}
    ]));
    let results = schedule(&input(types(16), vec![big]));
    let claim = &results.new_node_claims[0];
    let mut names: Vec<&str> = claim.instance_type_options.iter().map(|it| it.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["c5.10xlarge", "m5.11xlarge", "m5.8xlarge"]);
    assert_eq!(claim.requirements.get(labels::CAPACITY_TYPE_LABEL).unwrap().single_value(), Some("on-demand"));
}

#[test]
fn custom_labels_must_come_from_the_node_pool() {
    let mut team_pod = pod("p", 100, 64);
    team_pod.shape.node_selector = Requirements::from_labels(&BTreeMap::from([("team".to_owned(), "a".to_owned())]));
    let results = schedule(&input(types(4), vec![team_pod.clone()]));
    let error = &results.pod_errors["default/p"];
    assert!(error.contains(r#"label "team" does not have known values"#), "{error}");

    let mut snapshot = input(types(4), vec![team_pod]);
    snapshot.node_pools = vec![pool_input(
        node_pool("team-a", serde_json::json!({"template": {"metadata": {"labels": {"team": "a"}}}})),
        types(4),
    )];
    let results = schedule(&snapshot);
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
    assert_eq!(results.new_node_claims[0].requirements.get("team").unwrap().single_value(), Some("a"));
}

/// A pod may select the node class label, which every claim of the pool carries (core
/// `nodeclaimtemplate.go` l. 79-84 makes the nodepool and node class labels requirements);
/// a pod selecting another class finds no pool.
#[test]
fn pods_may_select_the_node_class_label() {
    let selecting = |class: &str| {
        let mut p = pod("p", 100, 64);
        p.shape.node_selector =
            Requirements::from_labels(&BTreeMap::from([(labels::EC2_NODE_CLASS_LABEL.to_owned(), class.to_owned())]));
        p
    };
    let results = schedule(&input(types(4), vec![selecting("default")]));
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
    let class = results.new_node_claims[0].requirements.get(labels::EC2_NODE_CLASS_LABEL).unwrap();
    assert_eq!(class.single_value(), Some("default"));

    let results = schedule(&input(types(4), vec![selecting("gpu-class")]));
    assert!(results.new_node_claims.is_empty());
    assert!(results.pod_errors.contains_key("default/p"), "{:?}", results.pod_errors);
}

#[test]
fn pods_must_tolerate_node_pool_taints() {
    let tainted = node_pool(
        "gpu",
        serde_json::json!({"template": {"spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}}}),
    );
    let mut snapshot = input(types(4), vec![pod("plain", 100, 64)]);
    snapshot.node_pools = vec![pool_input(tainted, types(4))];
    let results = schedule(&snapshot);
    assert!(results.pod_errors["default/plain"].contains("did not tolerate taint gpu=true:NoSchedule"));

    let mut tolerant = pod("tolerant", 100, 64);
    tolerant.shape.tolerations.push(Toleration {
        key: "gpu".to_owned(),
        exists: true,
        value: String::new(),
        effect: Some(TaintEffect::NoSchedule),
    });
    snapshot.pods = vec![tolerant];
    assert!(schedule(&snapshot).pod_errors.is_empty());
}

#[test]
fn startup_taints_need_no_toleration() {
    let pool = node_pool(
        "startup",
        serde_json::json!({"template": {"spec": {"startupTaints": [{"key": "cni", "effect": "NoSchedule"}]}}}),
    );
    let mut snapshot = input(types(4), vec![pod("p", 100, 64)]);
    snapshot.node_pools = vec![pool_input(pool, types(4))];
    assert!(schedule(&snapshot).pod_errors.is_empty());
}

#[test]
fn higher_weight_pools_are_tried_first_and_equal_weights_by_name_descending() {
    let mut snapshot = input(types(4), vec![pod("p", 100, 64)]);
    snapshot.node_pools = vec![
        pool_input(node_pool("a", serde_json::json!({})), types(4)),
        pool_input(node_pool("b", serde_json::json!({})), types(4)),
        pool_input(node_pool("heavy", serde_json::json!({"weight": 10})), types(4)),
    ];
    assert_eq!(schedule(&snapshot).new_node_claims[0].node_pool, "heavy");
    snapshot.node_pools.pop();
    assert_eq!(schedule(&snapshot).new_node_claims[0].node_pool, "b");
}

#[test]
fn node_pool_limits_cap_planned_capacity_pessimistically() {
    // Each 3-CPU pod needs a claim of its own only if anti-affinity forces it; use host ports.
    let mut pods = Vec::new();
    for i in 0..5 {
        let mut p = pod(&format!("p{i}"), 3000, 256);
        p.shape.host_ports.push(crate::scheduling::HostPort {
            ip: String::new(),
            protocol: "TCP".to_owned(),
            port: 80,
        });
        pods.push(p);
    }
    let mut snapshot = input(types(8), pods);
    snapshot.node_pools = vec![pool_input(node_pool("limited", serde_json::json!({"limits": {"cpu": 16}})), types(8))];
    let results = schedule(&snapshot);
    // A 3-CPU pod can land on 4..8 vCPU types: the first claim books 8 CPUs (the largest
    // option), the second the 8 left, and then nothing fits.
    assert_eq!(results.new_node_claims.len(), 2);
    assert_eq!(results.pod_errors.len(), 3);
    assert!(results.pod_errors.values().all(|e| e.contains("exceed limits")), "{:?}", results.pod_errors);
}

#[test]
fn node_limit_and_existing_usage_count_against_the_pool() {
    let mut snapshot = input(types(8), vec![pod("p", 7000, 256)]);
    snapshot.node_pools = vec![pool_input(node_pool("default", serde_json::json!({"limits": {"nodes": 1}})), types(8))];
    snapshot.existing_nodes.push(existing_node("full", 500, GIB));
    let results = schedule(&snapshot);
    assert!(results.new_node_claims.is_empty());
    assert!(results.pod_errors["default/p"].contains("exceed limits"));
}

/// A node marked for deletion no longer counts against the pool's limits (core schedules
/// against the `Active()` state nodes only, provisioner.go l. 411, and subtracts their
/// capacity alone, scheduler.go `updateRemainingResources`).
#[test]
fn a_node_marked_for_deletion_does_not_count_against_the_pool() {
    let mut snapshot = input(types(8), vec![pod("p", 7000, 256)]);
    snapshot.node_pools = vec![pool_input(node_pool("default", serde_json::json!({"limits": {"nodes": 1}})), types(8))];
    let mut leaving = existing_node("leaving", 500, GIB);
    leaving.marked_for_deletion = true;
    snapshot.existing_nodes.push(leaving);
    let results = schedule(&snapshot);
    assert_eq!(results.new_node_claims.len(), 1, "{:?}", results.pod_errors);
}

#[test]
fn daemon_set_overhead_is_added_per_template_when_it_would_run_there() {
    let daemon = pod("ds", 1000, 512);
    let mut picky_daemon = pod("picky", 5000, 512);
    picky_daemon.shape.node_selector =
        Requirements::from_labels(&BTreeMap::from([(labels::ARCH_LABEL.to_owned(), "arm64".to_owned())]));
    let mut snapshot = input(types(8), vec![pod("p", 500, 128)]);
    snapshot.daemon_set_pods = vec![daemon, picky_daemon];
    let results = schedule(&snapshot);
    let claim = &results.new_node_claims[0];
    assert_eq!(claim.requests.cpu_milli, 1500, "arm64-only daemon does not run on amd64 pools");
    assert!(claim.instance_type_options.iter().all(|it| it.allocatable().cpu_milli >= 1500));
}

#[test]
fn preferred_node_affinity_is_relaxed_when_unsatisfiable() {
    let mut p = pod("p", 100, 64);
    p.shape.preferred_node_terms.push((
        10,
        requirements(
            serde_json::json!([{"key": labels::TOPOLOGY_ZONE_LABEL, "operator": "In", "values": ["nowhere"]}]),
        ),
    ));
    p.shape.preferred_node_terms.push((
        5,
        requirements(
            serde_json::json!([{"key": labels::TOPOLOGY_ZONE_LABEL, "operator": "In", "values": ["test-zone-3"]}]),
        ),
    ));
    let results = schedule(&input(types(4), vec![p]));
    assert!(results.pod_errors.is_empty());
    let zone = results.new_node_claims[0].requirements.get(labels::TOPOLOGY_ZONE_LABEL).unwrap();
    assert_eq!(zone.single_value(), Some("test-zone-3"), "heaviest dropped first, then the next one holds");
}

#[test]
fn required_node_affinity_or_terms_are_tried_in_order() {
    let mut p = pod("p", 100, 64);
    p.shape.required_node_terms = vec![
        requirements(serde_json::json!([{"key": labels::ARCH_LABEL, "operator": "In", "values": ["arm64"]}])),
        requirements(
            serde_json::json!([{"key": labels::TOPOLOGY_ZONE_LABEL, "operator": "In", "values": ["test-zone-2"]}]),
        ),
    ];
    let results = schedule(&input(types(4), vec![p]));
    assert!(results.pod_errors.is_empty());
    assert!(results.new_node_claims[0].requirements.allows(labels::TOPOLOGY_ZONE_LABEL, "test-zone-2"));
    assert!(!results.new_node_claims[0].requirements.allows(labels::TOPOLOGY_ZONE_LABEL, "test-zone-1"));
}

#[test]
fn preferences_are_dropped_up_front_under_the_ignore_policy() {
    let mut p = pod("p", 100, 64);
    p.shape.preferred_node_terms.push((
        10,
        requirements(
            serde_json::json!([{"key": labels::TOPOLOGY_ZONE_LABEL, "operator": "In", "values": ["test-zone-3"]}]),
        ),
    ));
    let mut snapshot = input(types(4), vec![p]);
    snapshot.options.preference_policy = PreferencePolicy::Ignore;
    let results = schedule(&snapshot);
    assert!(results.new_node_claims[0].requirements.allows(labels::TOPOLOGY_ZONE_LABEL, "test-zone-1"));
}

#[test]
fn prefer_no_schedule_taints_are_tolerated_last_and_only_when_a_pool_has_one() {
    let pool = node_pool(
        "soft",
        serde_json::json!({"template": {"spec": {"taints": [{"key": "soft", "effect": "PreferNoSchedule"}]}}}),
    );
    let mut snapshot = input(types(4), vec![pod("p", 100, 64)]);
    snapshot.node_pools = vec![pool_input(pool, types(4))];
    assert!(schedule(&snapshot).pod_errors.is_empty());
}

#[test]
fn host_ports_conflict_within_a_claim() {
    let mut pods = Vec::new();
    for i in 0..3 {
        let mut p = pod(&format!("p{i}"), 100, 64);
        p.shape.host_ports.push(crate::scheduling::HostPort {
            ip: String::new(),
            protocol: "TCP".to_owned(),
            port: 443,
        });
        pods.push(p);
    }
    assert_eq!(schedule(&input(types(4), pods)).new_node_claims.len(), 3);
}

fn family_types() -> Vec<std::sync::Arc<crate::cloudprovider::InstanceType>> {
    ["c5", "m5", "r5"]
        .iter()
        .flat_map(|family| {
            [2, 4].map(|vcpu| {
                let mut it = fake::instance_type(&family[..1], vcpu, vcpu * 4, "amd64");
                it.requirements.remove(labels::INSTANCE_FAMILY_LABEL);
                it.requirements.add(labels::INSTANCE_FAMILY_LABEL, Requirement::in_values([(*family).to_owned()]));
                std::sync::Arc::new(it)
            })
        })
        .collect()
}

#[test]
fn min_values_strict_skips_the_pool_and_best_effort_relaxes() {
    let pool = |min: i64| {
        node_pool(
            "flexible",
            serde_json::json!({"template": {"spec": {"requirements": [
                {"key": labels::INSTANCE_FAMILY_LABEL, "operator": "Exists", "minValues": min}
            ]}}}),
        )
    };
    let mut snapshot = input(family_types(), vec![pod("p", 100, 64)]);
    snapshot.node_pools = vec![pool_input(pool(3), family_types())];
    let results = schedule(&snapshot);
    assert!(results.pod_errors.is_empty());
    assert!(!results.new_node_claims[0].min_values_relaxed);

    // A pod needing 3 CPUs leaves one type per family; family NotIn r5 leaves two families.
    let mut narrow = pod("narrow", 3000, 64);
    narrow.shape.node_selector = requirements(
        serde_json::json!([{"key": labels::INSTANCE_FAMILY_LABEL, "operator": "NotIn", "values": ["r5"]}]),
    );
    snapshot.pods = vec![narrow];
    let results = schedule(&snapshot);
    assert!(results.pod_errors["default/narrow"].contains("minValues"), "{:?}", results.pod_errors);

    snapshot.options.min_values_policy = MinValuesPolicy::BestEffort;
    let results = schedule(&snapshot);
    assert!(results.pod_errors.is_empty());
    assert!(results.new_node_claims[0].min_values_relaxed);

    snapshot.node_pools = vec![pool_input(pool(4), family_types())];
    snapshot.options.min_values_policy = MinValuesPolicy::Strict;
    let results = schedule(&snapshot);
    assert!(results.node_pool_errors["flexible"].contains("minValues"));
}

#[test]
fn truncation_keeps_the_cheapest_and_rechecks_min_values() {
    let all = types(30);
    let mut min_categories = Requirements::new();
    let mut any_category = Requirement::any();
    any_category.min_values = Some(3);
    min_categories.add(labels::INSTANCE_CATEGORY_LABEL, any_category);
    let (kept, relaxed) = truncate_instance_types(&all, &min_categories, 6, MinValuesPolicy::Strict).unwrap();
    assert_eq!(kept.len(), 6);
    assert!(!relaxed);
    assert_eq!(kept[0].name, "c5.1xlarge");
    let error = truncate_instance_types(&all, &min_categories, 2, MinValuesPolicy::Strict).unwrap_err();
    assert!(error.contains("wanted 3"), "{error}");
    assert!(truncate_instance_types(&all, &min_categories, 2, MinValuesPolicy::BestEffort).unwrap().1);

    let results = schedule(&input(types(700), vec![pod("p", 100, 64)]));
    let claim = &results.new_node_claims[0];
    assert_eq!(claim.instance_type_options.len(), crate::scheduling::MAX_INSTANCE_TYPES_ON_CLAIM);
    assert_eq!(claim.launch_options(MinValuesPolicy::Strict).unwrap().0.len(), 60);
}

#[test]
fn existing_node_taints_and_labels_are_checked() {
    let mut snapshot = input(types(4), vec![pod("p", 100, 64)]);
    let mut node = existing_node("tainted", 4000, 4 * GIB);
    node.taints.push(Taint::new("dedicated", "x", TaintEffect::NoSchedule));
    snapshot.existing_nodes.push(node);
    let results = schedule(&snapshot);
    assert!(results.existing_node_assignments.is_empty());
    assert_eq!(results.new_node_claims.len(), 1);
}

#[test]
fn the_same_snapshot_always_gives_the_same_plan() {
    let pods: Vec<_> = (0..200)
        .map(|i| {
            let p = labelled(pod(&format!("p{i}"), 100 + (i % 7) * 150, 64 + (i % 5) * 300), &[("app", "web")]);
            if i % 2 == 0 {
                let mut p = p;
                p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "web"));
                p
            } else {
                p
            }
        })
        .collect();
    let snapshot = input(types(40), pods);
    assert_eq!(schedule(&snapshot), schedule(&snapshot));
}
