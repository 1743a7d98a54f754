//! The wave bound's allowances, each beside its twin where it does not apply.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::CapacityType;
use serde_json::json;

use super::wave::{ForeignPod, LaunchedAs, Wave, claim_node_names, seen_allocatable, wave_bound};
use crate::oracle::resources::{Offering, Resources};
use crate::oracle::view::{ClaimView, NodeView, View};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn offering(name: &str, cpu: f64) -> Offering {
    let labels: BTreeMap<String, String> = [
        ("node.kubernetes.io/instance-type", name),
        ("topology.kubernetes.io/zone", "a"),
        ("karpenter.sh/capacity-type", "on-demand"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    Offering {
        instance_type: name.into(),
        zone: "a".into(),
        capacity_type: CapacityType::OnDemand,
        price: cpu / 10_000.0,
        allocatable: Resources { cpu, memory: 60.0 * GIB, pods: 110.0 },
        planned: Resources { cpu, memory: 60.0 * GIB, pods: 110.0 },
        labels: labels.into(),
    }
}

/// A wave of `n` pods of 200m over one pool offering a 1900m and a 15800m type.
fn wave(n: usize) -> Wave {
    let pool = Arc::new(json!({"metadata": {"name": "default"}, "spec": {}}));
    let mut pods = BTreeMap::new();
    let mut order = Vec::new();
    for i in 0..n {
        let uid = format!("uid-{i:02}");
        let pod = Arc::new(json!({"metadata": {"namespace": "default", "name": format!("p{i:02}")}, "spec": {}}));
        let requests = Resources { cpu: 200.0, memory: 0.25 * GIB, pods: 1.0 };
        pods.insert(uid.clone(), (format!("default/p{i:02}"), pod, requests));
        order.push(uid);
    }
    Wave {
        start: Duration::ZERO,
        pods,
        claims: BTreeSet::new(),
        used: BTreeMap::new(),
        supply: vec![("default".into(), pool, vec![offering("m.large", 1900.0), offering("m.4xlarge", 15_800.0)])],
        overhead: Resources::default(),
        order,
        pending_at: BTreeMap::new(),
        cuts: BTreeSet::new(),
        watch_delay: Duration::ZERO,
        misdirected: BTreeMap::new(),
        foreign: BTreeMap::new(),
        landed: BTreeMap::new(),
        released: BTreeMap::new(),
        bound: BTreeSet::new(),
        bound_for: None,
        reported: false,
    }
}

/// Claim → what it was launched as (zone `a`, on-demand).
fn launched(claim: &str, instance_type: &str) -> BTreeMap<String, LaunchedAs> {
    let launched = LaunchedAs {
        nodepool: "default".into(),
        instance_type: instance_type.into(),
        zone: "a".into(),
        capacity_type: CapacityType::OnDemand,
    };
    BTreeMap::from([(claim.to_string(), launched)])
}

/// When the judged claim was created: after every binding the tests record (at 0 s).
const AT: Duration = Duration::from_secs(60);

#[test]
fn a_wave_under_watch_lag_is_packed_pass_by_pass_and_without_lag_at_once() {
    let mut burst = wave(50);
    assert_eq!(
        wave_bound(&burst, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1),
        2,
        "no lag: one pass, one large node, plus one"
    );
    // A 2 s lag: one pod per pass, each new node the smallest that fits (9 pods), filled by
    // the passes after it: 6 nodes, plus one.
    burst.watch_delay = Duration::from_secs(2);
    assert_eq!(wave_bound(&burst, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1), 7);
}

#[test]
fn pods_bound_elsewhere_than_their_nomination_sit_where_they_were_bound() {
    let mut w = wave(20);
    assert_eq!(
        wave_bound(&w, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1),
        2,
        "every pod where nominated: one node, plus one"
    );
    // kube-scheduler bound nine pods to a small claim of the wave that Karpenter had meant
    // for others: that node is full, the other eleven need one more.
    let instances = launched("small", "m.large");
    for i in 0..9 {
        w.misdirected.insert(format!("uid-{i:02}"), ("small".into(), Duration::ZERO));
    }
    assert_eq!(wave_bound(&w, AT, &BTreeSet::new(), &instances, &BTreeMap::new(), 1), 3);
    // A claim whose instance is not one of the pool's offerings places nothing.
    w.misdirected = (0..9).map(|i| (format!("uid-{i:02}"), ("unknown".to_string(), Duration::ZERO))).collect();
    assert_eq!(wave_bound(&w, AT, &BTreeSet::new(), &instances, &BTreeMap::new(), 1), 2);
}

/// Five pods kube-scheduler bound to the wave's m.large `small` leave it room for four more
/// by the claim's estimate (1900m), so 18 pods need two nodes, plus one. Once its Node
/// registers, Karpenter sees the kubelet's figure (core `state/statenode.go` `Allocatable`,
/// l. 377–392): a Node reporting the estimate excuses nothing more, one reporting 1100m
/// leaves room for none, and the thirteen others need two more nodes. A quantity the Node
/// reports as zero is the estimate's.
#[test]
fn a_registered_node_offers_the_room_its_kubelet_reports_not_the_claims_estimate() {
    let mut w = wave(18);
    w.supply[0].2.truncate(1);
    let instances = launched("small", "m.large");
    for i in 0..5 {
        w.misdirected.insert(format!("uid-{i:02}"), ("small".into(), Duration::ZERO));
    }
    let node = |cpu: f64, memory: f64| BTreeMap::from([("small".to_string(), Resources { cpu, memory, pods: 110.0 })]);
    assert_eq!(
        wave_bound(&w, AT, &BTreeSet::new(), &instances, &BTreeMap::new(), 1),
        3,
        "no Node yet: the claim's estimate"
    );
    assert_eq!(
        wave_bound(&w, AT, &BTreeSet::new(), &instances, &node(1900.0, 60.0 * GIB), 1),
        3,
        "the Node reports the estimate"
    );
    assert_eq!(
        wave_bound(&w, AT, &BTreeSet::new(), &instances, &node(1100.0, 60.0 * GIB), 1),
        4,
        "the Node reports less"
    );
    assert_eq!(
        wave_bound(&w, AT, &BTreeSet::new(), &instances, &node(1100.0, 0.0), 1),
        4,
        "memory not reported: the estimate's"
    );
}

#[test]
fn the_room_karpenter_sees_is_the_nodes_with_zeros_from_the_estimate() {
    let estimate = Resources { cpu: 1900.0, memory: 7.0 * GIB, pods: 29.0 };
    let node = Resources { cpu: 1800.0, memory: 0.0, pods: 0.0 };
    assert_eq!(seen_allocatable(&node, &estimate), Resources { cpu: 1800.0, memory: 7.0 * GIB, pods: 29.0 });
}

/// A claim is judged against the bindings known when it was created (core
/// `provisioner.go` `Schedule`, l. 362–400, plans from the nodes and pending pods of its
/// pass): nine pods bound to the small claim at 30 s excuse a claim created at 60 s, but not
/// one created at 20 s, before that binding — there the strict packing of all twenty
/// applies, and a third claim is over it.
#[test]
fn a_claim_is_judged_against_the_bindings_known_when_it_was_created() {
    let mut w = wave(20);
    let instances = launched("small", "m.large");
    for i in 0..9 {
        w.misdirected.insert(format!("uid-{i:02}"), ("small".into(), Duration::from_secs(30)));
    }
    let registered = BTreeMap::new();
    assert_eq!(
        wave_bound(&w, Duration::from_secs(60), &BTreeSet::new(), &instances, &registered, 1),
        3,
        "binding known: 3"
    );
    assert_eq!(
        wave_bound(&w, Duration::from_secs(30), &BTreeSet::new(), &instances, &registered, 1),
        3,
        "seen at creation: known"
    );
    assert_eq!(
        wave_bound(&w, Duration::from_secs(20), &BTreeSet::new(), &instances, &registered, 1),
        2,
        "binding later: not counted"
    );
}

/// The recorded story 428dd0df6df1b9bb's shape: three pods pending at 0 s, seventeen at
/// 60 s, in one wave (the first three still wait for their node). The first pass saw three
/// and its claim is sized for them (the m.large the packing shrinks it to); the second
/// fills that room and opens one more: 2 nodes, plus one. All twenty pending at once is one
/// pass: 1 node, plus one — the split is not granted without the time between them, nor
/// by a claim created before every pod.
#[test]
fn pods_pending_a_minute_apart_are_packed_pass_by_pass() {
    let mut w = wave(20);
    w.pending_at =
        w.order.iter().enumerate().map(|(i, u)| (u.clone(), Duration::from_secs(if i < 3 { 0 } else { 60 }))).collect();
    assert_eq!(wave_bound(&w, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1), 3);
    let mut together = wave(20);
    together.pending_at = together.order.iter().map(|u| (u.clone(), Duration::from_secs(1))).collect();
    together.cuts = BTreeSet::from([Duration::ZERO]);
    assert_eq!(wave_bound(&together, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1), 2);
}

/// A claim created at 30 s marks a pass: the pods pending from then on were not in it, so
/// nine pods at 0–20 s and eleven at 30 s are two passes even within one batching window's
/// reach; a cut after `at` (a claim judged later) does not split the claim judged now.
#[test]
fn a_claim_created_between_pods_marks_a_pass() {
    let mut w = wave(20);
    w.pending_at = w
        .order
        .iter()
        .enumerate()
        .map(|(i, u)| (u.clone(), Duration::from_millis(if i < 9 { 200 * i as u64 } else { 2_000 })))
        .collect();
    assert_eq!(wave_bound(&w, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1), 2, "one window, no cut");
    w.cuts = BTreeSet::from([Duration::from_millis(1_900)]);
    assert_eq!(wave_bound(&w, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1), 3, "a claim at 1.9 s");
    assert_eq!(
        wave_bound(&w, Duration::from_secs(1), &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1),
        2,
        "cut after at"
    );
}

/// Generated story 721375015's shape: nine pods Karpenter had planned for the claims
/// `spare-1` and `spare-2` (m.large each) were bound by kube-scheduler to `small` at 30 s,
/// and three 2-CPU pods still pending need room no m.large has. The released claims stay
/// live at the room they were launched with (core `provisioner.go` `Schedule`, l. 375, plans
/// on them; `statenode.go` l. 219–221, no disruption before initialization), so the bound
/// counts them: `small`, both spares and one m.4xlarge, plus one. Where they are gone, or
/// the binding comes after the claim judged, they count for nothing. And where their room
/// holds the pods still pending, a claim launched beside them is still over: three 200m pods
/// fill `spare-1`, and `small`, the spares and two new claims are five, over four.
#[test]
fn claims_a_binding_released_stay_with_the_room_they_were_launched_with() {
    let secs = Duration::from_secs;
    let mut w = wave(12);
    let mut instances = launched("small", "m.large");
    instances.extend(launched("spare-1", "m.large"));
    instances.extend(launched("spare-2", "m.large"));
    for i in 0..9 {
        w.misdirected.insert(format!("uid-{i:02}"), ("small".into(), secs(30)));
    }
    w.released = BTreeMap::from([("spare-1".to_string(), secs(30)), ("spare-2".to_string(), secs(30))]);
    let small_pods = w.pods.clone();
    for i in 9..12 {
        if let Some(pod) = w.pods.get_mut(&format!("uid-{i:02}")) {
            pod.2.cpu = 2000.0;
        }
    }
    let live: BTreeSet<String> = ["small", "spare-1", "spare-2", "new"].map(String::from).into();
    let none = BTreeMap::new();
    assert_eq!(wave_bound(&w, AT, &live, &instances, &none, 1), 5, "released claims kept: 4, plus one");
    let gone: BTreeSet<String> = ["small", "new"].map(String::from).into();
    assert_eq!(wave_bound(&w, AT, &gone, &instances, &none, 1), 3, "released claims gone: 2, plus one");
    assert_eq!(wave_bound(&w, secs(20), &live, &instances, &none, 1), 2, "binding later: one pass, plus one");
    let mut fits = w;
    fits.pods = small_pods;
    assert_eq!(wave_bound(&fits, AT, &live, &instances, &none, 1), 4, "the spare's room holds the rest: 3, plus one");
}

/// An offering of `name` (15800m) in `zone` with `capacity` (`spot` or `on-demand`).
fn zoned(name: &str, zone: &str, capacity: &str) -> Offering {
    let labels: BTreeMap<String, String> = [
        ("node.kubernetes.io/instance-type", name),
        ("topology.kubernetes.io/zone", zone),
        ("karpenter.sh/capacity-type", capacity),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let capacity_type = if capacity == "spot" { CapacityType::Spot } else { CapacityType::OnDemand };
    Offering { zone: zone.into(), capacity_type, labels: labels.into(), ..offering(name, 15_800.0) }
}

/// Generated story 804998432's shape: a weight-10 on-demand pool over zones a, b, c, a spot
/// pool over a and b only; three 2-CPU pods spread over the zones open an on-demand node in
/// each, then three 200m pods spread over the zones that prefer `capacity-type: prefers`.
fn preferring(prefers: &str) -> Wave {
    let mut w = wave(0);
    let od = Arc::new(json!({"metadata": {"name": "od"}, "spec": {"weight": 10}}));
    let spot = Arc::new(json!({"metadata": {"name": "spot"}, "spec": {}}));
    let od_offerings = ["a", "b", "c"].map(|z| zoned("m.4xlarge", z, "on-demand")).to_vec();
    w.supply = vec![
        ("od".into(), od, od_offerings),
        ("spot".into(), spot, vec![zoned("m.4xlarge", "a", "spot"), zoned("m.4xlarge", "b", "spot")]),
    ];
    let spread = |app: &str| {
        json!([{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": app}}}])
    };
    let preference = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10,
        "preference": {"matchExpressions": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [prefers]}]}}]}});
    for i in 0..6 {
        let (app, cpu) = if i < 3 { ("big", 2000.0) } else { ("small", 200.0) };
        let mut spec = json!({"topologySpreadConstraints": spread(app)});
        if i >= 3 {
            spec["affinity"] = preference.clone();
        }
        let pod = Arc::new(json!({"metadata": {"namespace": "default", "name": format!("p{i}")}, "spec": spec}));
        let uid = format!("uid-{i:02}");
        w.pods.insert(uid.clone(), (format!("default/p{i}"), pod, Resources { cpu, memory: 0.25 * GIB, pods: 1.0 }));
        w.order.push(uid);
    }
    w
}

