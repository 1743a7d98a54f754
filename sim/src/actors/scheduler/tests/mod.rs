//! Scheduler tests: one file per filter plugin, scoring, the cache's accounting, and property
//! tests against a naive from-scratch checker. This file holds the builders they share.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    NodeSpec, NodeStatus, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity, PodSpec, PreferredSchedulingTerm,
    ResourceRequirements, Taint, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

mod accounting;
mod inter_pod_affinity;
mod node_affinity;
mod node_filters;
mod properties;
mod resources_fit;
mod scoring;
mod topology_spread;

fn q(s: &str) -> Quantity {
    Quantity(s.to_string())
}

fn node(name: &str, zone: &str, cpu: &str, memory: &str, pods: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(ZONE.to_string(), zone.to_string()), (HOST.to_string(), name.to_string())])),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_string(), q(cpu)),
                ("memory".to_string(), q(memory)),
                ("pods".to_string(), q(pods)),
                ("ephemeral-storage".to_string(), q("20Gi")),
            ])),
            ..Default::default()
        }),
    }
}

fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.to_string()),
        effect: effect.into(),
        time_added: None,
    }
}

fn with_taint(mut n: Node, t: Taint) -> Node {
    n.spec.get_or_insert_with(Default::default).taints.get_or_insert_with(Vec::new).push(t);
    n
}

fn with_label(mut n: Node, k: &str, v: &str) -> Node {
    n.metadata.labels.get_or_insert_with(BTreeMap::new).insert(k.into(), v.into());
    n
}

fn pod(name: &str, cpu: &str, memory: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_string(), q(cpu)), ("memory".to_string(), q(memory))])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn spec(p: &mut Pod) -> &mut PodSpec {
    p.spec.as_mut().unwrap()
}

fn selector(app: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
        match_expressions: None,
    }
}

fn scheduler(nodes: &[Node]) -> Scheduler {
    let mut s = Scheduler::new(SchedulerConfig::default());
    for n in nodes {
        s.cache_mut().upsert_node(n);
    }
    s
}

fn rng() -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(7)
}

/// Schedules and assumes; returns the node or the failure message.
fn place(s: &mut Scheduler, p: &Pod, r: &mut ChaCha8Rng) -> Result<String, String> {
    match s.schedule(p, r) {
        Ok(res) => {
            s.assume(p, &res.node);
            Ok(res.node)
        }
        Err(e) => Err(e.message()),
    }
}

fn three_zones() -> Vec<Node> {
    (0..6).map(|i| node(&format!("n{i}"), &format!("z{}", i % 3), "8", "16Gi", "50")).collect()
}

fn anti(p: &mut Pod, app: &str, key: &str) {
    spec(p).affinity.get_or_insert_with(Default::default).pod_anti_affinity = Some(PodAntiAffinity {
        required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
            label_selector: Some(selector(app)),
            topology_key: key.into(),
            ..Default::default()
        }]),
        preferred_during_scheduling_ignored_during_execution: None,
    });
}

fn labelled(mut p: Pod, app: &str) -> Pod {
    p.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
    p
}
