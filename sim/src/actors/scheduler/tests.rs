//! Scheduler tests: one group per filter, scoring, messages, and property tests against a
//! naive from-scratch checker.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    NodeSpec, NodeStatus, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity, PodSpec, PreferredSchedulingTerm,
    ResourceRequirements, Taint, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

fn q(s: &str) -> Quantity {
    Quantity(s.to_string())
}

fn node(name: &str, zone: &str, cpu: &str, memory: &str, pods: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(ZONE.to_string(), zone.to_string()), (HOST.to_string(), name.to_string())])),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_string(), q(cpu)),
                ("memory".to_string(), q(memory)),
                ("pods".to_string(), q(pods)),
                ("ephemeral-storage".to_string(), q("20Gi")),
            ])),
            ..Default::default()
        }),
    }
}

fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.to_string()),
        effect: effect.into(),
        time_added: None,
    }
}

fn with_taint(mut n: Node, t: Taint) -> Node {
    n.spec.get_or_insert_with(Default::default).taints.get_or_insert_with(Vec::new).push(t);
    n
}

fn with_label(mut n: Node, k: &str, v: &str) -> Node {
    n.metadata.labels.get_or_insert_with(BTreeMap::new).insert(k.into(), v.into());
    n
}

fn pod(name: &str, cpu: &str, memory: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_string(), q(cpu)), ("memory".to_string(), q(memory))])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn spec(p: &mut Pod) -> &mut PodSpec {
    p.spec.as_mut().unwrap()
}

fn selector(app: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
        match_expressions: None,
    }
}

fn scheduler(nodes: &[Node]) -> Scheduler {
    let mut s = Scheduler::new(SchedulerConfig::default());
    for n in nodes {
        s.cache_mut().upsert_node(n);
    }
    s
}

fn rng() -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(7)
}

/// Schedules and assumes; returns the node or the failure message.
fn place(s: &mut Scheduler, p: &Pod, r: &mut ChaCha8Rng) -> Result<String, String> {
    match s.schedule(p, r) {
        Ok(res) => {
            s.assume(p, &res.node);
            Ok(res.node)
        }
        Err(e) => Err(e.message()),
    }
}

// ---------- NodeResourcesFit ----------