/// Karpenter holds a pod's heaviest preferred node-affinity term as required and relaxes it
/// only when the pod fails (core `pkg/scheduling/requirements.go` l. 95–101,
/// `scheduling/preferences.go` `Relax`, l. 38–44): the spot-preferring pods open spot nodes
/// in a and b rather than join the on-demand nodes there, and the third, whose turn of the
/// spread is zone c where no spot is offered, fails with it (the skew counts from c's zero,
/// `topologygroup.go` l. 231, l. 283) and goes, relaxed, to the on-demand node in c: 5
/// nodes, plus one per pool. Where the preference points at the nodes with room
/// (`on-demand`), nothing more opens: 3, plus one per pool, and a sixth claim still fires.
#[test]
fn a_preferred_node_affinity_is_held_as_required_until_it_fails() {
    let bound = |w: &Wave| wave_bound(w, AT, &BTreeSet::new(), &BTreeMap::new(), &BTreeMap::new(), 1);
    assert_eq!(bound(&preferring("spot")), 7, "two spot nodes more: 5, plus two");
    let od = preferring("on-demand");
    assert_eq!(bound(&od), 5, "the preference holds where the room is: 3, plus two");
    let live = 6;
    assert!(live > bound(&od), "six claims for it are over");
}

/// Generated story 458153824's shape: pods bound where Karpenter nominated them sit there
/// for every claim created after the binding was seen, as misdirected ones do — the pass
/// that creates the claim plans on the cluster's nodes with the pods bound to them (core
/// `provisioner.go` `Schedule`, l. 375, `p.cluster.Nodes()`) and schedules only the pods
/// still pending (`GetPendingPods`, l. 378); it cannot move them to free room. Nine pods
/// bound at 30 s to the wave's m.large `small` fill it: a claim created at 60 s is judged
/// with the eleven others on one more node, 2, plus one, and a fourth live claim is over;
/// a claim created at 20 s, before the binding, gets the strict packing.
#[test]
fn pods_bound_where_nominated_sit_where_they_were_bound() {
    let mut w = wave(20);
    let instances = launched("small", "m.large");
    for i in 0..9 {
        w.landed.insert(format!("uid-{i:02}"), ("small".into(), Duration::from_secs(30)));
    }
    let none = BTreeMap::new();
    let bound = wave_bound(&w, AT, &BTreeSet::new(), &instances, &none, 1);
    assert_eq!(bound, 3, "binding known: small and one more, plus one");
    let live = 4;
    assert!(live > bound, "a fourth claim is over");
    assert_eq!(wave_bound(&w, Duration::from_secs(20), &BTreeSet::new(), &instances, &none, 1), 2, "binding later");
}

