//! Property tests against a naive from-scratch checker.

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