#[test]
fn pod_larger_than_any_node_is_unresolvable_insufficient_cpu() {
    let mut s = scheduler(&[node("a", "z1", "2", "4Gi", "10"), node("b", "z1", "2", "4Gi", "10")]);
    let err = place(&mut s, &pod("p", "3", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 \
         Preemption is not helpful for scheduling."
    );
}

#[test]
fn full_nodes_report_insufficient_resources_and_no_victims() {
    let mut s = scheduler(&[node("a", "z1", "2", "4Gi", "10")]);
    let mut r = rng();
    place(&mut s, &pod("filler", "1500m", "3Gi"), &mut r).unwrap();
    let err = place(&mut s, &pod("p", "1", "2Gi"), &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 nodes \
         are available: 1 No preemption victims found for incoming pod."
    );
}

#[test]
fn preemption_dry_run_reports_what_still_fails_without_lower_priority_pods() {
    let bound = |name: &str, cpu: &str, memory: &str, priority: i32, node: &str| {
        let mut p = pod(name, cpu, memory);
        spec(&mut p).priority = Some(priority);
        spec(&mut p).node_name = Some(node.into());
        p
    };
    let mut s = scheduler(&[node("a", "z1", "2", "4Gi", "10"), node("b", "z1", "2", "4Gi", "10")]);
    s.cache_mut().upsert_pod(&bound("low", "500m", "3Gi", -10, "a"));
    s.cache_mut().upsert_pod(&bound("filler", "1500m", "3Gi", 100, "b"));
    let mut r = rng();
    // On `a`, evicting `low` would make room: real kube-scheduler would preempt there.
    let mut high = pod("high", "1800m", "3500Mi");
    spec(&mut high).priority = Some(100);
    match s.schedule(&high, &mut r) {
        Err(SchedulingFailure::Unfit(e)) => {
            assert!(e.preemption_might_help);
            assert!(
                e.to_string().ends_with(
                    "preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 \
                     No preemption victims found for incoming pod."
                ),
                "{e}"
            );
        }
        other => panic!("expected a FitError, got {other:?}"),
    }
    // With a higher-priority pod also on `a`, evicting `low` is not enough: the dry run reports
    // what still fails.
    s.cache_mut().upsert_pod(&bound("mid", "300m", "500Mi", 100, "a"));
    match s.schedule(&high, &mut r) {
        Err(SchedulingFailure::Unfit(e)) => {
            assert!(!e.preemption_might_help);
            assert!(
                e.to_string().ends_with(
                    "preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 No preemption victims \
                     found for incoming pod."
                ),
                "{e}"
            );
        }
        other => panic!("expected a FitError, got {other:?}"),
    }
}

#[test]
fn pod_count_limit_says_too_many_pods() {
    let mut s = scheduler(&[node("a", "z1", "8", "8Gi", "2")]);
    let mut r = rng();
    place(&mut s, &pod("p1", "10m", "1Mi"), &mut r).unwrap();
    place(&mut s, &pod("p2", "10m", "1Mi"), &mut r).unwrap();
    let err = place(&mut s, &pod("p3", "10m", "1Mi"), &mut r).unwrap_err();
    assert!(err.starts_with("0/1 nodes are available: 1 Too many pods."), "{err}");
}

#[test]
fn extended_resources_must_be_allocatable() {
    let gpu_node = {
        let mut n = node("gpu", "z1", "8", "8Gi", "10");
        n.status.as_mut().unwrap().allocatable.as_mut().unwrap().insert("nvidia.com/gpu".into(), q("1"));
        n
    };
    let mut s = scheduler(&[node("cpu", "z1", "8", "8Gi", "10"), gpu_node]);
    let mut p = pod("p", "1", "1Gi");
    spec(&mut p).containers[0]
        .resources
        .as_mut()
        .unwrap()
        .requests
        .as_mut()
        .unwrap()
        .insert("nvidia.com/gpu".into(), q("1"));
    let mut r = rng();
    assert_eq!(place(&mut s, &p, &mut r), Ok("gpu".to_string()));
    let mut p2 = p.clone();
    p2.metadata.name = Some("p2".into());
    let err = place(&mut s, &p2, &mut r).unwrap_err();
    assert!(err.starts_with("0/2 nodes are available: 2 Insufficient nvidia.com/gpu."), "{err}");
}

// ---------- NodeUnschedulable, NodeName ----------

#[test]
fn cordoned_nodes_take_only_pods_tolerating_unschedulable() {
    let mut cordoned = node("a", "z1", "2", "4Gi", "10");
    cordoned.spec.as_mut().unwrap().unschedulable = Some(true);
    let mut s = scheduler(&[cordoned]);
    let mut r = rng();
    let err = place(&mut s, &pod("p", "1", "1Gi"), &mut r).unwrap_err();
    assert!(err.starts_with("0/1 nodes are available: 1 node(s) were unschedulable."), "{err}");
    let mut tolerant = pod("t", "1", "1Gi");
    spec(&mut tolerant).tolerations = Some(vec![Toleration {
        key: Some("node.kubernetes.io/unschedulable".into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }]);
    assert_eq!(place(&mut s, &tolerant, &mut r), Ok("a".to_string()));
}

#[test]
fn node_name_filter_rejects_other_nodes() {
    let mut p = pod("p", "1", "1Gi");
    spec(&mut p).node_name = Some("b".into());
    let facts = PodFacts::new(&p);
    let a = node_info::NodeInfo::new(&node("a", "z1", "2", "4Gi", "10"));
    let b = node_info::NodeInfo::new(&node("b", "z1", "2", "4Gi", "10"));
    assert_eq!(
        node_name::filter(&facts, &a).unwrap().reasons,
        vec!["node(s) didn't match the requested node name".to_string()]
    );
    assert!(node_name::filter(&facts, &b).is_none());
}

// ---------- TaintToleration and readiness ----------

#[test]
fn brief_example_message_with_unregistered_taints() {
    let mut s = scheduler(&[
        node("a", "z1", "1", "4Gi", "10"),
        with_taint(node("b", "z1", "8", "8Gi", "10"), taint("karpenter.sh/unregistered", "", "NoExecute")),
        with_taint(node("c", "z1", "8", "8Gi", "10"), taint("karpenter.sh/unregistered", "", "NoExecute")),
    ]);
    let err = place(&mut s, &pod("p", "2", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint \
         {karpenter.sh/unregistered: }. preemption: 0/3 nodes are available: 3 Preemption is not \
         helpful for scheduling."
    );
}

#[test]
fn not_ready_and_uninitialized_nodes_are_skipped_through_their_taints() {
    let mut s = scheduler(&[
        with_taint(node("nr", "z1", "8", "8Gi", "10"), taint("node.kubernetes.io/not-ready", "", "NoSchedule")),
        with_taint(
            node("un", "z1", "8", "8Gi", "10"),
            taint("node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"),
        ),
        with_taint(node("ur", "z1", "8", "8Gi", "10"), taint("node.kubernetes.io/unreachable", "", "NoExecute")),
    ]);
    let err = place(&mut s, &pod("p", "1", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 1 node(s) had untolerated taint \
         {node.cloudprovider.kubernetes.io/uninitialized: true}, 1 node(s) had untolerated taint \
         {node.kubernetes.io/not-ready: }, 1 node(s) had untolerated taint \
         {node.kubernetes.io/unreachable: }. preemption: 0/3 nodes are available: 3 Preemption is \
         not helpful for scheduling."
    );
}

#[test]
fn kube_1_35_wording_hides_taints_and_adds_dra_message() {
    let mut s =
        Scheduler::new(SchedulerConfig { messages: FitMessageStyle::kube_1_35(), ..SchedulerConfig::default() });
    s.cache_mut().upsert_node(&with_taint(node("a", "z1", "8", "8Gi", "10"), taint("k", "v", "NoSchedule")));
    let err = place(&mut s, &pod("p", "1", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, \
         preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
}

#[test]
fn tolerated_taints_pass_and_prefer_no_schedule_only_scores() {
    let mut s = scheduler(&[
        with_taint(node("soft", "z1", "8", "8Gi", "10"), taint("k", "v", "PreferNoSchedule")),
        with_taint(node("hard", "z1", "8", "8Gi", "10"), taint("k", "v", "NoSchedule")),
        node("clean", "z1", "8", "8Gi", "10"),
    ]);
    let mut r = rng();
    // Without tolerations: `clean` beats `soft` on the TaintToleration score.
    for i in 0..5 {
        assert_eq!(place(&mut s, &pod(&format!("p{i}"), "10m", "1Mi"), &mut r), Ok("clean".to_string()));
    }
    let mut tolerant = pod("t", "10m", "1Mi");
    spec(&mut tolerant).tolerations = Some(vec![Toleration {
        key: Some("k".into()),
        value: Some("v".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }]);
    let placed = place(&mut s, &tolerant, &mut r).unwrap();
    assert_eq!(placed, "hard", "emptiest node it tolerates");
}

// ---------- NodeAffinity ----------

fn require(p: &mut Pod, terms: Vec<NodeSelectorTerm>) {
    spec(p).affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector { node_selector_terms: terms }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        ..Default::default()
    });
}

fn expr(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

#[test]
fn node_selector_and_required_affinity_filter_nodes() {
    let mut s = scheduler(&[
        with_label(node("small", "z1", "8", "8Gi", "10"), "cores", "2"),
        with_label(node("big", "z2", "8", "8Gi", "10"), "cores", "16"),
    ]);
    let mut r = rng();
    let mut p = pod("p", "1", "1Gi");
    require(
        &mut p,
        vec![NodeSelectorTerm { match_expressions: Some(vec![expr("cores", "Gt", &["4"])]), match_fields: None }],
    );
    assert_eq!(place(&mut s, &p, &mut r), Ok("big".to_string()));
    let mut p2 = pod("p2", "1", "1Gi");
    spec(&mut p2).node_selector = Some(BTreeMap::from([(ZONE.to_string(), "z3".to_string())]));
    let err = place(&mut s, &p2, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: \
         0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
}

#[test]
fn match_fields_on_node_name_narrow_candidates_in_prefilter() {
    let mut s = scheduler(&[
        node("a", "z1", "8", "8Gi", "10"),
        node("b", "z1", "8", "8Gi", "10"),
        node("c", "z1", "1", "8Gi", "10"),
    ]);
    let mut r = rng();
    let mut p = pod("p", "2", "1Gi");
    require(
        &mut p,
        vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![expr("metadata.name", "In", &["c"])]),
        }],
    );
    let err = place(&mut s, &p, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) \
         [NodeAffinity]. preemption: 0/3 nodes are available: 3 Preemption is not helpful for \
         scheduling."
    );
    let mut conflict = pod("x", "1", "1Gi");
    require(
        &mut conflict,
        vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![expr("metadata.name", "In", &["a"]), expr("metadata.name", "In", &["b"])]),
        }],
    );
    let err = place(&mut s, &conflict, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: pod affinity terms conflict. preemption: 0/3 nodes are available: 3 \
         Preemption is not helpful for scheduling."
    );
}