/// Generated story 847793307's shape: two pools allow the same offering, and a claim is
/// placed in the packing as a node of its *own* pool. Pool `a` (weight 10) and pool `b` both
/// offer m.4xlarge; three pods select `karpenter.sh/nodepool: b`. Pool `b`'s claim `spare`,
/// planned for pods kube-scheduler bound elsewhere ([`Wave::released`]), is kept empty at the
/// m.4xlarge it launched as, and the three pods fill it: `spare`, plus one per pool. Were it
/// taken for pool `a`'s node (the first pool offering that type), the pods could not use it
/// and the bound would count a second node. Four live claims for the three pods are over.
#[test]
fn a_kept_claim_is_a_node_of_its_own_nodepool() {
    let mut w = wave(3);
    let pool = |name: &str, weight: u32| Arc::new(json!({"metadata": {"name": name}, "spec": {"weight": weight}}));
    w.supply = vec![
        ("a".into(), pool("a", 10), vec![offering("m.4xlarge", 15_800.0)]),
        ("b".into(), pool("b", 0), vec![offering("m.4xlarge", 15_800.0)]),
    ];
    for (_, pod, _) in w.pods.values_mut() {
        *pod = Arc::new(json!({"metadata": pod["metadata"].clone(),
            "spec": {"nodeSelector": {"karpenter.sh/nodepool": "b"}}}));
    }
    w.released = BTreeMap::from([("spare".to_string(), Duration::from_secs(30))]);
    let mut instances = launched("spare", "m.4xlarge");
    instances.get_mut("spare").expect("launched").nodepool = "b".into();
    let live: BTreeSet<String> = ["spare", "new"].map(String::from).into();
    let bound = wave_bound(&w, AT, &live, &instances, &BTreeMap::new(), 1);
    assert_eq!(bound, 3, "spare holds the three pods: 1, plus one per pool");
    let four_live = 4;
    assert!(four_live > bound, "spare and three new claims are over");
    instances.get_mut("spare").expect("launched").nodepool = "a".into();
    assert_eq!(wave_bound(&w, AT, &live, &instances, &BTreeMap::new(), 1), 4, "as pool a's node it holds none");
}

