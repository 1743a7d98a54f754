//! One multi-node consolidation decision (candidates, budgets, the binary search over up to
//! 100 candidates, each probe a full scheduling simulation) on a synthetic cluster of 500 and
//! 2,000 on-demand nodes: m5.8xlarge nodes each running three 1-vCPU pods (~40% utilised), so
//! consolidation has real work to do.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dovetail_controller::apis::nodepool::DisruptionReason;
use dovetail_controller::disruption::budgets::allowed_disruptions;
use dovetail_controller::disruption::candidates::{DisruptionClass, get_candidates};
use dovetail_controller::disruption::input::DisruptionOptions;
use dovetail_controller::disruption::multi_node::multi_node;
use dovetail_controller::disruption::report::Report;
use dovetail_controller::disruption::synthetic::{SyntheticCluster, fake_types, node_pool};
use dovetail_controller::runtime::clock::ManualClock;

fn cluster(nodes: usize) -> SyntheticCluster {
    let epoch: jiff::Timestamp = "2026-01-05T12:00:00Z".parse().expect("timestamp");
    let mut c = SyntheticCluster::new(epoch);
    let pool = node_pool(
        "default",
        serde_json::json!({"consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}),
        serde_json::json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]),
    );
    c.add_pool(pool, fake_types(20));
    for n in 0..nodes {
        let name = format!("node-{n:05}");
        let zone = ["test-zone-1", "test-zone-2", "test-zone-3"][n % 3];
        c.add_node(&name, "default", "m5.8xlarge", zone, "on-demand");
        for p in 0..3 {
            c.add_pod(&format!("pod-{n:05}-{p}"), &format!("app-{}", n % 7), Some(&name), 1000, 1024);
        }
    }
    c
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("multi_node_consolidation");
    group.sample_size(10);
    for nodes in [500, 2000] {
        let synthetic = cluster(nodes);
        let now = jiff::Timestamp::from_second(synthetic.epoch.as_second() + 3600).expect("time");
        let input = synthetic.input(now, DisruptionOptions::default());
        let clock = ManualClock::new(now);
        group.bench_with_input(BenchmarkId::from_parameter(nodes), &input, |b, input| {
            b.iter(|| {
                let (candidates, _) = get_candidates(input, DisruptionClass::Graceful);
                let mut budgets = allowed_disruptions(input, DisruptionReason::Underutilized);
                let command =
                    multi_node(input, &candidates, &mut budgets, &clock, &BTreeMap::new(), &mut Report::default());
                black_box(command.map(|c| c.candidates.len()))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
