//! Bindings per wall second of the kube-scheduler model: 30,000 pods of mixed shapes (a fifth
//! with a hard zone spread, a tenth with a soft one, all owned by ReplicaSets so the default
//! spreading applies) onto 1,000 nodes of three sizes across three zones. The second case adds
//! required hostname anti-affinity to a tenth of the deployments.
//!
//! Run with `cargo bench -p dovetail-sim --bench scheduler`; criterion reports the throughput
//! in elements (bindings) per second.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use dovetail_sim::actors::scheduler::{Scheduler, SchedulerConfig};
use k8s_openapi::api::core::v1::{
    Affinity, Container, Node, NodeSpec, NodeStatus, Pod, PodAffinityTerm, PodAntiAffinity, PodSpec,
    ResourceRequirements, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const NODES: usize = 1_000;
const PODS: usize = 30_000;
const DEPLOYMENTS: usize = 300;

fn q(s: String) -> Quantity {
    Quantity(s)
}

fn node(i: usize) -> Node {
    // m5.2xlarge-, m5.4xlarge- and m5.8xlarge-like allocatable.
    let (cpu, memory_gi, pods) = [(7910, 28, 58), (15890, 58, 234), (31850, 120, 234)][i % 3];
    let name = format!("ip-10-0-{}-{}.ec2.internal", i / 250, i % 250);
    Node {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(BTreeMap::from([
                ("kubernetes.io/hostname".to_string(), name),
                ("topology.kubernetes.io/zone".to_string(), format!("us-east-1{}", ["a", "b", "c"][(i / 3) % 3])),
                ("topology.kubernetes.io/region".to_string(), "us-east-1".to_string()),
                (
                    "node.kubernetes.io/instance-type".to_string(),
                    ["m5.2xlarge", "m5.4xlarge", "m5.8xlarge"][i % 3].to_string(),
                ),
            ])),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_string(), q(format!("{cpu}m"))),
                ("memory".to_string(), q(format!("{memory_gi}Gi"))),
                ("pods".to_string(), q(pods.to_string())),
                ("ephemeral-storage".to_string(), q("18Gi".to_string())),
            ])),
            ..Default::default()
        }),
    }
}

fn pod(i: usize, rng: &mut ChaCha8Rng, anti_affinity: bool) -> Pod {
    let deployment = rng.random_range(0..DEPLOYMENTS);
    let (cpu, memory) =
        [("100m", "128Mi"), ("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("50m", "64Mi")][deployment % 5];
    let app = format!("app-{deployment}");
    let mut spread = Vec::new();
    if deployment % 5 == 0 {
        spread.push(("DoNotSchedule", 1));
    } else if deployment % 10 == 1 {
        spread.push(("ScheduleAnyway", 1));
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{app}-{i}")),
            namespace: Some("default".into()),
            labels: Some(BTreeMap::from([("app".to_string(), app.clone())])),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: app.clone(),
                uid: format!("uid-{app}"),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([
                        ("cpu".to_string(), q(cpu.to_string())),
                        ("memory".to_string(), q(memory.to_string())),
                    ])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            topology_spread_constraints: (!spread.is_empty()).then(|| {
                spread
                    .iter()
                    .map(|(when, skew)| TopologySpreadConstraint {
                        max_skew: *skew,
                        topology_key: "topology.kubernetes.io/zone".into(),
                        when_unsatisfiable: when.to_string(),
                        label_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([("app".to_string(), app.clone())])),
                            match_expressions: None,
                        }),
                        ..Default::default()
                    })
                    .collect()
            }),
            affinity: (anti_affinity && deployment % 10 == 3).then(|| Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                        label_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([("app".to_string(), app.clone())])),
                            match_expressions: None,
                        }),
                        topology_key: "kubernetes.io/hostname".into(),
                        ..Default::default()
                    }]),
                    preferred_during_scheduling_ignored_during_execution: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn cluster() -> Scheduler {
    let mut s = Scheduler::new(SchedulerConfig::default());
    for i in 0..NODES {
        s.cache_mut().upsert_node(&node(i));
    }
    for d in 0..DEPLOYMENTS {
        let app = format!("app-{d}");
        s.cache_mut().set_controller_selector(
            &format!("uid-{app}"),
            Some(&LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), app)])),
                match_expressions: None,
            }),
        );
    }
    s
}

/// Schedules and binds every pod; returns how many were bound.
fn schedule_all(mut s: Scheduler, pods: &[Pod]) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut bound = 0;
    for p in pods {
        if let Ok(res) = s.schedule(p, &mut rng) {
            s.assume(p, &res.node);
            bound += 1;
        }
    }
    bound
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduler");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Elements(PODS as u64));
    for (name, anti_affinity) in [("30k_pods_1k_nodes", false), ("30k_pods_1k_nodes_anti_affinity", true)] {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let pods: Vec<Pod> = (0..PODS).map(|i| pod(i, &mut rng, anti_affinity)).collect();
        let base = cluster();
        let bound = schedule_all(base.clone(), &pods);
        println!("{name}: bound {bound} of {PODS} pods onto {NODES} nodes");
        group.bench_function(name, |b| {
            b.iter_batched(|| base.clone(), |s| black_box(schedule_all(s, &pods)), BatchSize::LargeInput)
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