/// A claim's Node is found by its instance before the controller writes `status.nodeName`
/// (generated story 847793307: the write lagged under API-server errors while pods were
/// bound to the Node); `status.nodeName` wins where it is written, and a claim whose
/// instance has no Node yet has none.
#[test]
fn a_claims_node_is_found_by_its_instance_before_the_controller_names_it() {
    let node = |id: &str| NodeView {
        provider_id: format!("aws:///a/{id}"),
        nodepool: Some("default".into()),
        deleting: false,
        disrupted: false,
        initialized: false,
        do_not_disrupt: false,
        taints: Vec::new(),
        ready: true,
        labels: BTreeMap::new(),
        allocatable: Resources::default(),
    };
    let mut view = View::default();
    view.claims.insert("unnamed".into(), ClaimView::for_test("unnamed", "default", "aws:///a/i-1"));
    let mut named = ClaimView::for_test("named", "default", "aws:///a/i-2");
    named.node_name = Some("n-2".into());
    view.claims.insert("named".into(), named);
    view.claims.insert("unregistered".into(), ClaimView::for_test("unregistered", "default", "aws:///a/i-3"));
    view.nodes.insert("n-1".into(), node("i-1"));
    view.nodes.insert("n-2".into(), node("i-2"));
    let names = claim_node_names(&view);
    assert_eq!(names.get("unnamed"), Some(&"n-1"), "found by its instance");
    assert_eq!(names.get("named"), Some(&"n-2"), "status.nodeName");
    assert_eq!(names.get("unregistered"), None, "no Node yet");
}