#[test]
fn preferred_node_affinity_wins_the_score() {
    let mut s =
        scheduler(&[node("a", "z1", "8", "8Gi", "10"), with_label(node("b", "z2", "8", "8Gi", "10"), "fast", "yes")]);
    let mut p = pod("p", "1", "1Gi");
    spec(&mut p).affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: None,
            preferred_during_scheduling_ignored_during_execution: Some(vec![PreferredSchedulingTerm {
                weight: 50,
                preference: NodeSelectorTerm {
                    match_expressions: Some(vec![expr("fast", "Exists", &[])]),
                    match_fields: None,
                },
            }]),
        }),
        ..Default::default()
    });
    assert_eq!(place(&mut s, &p, &mut rng()), Ok("b".to_string()));
}

// ---------- NodePorts ----------

#[test]
fn host_ports_conflict() {
    let mut s = scheduler(&[node("a", "z1", "8", "8Gi", "10")]);
    let mut r = rng();
    let with_port = |name: &str| {
        let mut p = pod(name, "10m", "1Mi");
        spec(&mut p).containers[0].ports =
            Some(vec![ContainerPort { container_port: 80, host_port: Some(8080), ..Default::default() }]);
        p
    };
    place(&mut s, &with_port("p1"), &mut r).unwrap();
    let err = place(&mut s, &with_port("p2"), &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. \
         preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
}

// ---------- PodTopologySpread ----------

fn spread(p: &mut Pod, key: &str, max_skew: i32, when: &str, min_domains: Option<i32>) {
    spec(p).topology_spread_constraints.get_or_insert_with(Vec::new).push(TopologySpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: when.into(),
        label_selector: Some(selector("web")),
        min_domains,
        ..Default::default()
    });
}

