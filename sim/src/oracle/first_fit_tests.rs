//! The packing's rules, each beside a case where it does not apply.

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
        planned: Resources { cpu, memory: memory_gib * GIB, pods: 58.0 },
        labels: labels.into(),
    }
}

fn pod(spec: Value) -> Value {
    json!({"metadata": {"namespace": "default", "name": "p"}, "spec": spec})
}

fn demands<'a>(keys: &'a [String], pod: &'a Value, cpu: f64) -> Vec<Demand<'a>> {
    keys.iter().map(|k| Demand { key: k, pod, requests: Resources { cpu, memory: 0.25 * GIB, pods: 1.0 } }).collect()
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
        used: Resources::default(),
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
    assert_eq!(first_fit_decreasing(&demands(&keys, &spread, 200.0), &supply(&pool), &Resources::default()).total(), 3);
    let anti = pod(json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOSTNAME_KEY, "labelSelector": {"matchLabels": {"app": "w"}}}
    ]}}}));
    assert_eq!(first_fit_decreasing(&demands(&keys, &anti, 200.0), &supply(&pool), &Resources::default()).total(), 6);
}

/// Six pods binding host port 8080 need six nodes though one holds them all; on distinct
/// host IPs, or with no port, they share one (core `pkg/scheduling/hostportusage.go`).
#[test]
fn colliding_host_ports_keep_pods_off_one_node() {
    let pool = json!({"metadata": {"name": "default"}, "spec": {}});
    let keys: Vec<String> = (0..6).map(|i| format!("default/p{i}")).collect();
    let ported = pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}));
    let packing = first_fit_decreasing(&demands(&keys, &ported, 500.0), &supply(&pool), &Resources::default());
    assert_eq!(packing.total(), 6);
    let plain = pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}));
    let packing = first_fit_decreasing(&demands(&keys, &plain, 500.0), &supply(&pool), &Resources::default());
    assert_eq!(packing.total(), 1);
    let a = pod(json!({"containers": [{"name": "c", "ports": [{"hostPort": 8080, "hostIP": "10.0.0.1"}]}]}));
    let b = pod(json!({"containers": [{"name": "c", "ports": [{"hostPort": 8080, "hostIP": "10.0.0.2"}]}]}));
    let (ka, kb) = ("default/a".to_string(), "default/b".to_string());
    let mut both = demands(std::slice::from_ref(&ka), &a, 500.0);
    both.extend(demands(std::slice::from_ref(&kb), &b, 500.0));
    assert_eq!(first_fit_decreasing(&both, &supply(&pool), &Resources::default()).total(), 1);
}

#[test]
fn a_pod_no_offering_allows_is_unplaceable() {
    let pool = json!({"metadata": {"name": "default"}, "spec": {}});
    let keys = vec!["default/gpu".to_string()];
    let p = pod(json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}));
    let packing = first_fit_decreasing(&demands(&keys, &p, 200.0), &supply(&pool), &Resources::default());
    assert_eq!((packing.total(), packing.unplaceable, packing.limited), (0, 1, 0), "no limit to blame");
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
    let packing = first_fit_in_batches(std::slice::from_ref(&all), &supply(&pool), &Resources::default(), &[unknown]);
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

/// A preferred pod anti-affinity on the zone sends each pod of the group to a zone with none
/// while one is left (Karpenter holds preferences as required until they fail, core
/// `scheduling/scheduler.go` l. 84): three pods take three nodes, where the same pods
/// without the term share one. A fourth finds no free zone: the preference is relaxed
/// (`scheduling/preferences.go` l. 117) and it joins a node; were the term required, it
/// would stay unplaced.
#[test]
fn zone_anti_affinity_takes_one_zone_per_pod_until_none_is_left() {
    let pool = json!({"metadata": {"name": "default"}, "spec": {}});
    let term = json!({"topologyKey": ZONE_KEY, "labelSelector": {"matchLabels": {"app": "w"}}});
    let preferred = pod(json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": term}
    ]}}}));
    let required =
        pod(json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}));
    let plain = pod(json!({}));
    let three: Vec<String> = (0..3).map(|i| format!("default/p{i}")).collect();
    let four: Vec<String> = (0..4).map(|i| format!("default/p{i}")).collect();
    let pack = |keys: &[String], p: &Value| {
        let packing = first_fit_decreasing(&demands(keys, p, 200.0), &supply(&pool), &Resources::default());
        (packing.total(), packing.unplaceable)
    };
    assert_eq!(pack(&three, &plain), (1, 0), "no term: one node");
    assert_eq!(pack(&three, &preferred), (3, 0), "one zone each");
    assert_eq!(pack(&four, &preferred), (3, 0), "the fourth relaxes the preference");
    assert_eq!(pack(&four, &required), (3, 1), "a required term leaves the fourth unplaced");
}

