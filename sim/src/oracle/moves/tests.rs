//! Each rule that keeps a node out of consolidation, with a case where it applies (no
//! move) and one where it does not (the move is reported).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::CapacityType;
use serde_json::json;

use super::host::{Host, Movable, NodeState, PoolRules, pod_blocks};
use super::inputs::{MoveInputs, Pdb};
use super::replacement::{Cheaper, Replacements, SPOT_TO_SPOT_MIN_CHEAPER_TYPES};
use super::search::search;
use super::{MoveKind, budget_left};
use crate::apiserver::selector::LabelSelector;
use crate::oracle::resources::{Offering, Resources};
use crate::oracle::view::{PodView, PoolView};

const S: fn(u64) -> Duration = Duration::from_secs;

pub(super) fn r(cpu: f64) -> Resources {
    Resources { cpu, memory: 1.0, pods: 1.0 }
}

fn movable(cpu: f64) -> Movable {
    Movable { key: "default/p".into(), requests: r(cpu), object: Arc::new(json!({"spec": {}})), preferred: None }
}

/// A settled, unblocked node of pool `default` with `pods` one-CPU pods and `free_cpu`
/// millicores to spare.
pub(super) fn host(name: &str, spot: bool, pods: usize, free_cpu: f64) -> Host {
    Host {
        name: name.into(),
        instance_type: "m5.xlarge".into(),
        spot,
        price: 0.192,
        nodepool: Some("default".into()),
        labels: BTreeMap::new(),
        taints: Vec::new(),
        free: Resources { cpu: free_cpu, memory: 1e12, pods: 100.0 },
        movable: (0..pods).map(|_| movable(1_000.0)).collect(),
        blocked: None,
        unjudged: None,
        target: true,
        waiting: false,
        reschedule_cost: 1.0 + pods as f64,
    }
}

fn pools(rules: PoolRules) -> BTreeMap<String, PoolRules> {
    [("default".to_string(), rules)].into()
}

pub(super) fn open() -> PoolRules {
    PoolRules { when_empty: false, empty_budget: 1, underutilized_budget: 1, weight: 0, ..PoolRules::default() }
}

fn no_replacement(_: &Host) -> Cheaper {
    Cheaper::None("no cheaper instance type fits its pods".into())
}

fn kinds(hosts: &[Host], rules: PoolRules, cheaper: impl Fn(&Host) -> Cheaper) -> Vec<(String, String)> {
    let found = search(hosts, &pools(rules), cheaper);
    let mut out: Vec<(String, String)> = found.moves.iter().map(|m| (m.nodes[0].clone(), m.key())).collect();
    out.extend(found.kept.iter().map(|k| (k.node.clone(), format!("kept: {}", k.rule))));
    out.sort();
    out
}

#[test]
fn an_empty_node_is_deleted_unless_its_empty_budget_is_spent() {
    let hosts = [host("empty", false, 0, 4_000.0)];
    assert_eq!(kinds(&hosts, open(), no_replacement)[0].1, "delete-empty empty");
    let spent = PoolRules { empty_budget: 0, ..open() };
    assert!(kinds(&hosts, spent, no_replacement)[0].1.contains("budget allows no Empty"));
    // WhenEmpty still deletes empty nodes.
    let when_empty = PoolRules { when_empty: true, ..open() };
    assert_eq!(kinds(&hosts, when_empty, no_replacement)[0].1, "delete-empty empty");
}

#[test]
fn a_node_whose_pods_fit_elsewhere_is_deleted_unless_when_empty_or_budget_or_unjudged() {
    let hosts = [host("a", true, 1, 0.0), host("b", true, 1, 1_500.0)];
    let found = kinds(&hosts, open(), no_replacement);
    assert_eq!(found[0].1, "delete a", "a's pod fits on b, spot or not: {found:?}");
    assert!(found[1].1.contains("fit on no other node"), "{found:?}");
    let when_empty = PoolRules { when_empty: true, ..open() };
    assert!(kinds(&hosts, when_empty, no_replacement)[0].1.contains("WhenEmpty"));
    let spent = PoolRules { underutilized_budget: 0, ..open() };
    assert!(kinds(&hosts, spent, no_replacement)[0].1.contains("no Underutilized"));
    let mut spread = hosts.clone();
    spread[0].unjudged = Some("not judged: pod default/p has topology spread constraints".into());
    assert!(kinds(&spread, open(), no_replacement)[0].1.contains("not judged"));
    // A node that may not receive pods (inside consolidateAfter, disrupted) is no room.
    let mut busy = hosts.clone();
    busy[1].target = false;
    assert!(kinds(&busy, open(), no_replacement)[0].1.starts_with("kept"));
}