fn three_zones() -> Vec<Node> {
    (0..6).map(|i| node(&format!("n{i}"), &format!("z{}", i % 3), "8", "16Gi", "50")).collect()
}

fn zone_counts(s: &Scheduler, placed: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for n in placed {
        *out.entry(s.cache().node(n).unwrap().labels[ZONE].clone()).or_insert(0) += 1;
    }
    out
}

#[test]
fn hard_zone_spread_lands_evenly_across_three_zones() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let mut placed = Vec::new();
    for i in 0..9 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        spread(&mut p, ZONE, 1, "DoNotSchedule", None);
        placed.push(place(&mut s, &p, &mut r).unwrap());
    }
    assert!(zone_counts(&s, &placed).values().all(|&c| c == 3), "{:?}", zone_counts(&s, &placed));
}

#[test]
fn hard_spread_rejects_skewed_domains_with_the_kube_message() {
    // Only z0 has room; maxSkew 1 means the second pod cannot go there while z1 has 0.
    let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10"), node("b", "z1", "100m", "8Gi", "10")]);
    let mut r = rng();
    let mut p = pod("p0", "200m", "100Mi");
    spread(&mut p, ZONE, 1, "DoNotSchedule", None);
    assert_eq!(place(&mut s, &p, &mut r), Ok("a".to_string()));
    let mut p1 = pod("p1", "200m", "100Mi");
    spread(&mut p1, ZONE, 1, "DoNotSchedule", None);
    let err = place(&mut s, &p1, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread \
         constraints. preemption: 0/2 nodes are available: 1 No preemption victims found for \
         incoming pod, 1 Preemption is not helpful for scheduling."
    );
}

#[test]
fn min_domains_treats_missing_domains_as_empty() {
    let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10"), node("b", "z1", "8", "8Gi", "10")]);
    let mut r = rng();
    let mut placed = 0;
    for i in 0..4 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        spread(&mut p, ZONE, 1, "DoNotSchedule", Some(3));
        if place(&mut s, &p, &mut r).is_ok() {
            placed += 1;
        }
    }
    assert_eq!(placed, 2, "with 2 of 3 domains, the global minimum is 0: one pod per zone");
}

#[test]
fn nodes_without_the_topology_key_are_unresolvable_for_spread() {
    let mut no_zone = node("a", "z0", "8", "8Gi", "10");
    no_zone.metadata.labels.as_mut().unwrap().remove(ZONE);
    let mut s = scheduler(&[no_zone]);
    let mut p = pod("p", "100m", "100Mi");
    spread(&mut p, ZONE, 1, "DoNotSchedule", None);
    let err = place(&mut s, &p, &mut rng()).unwrap_err();
    assert!(
        err.starts_with(
            "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints \
             (missing required label)."
        ),
        "{err}"
    );
}

#[test]
fn soft_spread_prefers_emptier_zones() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let mut placed = Vec::new();
    for i in 0..6 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        spread(&mut p, ZONE, 1, "ScheduleAnyway", None);
        placed.push(place(&mut s, &p, &mut r).unwrap());
    }
    assert!(zone_counts(&s, &placed).values().all(|&c| c == 2), "{:?}", zone_counts(&s, &placed));
}

#[test]
fn node_taints_policy_honor_drops_tainted_domains() {
    let nodes = [
        node("a", "z0", "8", "8Gi", "10"),
        with_taint(node("b", "z1", "8", "8Gi", "10"), taint("k", "", "NoSchedule")),
    ];
    for (policy, second_fits) in [(None, false), (Some("Honor"), true)] {
        let mut s = scheduler(&nodes);
        let mut r = rng();
        for (i, expect_ok) in [(0, true), (1, second_fits)] {
            let mut p = pod(&format!("p{i}"), "100m", "100Mi");
            spread(&mut p, ZONE, 1, "DoNotSchedule", None);
            spec(&mut p).topology_spread_constraints.as_mut().unwrap()[0].node_taints_policy = policy.map(Into::into);
            assert_eq!(place(&mut s, &p, &mut r).is_ok(), expect_ok, "policy {policy:?} pod {i}");
        }
    }
}

