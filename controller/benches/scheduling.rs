//! Karpenter's scheduling benchmark shape (core `scheduling_benchmark_test.go`,
//! karpenter-behaviour.md §7; BENCHMARKS.md P1): one NodePool over 400 instance types
//! (1..400 vCPU), pods split evenly over generic / zone spread / hostname spread / zone
//! self-affinity / hostname anti-affinity, CPU {100,250,500,1000,1500}m × memory
//! {100,256,512,1024,2048,4096}Mi drawn with seed 42. Criterion reports elements/s = pods/s.
//!
//! `DOVETAIL_BENCH_POD_COUNTS=1000,150000` overrides the sizes (default 1k, 5k, 20k).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dovetail_controller::apis::labels;
use dovetail_controller::cloudprovider::fake;
use dovetail_controller::scheduling::resources::MIB;
use dovetail_controller::scheduling::{
    AffinityTerm, LabelSelector, Namespaces, NodePoolInput, Resources, SchedulablePod, SchedulingInput, TopologySpread,
    schedule,
};
use rand::{Rng, SeedableRng};

const CPU_MILLI: [i64; 5] = [100, 250, 500, 1000, 1500];
const MEMORY_MIB: [i64; 6] = [100, 256, 512, 1024, 2048, 4096];
const STYLES: [&str; 5] = ["generic", "zone-spread", "hostname-spread", "zone-affinity", "hostname-anti-affinity"];

fn term(key: &str, app: &str) -> AffinityTerm {
    AffinityTerm {
        topology_key: key.to_owned(),
        selector: LabelSelector::labels([("app", app)]),
        namespaces: Namespaces::Listed(["default".to_owned()].into()),
    }
}

fn spread(key: &str, app: &str) -> TopologySpread {
    TopologySpread {
        topology_key: key.to_owned(),
        max_skew: 1,
        min_domains: None,
        schedule_anyway: false,
        selector: LabelSelector::labels([("app", app)]),
        honor_node_affinity: true,
        honor_node_taints: false,
    }
}

/// Karpenter's "diverse" pods: five equal groups, one per constraint style.
fn diverse_pods(count: usize) -> Vec<SchedulablePod> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    (0..count)
        .map(|i| {
            let style = STYLES[i * STYLES.len() / count.max(1)];
            let cpu = CPU_MILLI[rng.random_range(0..CPU_MILLI.len())];
            let memory = MEMORY_MIB[rng.random_range(0..MEMORY_MIB.len())];
            let mut pod = SchedulablePod::new("default", &format!("pod-{i}"), Resources::cpu_memory(cpu, memory * MIB));
            pod.created_nanos = i as i128;
            pod.shape.labels.insert("app".to_owned(), style.to_owned());
            match style {
                "zone-spread" => pod.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, style)),
                "hostname-spread" => pod.shape.spreads.push(spread(labels::HOSTNAME_LABEL, style)),
                "zone-affinity" => pod.shape.affinity.push(term(labels::TOPOLOGY_ZONE_LABEL, style)),
                "hostname-anti-affinity" => pod.shape.anti_affinity.push(term(labels::HOSTNAME_LABEL, style)),
                _ => {}
            }
            pod
        })
        .collect()
}

fn snapshot(pod_count: usize) -> SchedulingInput {
    let node_pool = serde_json::from_value(serde_json::json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {"template": {"spec": {
            "requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        }}}
    }))
    .expect("valid NodePool");
    SchedulingInput {
        pods: diverse_pods(pod_count),
        node_pools: vec![NodePoolInput { node_pool, instance_types: fake::instance_types(400) }],
        ..SchedulingInput::default()
    }
}

fn pod_counts() -> Vec<usize> {
    std::env::var("DOVETAIL_BENCH_POD_COUNTS")
        .ok()
        .map(|text| text.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 5_000, 20_000])
}

fn scheduling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduling");
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_millis(500));
    group.measurement_time(std::time::Duration::from_secs(4));
    for pod_count in pod_counts() {
        let input = snapshot(pod_count);
        let results = schedule(&input);
        eprintln!(
            "{pod_count} pods -> {} nodeclaims, {} pod errors",
            results.new_node_claims.len(),
            results.pod_errors.len()
        );
        group.throughput(Throughput::Elements(pod_count as u64));
        group.bench_with_input(BenchmarkId::new("diverse_pods", pod_count), &input, |b, input| {
            b.iter(|| black_box(schedule(black_box(input))));
        });
    }
    group.finish();
}

criterion_group!(benches, scheduling);
criterion_main!(benches);