#[test]
fn a_blocked_node_is_kept_with_its_rule() {
    let mut hosts = [host("a", false, 0, 0.0)];
    hosts[0].blocked = Some("the Node is annotated karpenter.sh/do-not-disrupt".into());
    assert_eq!(kinds(&hosts, open(), no_replacement)[0].1, "kept: the Node is annotated karpenter.sh/do-not-disrupt");
}

#[test]
fn a_node_with_a_cheaper_replacement_is_replaced() {
    let hosts = [host("a", false, 3, 0.0)];
    let cheaper = |_: &Host| Cheaper::Options(vec![("m5.large".into(), 0.096), ("c5.large".into(), 0.1)]);
    let found = search(&hosts, &pools(open()), cheaper);
    assert_eq!(found.moves.len(), 1);
    assert_eq!(found.moves[0].kind, MoveKind::Replace { cheapest_type: "m5.large".into(), options: 2 });
    assert!((found.moves[0].saving_per_hour - (0.192 - 0.1)).abs() < 1e-9, "saving against the worst option");
    assert!(kinds(&hosts, open(), no_replacement)[0].1.contains("no cheaper instance type"));
}

/// Every per-node rule, each alone on an otherwise consolidatable node.
#[test]
fn each_node_rule_blocks_alone_and_a_node_without_one_is_a_candidate() {
    let free = NodeState {
        managed: true,
        initialized: true,
        pool_exists: true,
        consolidate_after: Some(Some(S(60))),
        last_event: Some(S(0)),
        now: S(100),
        ..NodeState::default()
    };
    assert_eq!(free.rule(), (None, true));
    let cases: Vec<(NodeState, &str)> = vec![
        (NodeState { managed: false, ..free.clone() }, "not managed"),
        (NodeState { initialized: false, ..free.clone() }, "not initialized"),
        (NodeState { disrupted: true, ..free.clone() }, "being disrupted"),
        (NodeState { pool_exists: false, ..free.clone() }, "NodePool does not exist"),
        (NodeState { consolidate_after: Some(None), ..free.clone() }, "consolidateAfter: Never"),
        (NodeState { node_do_not_disrupt: true, ..free.clone() }, "Node is annotated"),
        (NodeState { claim_do_not_disrupt: true, ..free.clone() }, "NodeClaim is annotated"),
        (NodeState { pod_rule: Some("pod x's PDB".into()), ..free.clone() }, "PDB"),
        (NodeState { last_event: Some(S(50)), ..free.clone() }, "inside consolidateAfter"),
        (NodeState { last_event: None, ..free.clone() }, "not seen initialized"),
        // consolidateAfter 0s still waits out the 20 s nomination window.
        (NodeState { consolidate_after: Some(Some(S(0))), last_event: Some(S(90)), ..free.clone() }, "nomination"),
    ];
    for (state, rule) in cases {
        let (blocked, _) = state.rule();
        assert!(blocked.as_deref().is_some_and(|b| b.contains(rule)), "{rule}: {blocked:?}");
    }
    let zero = NodeState { consolidate_after: Some(Some(S(0))), last_event: Some(S(79)), ..free };
    assert_eq!(zero.rule(), (None, true), "21 s after the last pod event with consolidateAfter 0s");
}

fn pod(annotations: serde_json::Value, labels: serde_json::Value) -> PodView {
    let object = json!({"metadata": {"name": "p", "namespace": "default", "labels": labels, "annotations": annotations},
        "status": {"startTime": "2026-01-01T00:00:00Z"}});
    PodView {
        key: "default/p".into(),
        uid: "u".into(),
        created: Duration::ZERO,
        node_name: Some("n".into()),
        terminal: false,
        terminating: false,
        daemonset: false,
        requests: r(100.0),
        object: Arc::new(object),
    }
}

fn pdb(name: &str, allowed: i64) -> Pdb {
    let selector = serde_json::from_value(json!({"matchLabels": {"app": "web"}})).expect("selector");
    Pdb {
        name: format!("default/{name}"),
        namespace: "default".into(),
        selector: LabelSelector::from_api(&selector).expect("valid"),
        disruptions_allowed: allowed,
    }
}