#[test]
fn match_label_keys_count_only_the_same_revision() {
    let nodes = [node("a", "z0", "8", "8Gi", "10"), node("b", "z1", "10m", "8Gi", "10")];
    for (keys, fits) in [(None, false), (Some(vec!["pod-template-hash".to_string()]), true)] {
        let mut s = scheduler(&nodes);
        for i in 0..2 {
            let mut old = pod(&format!("old{i}"), "100m", "100Mi");
            old.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v1".into());
            spec(&mut old).node_name = Some("a".into());
            s.cache_mut().upsert_pod(&old);
        }
        let mut p = pod("new", "100m", "100Mi");
        p.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v2".into());
        spread(&mut p, ZONE, 1, "DoNotSchedule", None);
        spec(&mut p).topology_spread_constraints.as_mut().unwrap()[0].match_label_keys = keys.clone();
        assert_eq!(place(&mut s, &p, &mut rng()).is_ok(), fits, "matchLabelKeys {keys:?}");
    }
}

// ---------- InterPodAffinity ----------

fn anti(p: &mut Pod, app: &str, key: &str) {
    spec(p).affinity.get_or_insert_with(Default::default).pod_anti_affinity = Some(PodAntiAffinity {
        required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
            label_selector: Some(selector(app)),
            topology_key: key.into(),
            ..Default::default()
        }]),
        preferred_during_scheduling_ignored_during_execution: None,
    });
}

fn labelled(mut p: Pod, app: &str) -> Pod {
    p.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
    p
}

#[test]
fn hostname_anti_affinity_puts_one_replica_per_node() {
    let mut s = scheduler(&three_zones()[..3]);
    let mut r = rng();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        anti(&mut p, "web", HOST);
        nodes.push(place(&mut s, &p, &mut r).unwrap());
    }
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3);
    let mut p = pod("p3", "100m", "100Mi");
    anti(&mut p, "web", HOST);
    let err = place(&mut s, &p, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 \
         nodes are available: 3 No preemption victims found for incoming pod."
    );
}

#[test]
fn anti_affinity_match_label_keys_only_repel_the_same_revision() {
    for (keys, fits) in [(None, false), (Some(vec!["pod-template-hash".to_string()]), true)] {
        let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10")]);
        let mut old = pod("old", "100m", "100Mi");
        old.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v1".into());
        spec(&mut old).node_name = Some("a".into());
        s.cache_mut().upsert_pod(&old);
        let mut p = pod("new", "100m", "100Mi");
        p.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v2".into());
        anti(&mut p, "web", HOST);
        let terms = spec(&mut p).affinity.as_mut().unwrap().pod_anti_affinity.as_mut().unwrap();
        terms.required_during_scheduling_ignored_during_execution.as_mut().unwrap()[0].match_label_keys = keys.clone();
        assert_eq!(place(&mut s, &p, &mut rng()).is_ok(), fits, "matchLabelKeys {keys:?}");
    }
}

#[test]
fn existing_pods_anti_affinity_repels_matching_newcomers() {
    let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10")]);
    let mut r = rng();
    let mut guard = labelled(pod("guard", "100m", "100Mi"), "guard");
    anti(&mut guard, "intruder", HOST);
    place(&mut s, &guard, &mut r).unwrap();
    let err = place(&mut s, &labelled(pod("x", "100m", "100Mi"), "intruder"), &mut r).unwrap_err();
    assert!(
        err.starts_with("0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."),
        "{err}"
    );
    assert!(place(&mut s, &labelled(pod("y", "100m", "100Mi"), "friend"), &mut r).is_ok());
}

#[test]
fn required_zone_affinity_follows_the_target_and_first_pod_may_self_match() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let with_affinity = |name: &str, app: &str, target: &str| {
        let mut p = labelled(pod(name, "100m", "100Mi"), app);
        spec(&mut p).affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                    label_selector: Some(selector(target)),
                    topology_key: ZONE.into(),
                    ..Default::default()
                }]),
                preferred_during_scheduling_ignored_during_execution: None,
            }),
            ..Default::default()
        });
        p
    };
    // No "db" pod exists and the pod does not match its own term: unschedulable.
    let err = place(&mut s, &with_affinity("c0", "cache", "db"), &mut r).unwrap_err();
    assert!(err.starts_with("0/6 nodes are available: 6 node(s) didn't match pod affinity rules."), "{err}");
    // Self-affinity: the first pod goes anywhere, later ones follow its zone.
    let first = place(&mut s, &with_affinity("db0", "db", "db"), &mut r).unwrap();
    let zone = s.cache().node(&first).unwrap().labels[ZONE].clone();
    for i in 1..4 {
        let n = place(&mut s, &with_affinity(&format!("db{i}"), "db", "db"), &mut r).unwrap();
        assert_eq!(s.cache().node(&n).unwrap().labels[ZONE], zone);
    }
}

