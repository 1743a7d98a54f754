//! NodeResourcesBalancedAllocation: prefer nodes whose CPU and memory fractions stay close.

use super::MAX_NODE_SCORE;
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;

/// Whether the plugin scores this pod at all: kube-scheduler skips pods requesting nothing
/// (kubernetes/kubernetes#129138), which then score 0 everywhere.
pub fn applies(pod: &PodFacts) -> bool {
    pod.requests.milli_cpu != 0 || pod.requests.memory != 0
}

/// The Score (already 0..=100): `(1 - |fcpu - fmem| / 2) * 100` over actual requests.
pub fn score(pod: &PodFacts, node: &NodeInfo) -> i64 {
    let mut fractions = Vec::with_capacity(2);
    for (requested, allocatable) in [
        (node.requested.milli_cpu + pod.requests.milli_cpu, node.allocatable.milli_cpu),
        (node.requested.memory + pod.requests.memory, node.allocatable.memory),
    ] {
        if allocatable == 0 {
            continue;
        }
        fractions.push((requested as f64 / allocatable as f64).min(1.0));
    }
    let std = match fractions.as_slice() {
        [a, b] => ((a - b) / 2.0).abs(),
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}