#[test]
fn pods_block_with_do_not_disrupt_or_a_pdb_that_allows_nothing() {
    let web = json!({"app": "web"});
    let none = MoveInputs::default();
    assert_eq!(pod_blocks(&pod(json!({}), web.clone()), &none, S(10)), None);
    let dnd = pod(json!({"karpenter.sh/do-not-disrupt": "true"}), web.clone());
    assert!(pod_blocks(&dnd, &none, S(10)).is_some_and(|r| r.contains("do-not-disrupt")));
    // A duration annotation stops blocking once the pod has run that long.
    let timed = pod(json!({"karpenter.sh/do-not-disrupt": "5m"}), web.clone());
    assert!(pod_blocks(&timed, &none, S(60)).is_some());
    assert_eq!(pod_blocks(&timed, &none, S(600)), None);
    let one_left = MoveInputs { pdbs: vec![pdb("web", 1)], ..MoveInputs::default() };
    assert_eq!(pod_blocks(&pod(json!({}), web.clone()), &one_left, S(10)), None, "the PDB allows one disruption");
    let none_left = MoveInputs { pdbs: vec![pdb("web", 0)], ..MoveInputs::default() };
    assert!(pod_blocks(&pod(json!({}), web.clone()), &none_left, S(10)).is_some_and(|r| r.contains("default/web")));
    assert_eq!(pod_blocks(&pod(json!({}), json!({"app": "api"})), &none_left, S(10)), None, "not selected");
    let two = MoveInputs { pdbs: vec![pdb("web", 1), pdb("web-2", 1)], ..MoveInputs::default() };
    assert!(pod_blocks(&pod(json!({}), web), &two, S(10)).is_some_and(|r| r.contains("more than one PDB")));
}

#[test]
fn budgets_count_what_is_already_disrupting() {
    let budgets = [json!({"nodes": "1"})];
    assert_eq!(budget_left(&budgets, 5, 0, "Underutilized", S(0)), 1);
    assert_eq!(budget_left(&budgets, 5, 1, "Underutilized", S(0)), 0);
    let per_reason = [json!({"nodes": "0", "reasons": ["Empty"]})];
    assert_eq!(budget_left(&per_reason, 5, 0, "Empty", S(0)), 0);
    assert_eq!(budget_left(&per_reason, 5, 0, "Underutilized", S(0)), usize::MAX, "no budget limits it");
    assert_eq!(budget_left(&[], 5, 0, "Underutilized", S(0)), 1, "the default 10%");
}

pub(super) fn offering(t: &str, zone: &str, ct: CapacityType, price: f64, cpu: f64) -> (Offering, bool) {
    let labels: BTreeMap<String, String> = [
        ("node.kubernetes.io/instance-type".to_string(), t.to_string()),
        ("topology.kubernetes.io/zone".to_string(), zone.to_string()),
        ("karpenter.sh/capacity-type".to_string(), ct.as_str().to_string()),
    ]
    .into();
    let allocatable = Resources { cpu, memory: 1e12, pods: 100.0 };
    (
        Offering {
            instance_type: t.into(),
            zone: zone.into(),
            capacity_type: ct,
            price,
            allocatable,
            planned: allocatable,
            labels: labels.into(),
        },
        true,
    )
}

fn replacements(offerings: Vec<(Offering, bool)>, host: &Host, spot_to_spot: bool) -> Cheaper {
    let offerings: BTreeMap<&str, Vec<(Offering, bool)>> = [("default", offerings)].into();
    let pools: BTreeMap<String, PoolView> = [(
        "default".to_string(),
        PoolView { name: "default".into(), object: Arc::new(json!({"metadata": {"name": "default"}})) },
    )]
    .into();
    Replacements::new(&offerings, &pools, r(100.0), BTreeSet::new(), BTreeMap::new()).cheaper(host, spot_to_spot)
}

#[test]
fn a_replacement_must_be_cheaper_at_its_worst_launch_price_and_hold_every_pod() {
    let od = CapacityType::OnDemand;
    let node = host("a", false, 2, 0.0); // 2 CPU of pods + 0.1 CPU overhead, at $0.192/h
    let small = offering("m5.large", "a", od, 0.096, 1_900.0);
    let fits = offering("c5.xlarge", "a", od, 0.17, 3_900.0);
    let dear_zone = offering("c5.xlarge", "b", od, 0.2, 3_900.0);
    assert_eq!(
        replacements(vec![small.clone(), fits.clone()], &node, false),
        Cheaper::Options(vec![("c5.xlarge".into(), 0.17)])
    );
    // One dearer offering of the type (any zone the replacement may use) disqualifies it.
    assert!(
        matches!(replacements(vec![small.clone(), fits.clone(), dear_zone], &node, false), Cheaper::None(r) if r.contains("no cheaper"))
    );
    // An offering that is not available now still counts towards the worst price...
    let (unavailable, _) = offering("c5.xlarge", "c", od, 0.25, 3_900.0);
    assert!(matches!(replacements(vec![fits.clone(), (unavailable, false)], &node, false), Cheaper::None(_)));
    // ...and a type none of whose offerings is available is no option.
    let (only, _) = fits.clone();
    assert!(matches!(replacements(vec![(only, false)], &node, false), Cheaper::None(_)));
}

