//! NodeResourcesFit: requests must fit allocatable minus what bound pods request; scoring by
//! LeastAllocated (default) or MostAllocated over CPU and memory, weight 1 each.

use super::{Code, MAX_NODE_SCORE, Plugin, Status};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;

/// The scoring strategy of NodeResourcesFit (`scoringStrategy.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScoringStrategy {
    /// Prefer emptier nodes (kube-scheduler default): spreads load.
    #[default]
    LeastAllocated,
    /// Prefer fuller nodes: bin-packs, as many autoscaling setups configure.
    MostAllocated,
}

/// The Filter. Reasons are collected for every short resource, as kube-scheduler does; the
/// status is `UnschedulableAndUnresolvable` when a request exceeds the node's whole allocatable
/// (no preemption could make room).
pub fn filter(pod: &PodFacts, node: &NodeInfo) -> Option<Status> {
    let mut reasons = Vec::new();
    let mut unresolvable = false;
    if node.pods.len() as i64 + 1 > node.allocatable.pods {
        reasons.push("Too many pods".to_string());
    }
    let r = &pod.requests;
    if !r.is_zero() {
        let a = &node.allocatable;
        let used = &node.requested;
        let mut check = |name: &str, want: i64, have: i64, used: i64| {
            if want > 0 && want > have - used {
                reasons.push(format!("Insufficient {name}"));
                unresolvable |= want > have;
            }
        };
        check("cpu", r.milli_cpu, a.milli_cpu, used.milli_cpu);
        check("memory", r.memory, a.memory, used.memory);
        check("ephemeral-storage", r.ephemeral_storage, a.ephemeral_storage, used.ephemeral_storage);
        for (name, want) in &r.scalar {
            let have = a.scalar.get(name).copied().unwrap_or(0);
            let in_use = used.scalar.get(name).copied().unwrap_or(0);
            check(name, *want, have, in_use);
        }
    }
    if reasons.is_empty() {
        return None;
    }
    Some(Status {
        plugin: Plugin::NodeResourcesFit,
        code: if unresolvable { Code::UnschedulableAndUnresolvable } else { Code::Unschedulable },
        reasons,
    })
}

fn least_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

fn most_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

/// The Score (already 0..=100): node `NonZeroRequested` plus the pod's non-zero request, per
/// resource, averaged with weight 1 for CPU and memory.
pub fn score(pod: &PodFacts, node: &NodeInfo, strategy: ScoringStrategy) -> i64 {
    let f = match strategy {
        ScoringStrategy::LeastAllocated => least_requested,
        ScoringStrategy::MostAllocated => most_requested,
    };
    let pairs = [
        (node.non_zero_requested.milli_cpu + pod.requests_non_zero.milli_cpu, node.allocatable.milli_cpu),
        (node.non_zero_requested.memory + pod.requests_non_zero.memory, node.allocatable.memory),
    ];
    // Resources the node does not have are left out of the average, as kube-scheduler does.
    let (sum, weights) = pairs
        .iter()
        .filter(|(_, capacity)| *capacity != 0)
        .fold((0i64, 0i64), |(sum, weights), &(requested, capacity)| (sum + f(requested, capacity), weights + 1));
    if weights == 0 { 0 } else { sum / weights }
}