/// Generated story 47951144's shape: a pod that never was pending while the wave lasted
/// (created and bound between two observations: a Deployment scaled up where kube-scheduler
/// found room at once) bound to one of the wave's claims takes its room from the wave's
/// pods, as the pass that plans around the cluster's nodes with their bound pods sees it
/// (core `provisioner.go` `Schedule`, l. 375). The released claim `spare` (an m.large,
/// 1900m) holds a 1800m pod from outside the wave seen at 30 s: the wave's three 200m pods
/// need another node, so a claim created at 60 s is judged against `spare`, one more and
/// one per pool, 3. Before the binding was seen (20 s), `spare` holds them: 2. Once the pod
/// is gone from the wave's record, its room is free again.
#[test]
fn a_pod_from_outside_the_wave_takes_room_on_the_claim_it_was_bound_to() {
    let secs = Duration::from_secs;
    let mut w = wave(3);
    let instances = launched("spare", "m.large");
    w.released = BTreeMap::from([("spare".to_string(), secs(10))]);
    let pod = Arc::new(json!({"metadata": {"namespace": "default", "name": "outside"}, "spec": {}}));
    let requests = Resources { cpu: 1800.0, memory: 0.25 * GIB, pods: 1.0 };
    let outside = ForeignPod { claim: "spare".into(), seen: secs(30), key: "default/outside".into(), pod, requests };
    w.foreign.insert("uid-outside".into(), outside);
    let live: BTreeSet<String> = ["spare", "new"].map(String::from).into();
    let none = BTreeMap::new();
    assert_eq!(wave_bound(&w, AT, &live, &instances, &none, 1), 3, "spare is full: one more, plus one");
    assert_eq!(wave_bound(&w, secs(20), &live, &instances, &none, 1), 2, "binding later: spare holds them");
    w.foreign.clear();
    assert_eq!(wave_bound(&w, AT, &live, &instances, &none, 1), 2, "the pod left: spare holds them");
}