#[test]
fn a_spot_node_is_replaced_only_with_the_gate_and_fifteen_cheaper_spot_types() {
    let spot = CapacityType::Spot;
    let node = host("a", true, 1, 0.0);
    let cheaper: Vec<(Offering, bool)> = (0..SPOT_TO_SPOT_MIN_CHEAPER_TYPES)
        .map(|i| offering(&format!("t{i:02}.large"), "a", spot, 0.05 + i as f64 * 0.001, 1_900.0))
        .collect();
    assert!(
        matches!(replacements(cheaper.clone(), &node, false), Cheaper::None(r) if r.contains("SpotToSpotConsolidation is off"))
    );
    assert!(
        matches!(replacements(cheaper.clone(), &node, true), Cheaper::Options(o) if o.len() == SPOT_TO_SPOT_MIN_CHEAPER_TYPES)
    );
    let fourteen = cheaper[1..].to_vec();
    assert!(matches!(replacements(fourteen, &node, true), Cheaper::None(r) if r.contains("only 14 spot types")));
}

/// A pod of one CPU preferring capacity type `preferred` (story-418143272's app-0).
fn preferring(preferred: &str) -> Movable {
    let spec = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [preferred]}]}}]}}});
    Movable { object: Arc::new(json!({ "spec": spec })), ..movable(1_000.0) }
}

fn labelled(mut h: Host, capacity_type: &str) -> Host {
    h.labels.insert("karpenter.sh/capacity-type".into(), capacity_type.into());
    h
}

/// Binds the hosts' preferences against pool `default` selling `offerings`, then searches.
fn with_preferences(mut hosts: Vec<Host>, offerings: Vec<(Offering, bool)>) -> Vec<(String, String)> {
    let offerings: BTreeMap<&str, Vec<(Offering, bool)>> = [("default", offerings)].into();
    let views: BTreeMap<String, PoolView> = [(
        "default".to_string(),
        PoolView { name: "default".into(), object: Arc::new(json!({"metadata": {"name": "default"}})) },
    )]
    .into();
    let replacements = Replacements::new(&offerings, &views, r(100.0), BTreeSet::new(), BTreeMap::new());
    super::preference::bind(&mut hosts, &views, || &replacements);
    kinds(&hosts, open(), no_replacement)
}

#[test]
fn a_pod_is_held_to_its_preferred_term_where_a_pool_could_launch_for_it() {
    // story-418143272: a spot node's pod prefers spot; the only room elsewhere is on an
    // on-demand node. Upstream's simulation opens a new spot NodeClaim for it (a replace,
    // refused with spot-to-spot off), so no delete is claimed while the pool sells spot.
    let spot_node = || Host {
        movable: vec![preferring("spot")],
        reschedule_cost: 2.0,
        ..labelled(host("s", true, 0, 0.0), "spot")
    };
    let od_room = labelled(host("od", false, 1, 4_000.0), "on-demand");
    let sells_spot = vec![
        offering("m5.large", "a", CapacityType::Spot, 0.04, 1_900.0),
        offering("m5.large", "a", CapacityType::OnDemand, 0.096, 1_900.0),
    ];
    let found = with_preferences(vec![spot_node(), od_room.clone()], sells_spot.clone());
    assert!(found.iter().all(|(_, k)| k != "delete s"), "{found:?}");
    // The preference binds nothing where no pool could launch a spot node: upstream relaxes it.
    let on_demand_only = vec![offering("m5.large", "a", CapacityType::OnDemand, 0.096, 1_900.0)];
    let found = with_preferences(vec![spot_node(), od_room.clone()], on_demand_only);
    assert!(found.contains(&("s".into(), "delete s".into())), "{found:?}");
    // And room on a node the preference accepts takes the pod.
    let spot_room = Host { name: "sr".into(), ..labelled(od_room, "spot") };
    let found = with_preferences(vec![spot_node(), spot_room], sells_spot);
    assert!(found.contains(&("s".into(), "delete s".into())), "{found:?}");
}