#[test]
fn preferred_pod_anti_affinity_spreads_even_when_bin_packing() {
    let mut s = Scheduler::new(SchedulerConfig {
        scoring_strategy: ScoringStrategy::MostAllocated,
        ..SchedulerConfig::default()
    });
    for n in &three_zones()[..3] {
        s.cache_mut().upsert_node(n);
    }
    let mut r = rng();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let mut p = pod(&format!("p{i}"), "1", "1Gi");
        spec(&mut p).affinity = Some(Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: None,
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    k8s_openapi::api::core::v1::WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: PodAffinityTerm {
                            label_selector: Some(selector("web")),
                            topology_key: HOST.into(),
                            ..Default::default()
                        },
                    },
                ]),
            }),
            ..Default::default()
        });
        nodes.push(place(&mut s, &p, &mut r).unwrap());
    }
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3, "one per node despite MostAllocated");
}

#[test]
fn preferred_pod_affinity_pulls_pods_next_to_their_target() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let target = place(&mut s, &labelled(pod("db", "4", "8Gi"), "db"), &mut r).unwrap();
    let zone = s.cache().node(&target).unwrap().labels[ZONE].clone();
    for i in 0..3 {
        let mut p = labelled(pod(&format!("c{i}"), "100m", "100Mi"), "cache");
        spec(&mut p).affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: None,
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    k8s_openapi::api::core::v1::WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: PodAffinityTerm {
                            label_selector: Some(selector("db")),
                            topology_key: ZONE.into(),
                            ..Default::default()
                        },
                    },
                ]),
            }),
            ..Default::default()
        });
        let n = place(&mut s, &p, &mut r).unwrap();
        assert_eq!(s.cache().node(&n).unwrap().labels[ZONE], zone);
    }
}

#[test]
fn default_spreading_spreads_a_replica_sets_pods_across_nodes() {
    let mut s = scheduler(&three_zones());
    s.cache_mut().set_controller_selector("rs-uid", Some(&selector("web")));
    let mut r = rng();
    let mut placed = Vec::new();
    for i in 0..6 {
        let mut p = pod(&format!("p{i}"), "10m", "10Mi");
        p.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "rs".into(),
            uid: "rs-uid".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        placed.push(place(&mut s, &p, &mut r).unwrap());
    }
    placed.sort();
    placed.dedup();
    assert_eq!(placed.len(), 6, "one replica per node");
}

// ---------- Scoring ----------

#[test]
fn least_allocated_spreads_and_most_allocated_packs() {
    let nodes = [node("a", "z0", "4", "8Gi", "20"), node("b", "z0", "4", "8Gi", "20")];
    let mut r = rng();
    let mut least = scheduler(&nodes);
    least.cache_mut().upsert_node(&nodes[0]);
    place(&mut least, &pod("seed", "2", "4Gi"), &mut r).unwrap();
    let seeded = least.cache().node("a").unwrap().pods.len() == 1;
    let emptier = if seeded { "b" } else { "a" };
    assert_eq!(place(&mut least, &pod("p", "500m", "500Mi"), &mut r), Ok(emptier.to_string()));

    let mut most = Scheduler::new(SchedulerConfig {
        scoring_strategy: ScoringStrategy::MostAllocated,
        ..SchedulerConfig::default()
    });
    for n in &nodes {
        most.cache_mut().upsert_node(n);
    }
    let first = place(&mut most, &pod("seed", "2", "4Gi"), &mut r).unwrap();
    for i in 0..3 {
        assert_eq!(place(&mut most, &pod(&format!("p{i}"), "500m", "500Mi"), &mut r), Ok(first.clone()));
    }
}

