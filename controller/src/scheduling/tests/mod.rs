//! Scheduler tests: one file per family of rules, with shared fixtures here.

mod base;
mod properties;
mod rules;
mod topology_rules;

use std::sync::Arc;

use super::pod::{AffinityTerm, LabelSelector, Namespaces, SchedulablePod, TopologySpread};
use super::requirements::Requirements;
use super::resources::{MIB, Resources};
use super::snapshot::{NodePoolInput, SchedulingInput};
use crate::apis::NodePool;
use crate::cloudprovider::{InstanceType, fake};

/// A NodePool from JSON `spec` fields merged over a minimal valid template.
pub(super) fn node_pool(name: &str, extra: serde_json::Value) -> NodePool {
    let mut value = serde_json::json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        }}}
    });
    merge(&mut value["spec"], extra);
    serde_json::from_value(value).expect("valid NodePool")
}

fn merge(target: &mut serde_json::Value, patch: serde_json::Value) {
    match (target, patch) {
        (serde_json::Value::Object(target), serde_json::Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key).or_insert(serde_json::Value::Null), value);
            }
        }
        (target, patch) => *target = patch,
    }
}

pub(super) fn pool_input(pool: NodePool, types: Vec<Arc<InstanceType>>) -> NodePoolInput {
    NodePoolInput { node_pool: pool, instance_types: types }
}

/// A snapshot with one default pool over `types` and the given pods.
pub(super) fn input(types: Vec<Arc<InstanceType>>, pods: Vec<SchedulablePod>) -> SchedulingInput {
    SchedulingInput {
        pods,
        node_pools: vec![pool_input(node_pool("default", serde_json::json!({})), types)],
        ..SchedulingInput::default()
    }
}

pub(super) fn pod(name: &str, cpu_milli: i64, memory_mib: i64) -> SchedulablePod {
    SchedulablePod::new("default", name, Resources::cpu_memory(cpu_milli, memory_mib * MIB))
}

pub(super) fn labelled(mut pod: SchedulablePod, labels: &[(&str, &str)]) -> SchedulablePod {
    pod.shape.labels = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    pod
}

pub(super) fn selector(app: &str) -> LabelSelector {
    LabelSelector::labels([("app", app)])
}

pub(super) fn spread(key: &str, app: &str) -> TopologySpread {
    TopologySpread {
        topology_key: key.to_owned(),
        max_skew: 1,
        min_domains: None,
        schedule_anyway: false,
        selector: selector(app),
        honor_node_affinity: true,
        honor_node_taints: false,
    }
}

pub(super) fn term(key: &str, app: &str) -> AffinityTerm {
    AffinityTerm {
        topology_key: key.to_owned(),
        selector: selector(app),
        namespaces: Namespaces::Listed(["default".to_owned()].into()),
    }
}

pub(super) fn requirements(json: serde_json::Value) -> Requirements {
    Requirements::from_node_selector(&serde_json::from_value::<Vec<_>>(json).expect("requirements"))
}

/// Small, readable catalog: 1, 2, 4, 8, 16 vCPU `m` types plus core's fake shapes beyond.
pub(super) fn types(count: usize) -> Vec<Arc<InstanceType>> {
    fake::instance_types(count)
}