/// A preferred anti-affinity on the hostname keeps the group one per node, as the required
/// one does: a new node always satisfies it, so Karpenter never relaxes it.
#[test]
fn preferred_hostname_anti_affinity_keeps_one_pod_per_node() {
    let pool = json!({"metadata": {"name": "default"}, "spec": {}});
    let keys: Vec<String> = (0..4).map(|i| format!("default/p{i}")).collect();
    let p = pod(json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"topologyKey": HOSTNAME_KEY, "labelSelector": {"matchLabels": {"app": "w"}}}}
    ]}}}));
    assert_eq!(first_fit_decreasing(&demands(&keys, &p, 200.0), &supply(&pool), &Resources::default()).total(), 4);
}

/// One pool of an m.large (2 vCPU), m.2xlarge (8) and m.4xlarge (16), with a CPU limit.
fn limited(limit: &str) -> Value {
    json!({"metadata": {"name": "default"}, "spec": {"limits": {"cpu": limit}}})
}

fn sized(pool: &Value) -> Vec<PoolSupply<'_>> {
    let with_cpu = |mut o: Offering, vcpu: &str| {
        let mut labels = (*o.labels).clone();
        labels.insert("karpenter.k8s.aws/instance-cpu".into(), vcpu.into());
        labels.insert("karpenter.k8s.aws/instance-memory".into(), "0".into());
        o.labels = labels.into();
        o
    };
    vec![PoolSupply {
        name: "default".into(),
        pool,
        offerings: vec![
            with_cpu(offering("m.large", "a", 1900.0, 7.0, 0.1), "2"),
            with_cpu(offering("m.2xlarge", "a", 7900.0, 30.0, 0.4), "8"),
            with_cpu(offering("m.4xlarge", "a", 15_800.0, 60.0, 0.8), "16"),
        ],
        used: Resources::default(),
    }]
}

/// Three pods one per node (hostname anti-affinity) under an 18-CPU limit: the first pass
/// opens an m.4xlarge for the first (the largest type within the limit, taken off the
/// remainder as core `subtractMax` does) and an m.large for the second, and has no room
/// left for the third; the next pass counts the first node at the m.large it shrinks to
/// (`updateRemainingResources`) and opens a node for the third. Under a 4-CPU limit the
/// next pass has nothing left either: the third pod is unplaceable, not a node more.
#[test]
fn a_pool_limit_defers_pods_to_a_pass_that_counts_the_nodes_in_flight_at_their_size() {
    let keys: Vec<String> = (0..3).map(|i| format!("default/p{i}")).collect();
    let p = pod(json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOSTNAME_KEY, "labelSelector": {"matchLabels": {"app": "w"}}}
    ]}}}));
    let pool = limited("18");
    let packing = first_fit_decreasing(&demands(&keys, &p, 1000.0), &sized(&pool), &Resources::default());
    assert_eq!((packing.total(), packing.unplaceable), (3, 0));
    let tight = limited("4");
    let packing = first_fit_decreasing(&demands(&keys, &p, 1000.0), &sized(&tight), &Resources::default());
    assert_eq!((packing.total(), packing.unplaceable), (2, 1));
    assert_eq!(packing.limited, 1, "an offering would host it but for the limit");
    let mut used = sized(&pool);
    used[0].used = Resources { cpu: 16_000.0, memory: 0.0, pods: 0.0 };
    let packing = first_fit_decreasing(&demands(&keys, &p, 1000.0), &used, &Resources::default());
    assert_eq!((packing.total(), packing.unplaceable), (1, 2), "the pool's nodes before the wave count too");
}

/// Twenty 1-CPU pods under a 20-CPU limit: one pass opens an m.4xlarge (15 pods) and two
/// m.large (one pod each, the most the limit leaves), and the other three pods find no
/// room in any later pass: the limit never adds nodes beyond what it allows.
#[test]
fn a_pool_at_its_limit_gets_no_node_more() {
    let keys: Vec<String> = (0..20).map(|i| format!("default/p{i}")).collect();
    let p = pod(json!({}));
    let pool = limited("20");
    let packing = first_fit_decreasing(&demands(&keys, &p, 1000.0), &sized(&pool), &Resources::default());
    assert_eq!((packing.total(), packing.unplaceable, packing.limited), (3, 3, 3));
    let free = json!({"metadata": {"name": "default"}, "spec": {}});
    let packing = first_fit_decreasing(&demands(&keys, &p, 1000.0), &sized(&free), &Resources::default());
    assert_eq!((packing.total(), packing.unplaceable), (2, 0), "no limit: 15 + 5 on two m.4xlarge");
    assert_eq!(packing.limited, 0, "without limits the bound allows no claim more");
}