#[test]
fn a_type_holds_the_pods_by_its_estimated_memory_until_a_node_of_it_is_live() {
    // story-458153806: seven 2 GiB pods fit an m5a.xlarge by the kubelet's allocatable, not
    // by Karpenter's estimate (7.5 % VM overhead) for a type none of whose nodes is live.
    let od = CapacityType::OnDemand;
    let node = host("a", false, 2, 0.0); // at $0.192/h
    let (mut estimated_short, _) = offering("c5.xlarge", "a", od, 0.17, 3_900.0);
    estimated_short.planned.memory = 1.0; // less than the pods and overhead need
    let offerings: BTreeMap<&str, Vec<(Offering, bool)>> = [("default", vec![(estimated_short, true)])].into();
    let views: BTreeMap<String, PoolView> = [(
        "default".to_string(),
        PoolView {
            name: "default".into(),
            object: Arc::new(json!({"metadata": {"name": "default"},
                "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}}})),
        },
    )]
    .into();
    let cheaper = |seen: BTreeSet<(String, String)>| {
        Replacements::new(&offerings, &views, r(100.0), seen, BTreeMap::new()).cheaper(&node, false)
    };
    assert!(matches!(cheaper(BTreeSet::new()), Cheaper::None(r) if r.contains("no cheaper")));
    let other_class: BTreeSet<(String, String)> = [("c5.xlarge".to_string(), "other".to_string())].into();
    assert!(matches!(cheaper(other_class), Cheaper::None(_)), "a node of another EC2NodeClass tells nothing");
    let live: BTreeSet<(String, String)> = [("c5.xlarge".to_string(), "default".to_string())].into();
    assert_eq!(cheaper(live), Cheaper::Options(vec![("c5.xlarge".into(), 0.17)]));
}

/// Generated story 391155524: a replacement stays within what the pool's `spec.limits`
/// leave once the replaced node's capacity is given back (core `disruption/helpers.go`
/// `SimulateScheduling` leaves the candidates out; `scheduling/scheduler.go` l. 709-716
/// filters a new claim's types by the remaining limits). Pool `default` is limited to 4 vCPU
/// and runs the 4-vCPU candidate and a 2-vCPU neighbour: only a type of at most 2 vCPU may
/// replace the candidate, so the cheaper 4-vCPU c5.xlarge is no option, the m5.large is;
/// without the neighbour both are.
#[test]
fn a_replacement_stays_within_the_pools_limits_with_the_candidate_given_back() {
    let od = CapacityType::OnDemand;
    let with_cpu = |(mut o, a): (Offering, bool), vcpu: &str| {
        let mut labels = (*o.labels).clone();
        labels.insert("karpenter.k8s.aws/instance-cpu".into(), vcpu.into());
        o.labels = labels.into();
        (o, a)
    };
    let offerings = vec![
        with_cpu(offering("c5.xlarge", "a", od, 0.17, 3_900.0), "4"),
        with_cpu(offering("m5.xlarge", "a", od, 0.192, 3_900.0), "4"),
        with_cpu(offering("m5.large", "a", od, 0.096, 1_900.0), "2"),
    ];
    let offerings: BTreeMap<&str, Vec<(Offering, bool)>> = [("default", offerings)].into();
    let pool = json!({"metadata": {"name": "default"}, "spec": {"limits": {"cpu": "4"}}});
    let pools: BTreeMap<String, PoolView> =
        [("default".to_string(), PoolView { name: "default".into(), object: Arc::new(pool) })].into();
    let node = host("a", false, 1, 0.0); // an m5.xlarge, 1 CPU of pods
    let cheaper = |nodes: &[&str]| {
        let pool_nodes = [("default".to_string(), nodes.iter().map(|t| t.to_string()).collect())].into();
        Replacements::new(&offerings, &pools, r(100.0), BTreeSet::new(), pool_nodes).cheaper(&node, false)
    };
    assert_eq!(
        cheaper(&["m5.xlarge", "m5.large"]),
        Cheaper::Options(vec![("m5.large".into(), 0.096)]),
        "2 vCPU left: the c5.xlarge is over the limit"
    );
    assert_eq!(
        cheaper(&["m5.xlarge"]),
        Cheaper::Options(vec![("m5.large".into(), 0.096), ("c5.xlarge".into(), 0.17)]),
        "4 vCPU left"
    );
}