#[test]
fn ties_are_broken_by_the_seed() {
    let nodes: Vec<Node> = (0..8).map(|i| node(&format!("n{i}"), "z0", "8", "8Gi", "20")).collect();
    let run = |seed: u64| {
        let mut s = scheduler(&nodes);
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        (0..4).map(|i| s.schedule(&pod(&format!("p{i}"), "100m", "100Mi"), &mut r).unwrap().node).collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    let distinct: std::collections::BTreeSet<Vec<String>> = (0..16).map(run).collect();
    assert!(distinct.len() > 1, "different seeds pick different tied nodes");
}

#[test]
fn large_clusters_evaluate_the_adaptive_percentage_of_nodes() {
    assert_eq!(feasible_nodes_to_find(None, 50), 50);
    assert_eq!(feasible_nodes_to_find(None, 1000), 420);
    assert_eq!(feasible_nodes_to_find(None, 6000), 300);
    assert_eq!(feasible_nodes_to_find(Some(100), 1000), 1000);
    let nodes: Vec<Node> =
        (0..1000).map(|i| node(&format!("n{i:04}"), &format!("z{}", i % 3), "8", "8Gi", "20")).collect();
    let mut s = scheduler(&nodes);
    let res = s.schedule(&pod("p", "100m", "100Mi"), &mut rng()).unwrap();
    assert_eq!((res.evaluated_nodes, res.feasible_nodes), (420, 420));
}

#[test]
fn no_nodes_gives_the_no_nodes_message() {
    let mut s = scheduler(&[]);
    let err = s.schedule(&pod("p", "1", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(err, SchedulingFailure::NoNodes);
    assert_eq!(err.message(), "no nodes available to schedule pods");
}

#[test]
fn preemption_policy_never_changes_the_post_filter_message() {
    let mut s = scheduler(&[node("a", "z0", "1", "8Gi", "20")]);
    let mut p = pod("p", "2", "1Gi");
    spec(&mut p).preemption_policy = Some("Never".into());
    let err = place(&mut s, &p, &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    );
}

#[test]
fn removing_pods_and_nodes_keeps_accounting_exact() {
    let mut s = scheduler(&[node("a", "z0", "2", "4Gi", "20")]);
    let mut r = rng();
    let p = pod("p", "1500m", "1Gi");
    place(&mut s, &p, &mut r).unwrap();
    assert!(place(&mut s, &pod("q", "1", "1Gi"), &mut r).is_err());
    s.cache_mut().remove_pod(&PodKey::of(&p));
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 0);
    assert!(place(&mut s, &pod("q", "1", "1Gi"), &mut r).is_ok());
    s.cache_mut().remove_node("a");
    assert_eq!(s.cache().node_count(), 0);
    s.cache_mut().upsert_node(&node("a", "z0", "2", "4Gi", "20"));
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 1000, "pod re-attached");
}

// ---------- Property tests against a naive checker ----------

mod properties {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct NodeGen {
        zone: u8,
        milli_cpu: i64,
        memory_mi: i64,
        pods: i64,
        tainted: bool,
        cordoned: bool,
    }

    #[derive(Debug, Clone)]
    struct PodGen {
        milli_cpu: i64,
        memory_mi: i64,
        zone: Option<u8>,
        tolerates: bool,
        spread: bool,
        anti: bool,
        port: Option<i32>,
        app: u8,
    }

    fn node_gen() -> impl Strategy<Value = NodeGen> {
        (0u8..3, 1i64..8, 1i64..16, 2i64..12, prop::bool::weighted(0.2), prop::bool::weighted(0.1)).prop_map(
            |(zone, cpu, mem, pods, tainted, cordoned)| NodeGen {
                zone,
                milli_cpu: cpu * 1000,
                memory_mi: mem * 1024,
                pods,
                tainted,
                cordoned,
            },
        )
    }

    fn pod_gen() -> impl Strategy<Value = PodGen> {
        (
            1i64..3000,
            1i64..4096,
            prop::option::weighted(0.2, 0u8..3),
            prop::bool::weighted(0.3),
            prop::bool::weighted(0.3),
            prop::bool::weighted(0.2),
            prop::option::weighted(0.1, 8080i32..8083),
            0u8..3,
        )
            .prop_map(|(milli_cpu, memory_mi, zone, tolerates, spread, anti, port, app)| PodGen {
                milli_cpu,
                memory_mi,
                zone,
                tolerates,
                spread,
                anti,
                port,
                app,
            })
    }

    fn build_node(i: usize, g: &NodeGen) -> Node {
        let mut n = node(
            &format!("n{i}"),
            &format!("z{}", g.zone),
            &format!("{}m", g.milli_cpu),
            &format!("{}Mi", g.memory_mi),
            &g.pods.to_string(),
        );
        if g.tainted {
            n = with_taint(n, taint("dedicated", "x", "NoSchedule"));
        }
        n.spec.as_mut().unwrap().unschedulable = Some(g.cordoned);
        n
    }

    fn build_pod(i: usize, g: &PodGen) -> Pod {
        let app = format!("app{}", g.app);
        let mut p = labelled(pod(&format!("p{i}"), &format!("{}m", g.milli_cpu), &format!("{}Mi", g.memory_mi)), &app);
        if let Some(z) = g.zone {
            spec(&mut p).node_selector = Some(BTreeMap::from([(ZONE.to_string(), format!("z{z}"))]));
        }
        if g.tolerates {
            spec(&mut p).tolerations = Some(vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }]);
        }
        if g.spread {
            spec(&mut p).topology_spread_constraints = Some(vec![TopologySpreadConstraint {
                max_skew: 1,
                topology_key: ZONE.into(),
                when_unsatisfiable: "DoNotSchedule".into(),
                label_selector: Some(selector(&app)),
                ..Default::default()
            }]);
        }
        if g.anti {
            anti(&mut p, &app, HOST);
        }
        if let Some(port) = g.port {
            spec(&mut p).containers[0].ports =
                Some(vec![ContainerPort { container_port: 80, host_port: Some(port), ..Default::default() }]);
        }
        p
    }

    /// A from-scratch feasibility check of pod `g` on node `n` given what is bound, sharing no
    /// code with the scheduler.
    fn naive_fits(nodes: &[NodeGen], bound: &[(PodGen, usize)], g: &PodGen, n: usize) -> bool {
        let node = &nodes[n];
        let on_node: Vec<&PodGen> = bound.iter().filter(|(_, at)| *at == n).map(|(p, _)| p).collect();
        let cpu: i64 = on_node.iter().map(|p| p.milli_cpu).sum();
        let mem: i64 = on_node.iter().map(|p| p.memory_mi).sum();
        if node.cordoned
            || (node.tainted && !g.tolerates)
            || g.zone.is_some_and(|z| z != node.zone)
            || on_node.len() as i64 + 1 > node.pods
            || cpu + g.milli_cpu > node.milli_cpu
            || mem + g.memory_mi > node.memory_mi
            || g.port.is_some_and(|port| on_node.iter().any(|p| p.port == Some(port)))
        {
            return false;
        }
        // Hostname anti-affinity of the incoming pod, and of existing pods against it.
        if on_node.iter().any(|p| p.app == g.app && (g.anti || p.anti)) {
            return false;
        }
        if g.spread {
            // Domains: zones of nodes matching the pod's nodeSelector (nodeAffinityPolicy Honor).
            let mut counts: BTreeMap<u8, i64> = BTreeMap::new();
            for nd in nodes.iter().filter(|nd| g.zone.is_none_or(|z| z == nd.zone)) {
                counts.entry(nd.zone).or_insert(0);
            }
            for (p, at) in bound {
                if p.app == g.app && counts.contains_key(&nodes[*at].zone) {
                    *counts.get_mut(&nodes[*at].zone).unwrap() += 1;
                }
            }
            let min = counts.values().copied().min().unwrap_or(0);
            if counts.get(&node.zone).copied().unwrap_or(0) + 1 - min > 1 {
                return false;
            }
        }
        true
    }

    fn run(nodes: &[NodeGen], pods: &[PodGen], seed: u64) -> (Vec<Option<usize>>, Vec<String>) {
        let mut s = Scheduler::new(SchedulerConfig::default());
        for (i, n) in nodes.iter().enumerate() {
            s.cache_mut().upsert_node(&build_node(i, n));
        }
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        let mut bound: Vec<(PodGen, usize)> = Vec::new();
        let mut placements = Vec::new();
        let mut violations = Vec::new();
        for (i, g) in pods.iter().enumerate() {
            let p = build_pod(i, g);
            match s.schedule(&p, &mut r) {
                Ok(res) => {
                    let n: usize = res.node[1..].parse().unwrap();
                    if !naive_fits(nodes, &bound, g, n) {
                        violations.push(format!("pod {i} {g:?} bound to infeasible n{n}"));
                    }
                    s.assume(&p, &res.node);
                    bound.push((g.clone(), n));
                    placements.push(Some(n));
                }
                Err(e) => {
                    if let Some(n) = (0..nodes.len()).find(|&n| naive_fits(nodes, &bound, g, n)) {
                        violations.push(format!("pod {i} {g:?} rejected ({e}) but fits n{n}"));
                    }
                    placements.push(None);
                }
            }
        }
        (placements, violations)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn bound_pods_satisfy_every_filter_and_rejections_are_real(
            nodes in prop::collection::vec(node_gen(), 1..12),
            pods in prop::collection::vec(pod_gen(), 1..40),
            seed in any::<u64>(),
        ) {
            let (_, violations) = run(&nodes, &pods, seed);
            prop_assert!(violations.is_empty(), "{violations:#?}");
        }

        #[test]
        fn the_same_seed_gives_the_same_placement(
            nodes in prop::collection::vec(node_gen(), 1..12),
            pods in prop::collection::vec(pod_gen(), 1..40),
            seed in any::<u64>(),
        ) {
            prop_assert_eq!(run(&nodes, &pods, seed).0, run(&nodes, &pods, seed).0);
        }
    }
}

#[test]
fn assumed_pods_survive_stale_unbound_updates_until_forgotten() {
    let mut s = scheduler(&[node("a", "z0", "2", "4Gi", "20")]);
    let p = pod("p", "1500m", "1Gi");
    place(&mut s, &p, &mut rng()).unwrap();
    s.cache_mut().upsert_pod(&p); // a stale, still-unbound copy from the store
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 1500);
    s.cache_mut().forget_assumed(&PodKey::of(&p)); // the binding failed
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 0);
    let mut bound = p.clone();
    spec(&mut bound).node_name = Some("a".into());
    s.cache_mut().upsert_pod(&bound);
    s.cache_mut().forget_assumed(&PodKey::of(&p)); // confirmed pods are not forgotten
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 1500);
}
