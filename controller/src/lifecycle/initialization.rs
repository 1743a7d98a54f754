//! Initialization (core nodeclaim/lifecycle/initialization.go): a registered node is initialized
//! once it is Ready, its startup taints and the well-known ephemeral taints are gone, and every
//! extended resource the claim requested shows up in allocatable. There is no timeout.

use k8s_openapi::api::core::v1::Node;

use crate::apis::{NodeClaim, labels};
use crate::provisioning::input::node_is_ready;
use crate::scheduling::Resources;

/// Whether a taint is one of the node lifecycle's ephemeral taints.
pub fn is_ephemeral_taint(key: &str, value: Option<&str>) -> bool {
    key == labels::NODE_NOT_READY_TAINT_KEY
        || key == labels::NODE_UNREACHABLE_TAINT_KEY
        || key == labels::UNREGISTERED_TAINT_KEY
        || (key == labels::NODE_UNINITIALIZED_TAINT_KEY && value.is_none_or(|v| v == "true"))
        || key.starts_with(labels::READINESS_TAINT_PREFIX)
}

/// Why the node is not initialized yet, or `None` when it is.
pub fn not_initialized_reason(claim: &NodeClaim, node: &Node) -> Option<String> {
    if !node_is_ready(node) {
        return Some("node is not ready".into());
    }
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref()).cloned().unwrap_or_default();
    if let Some(t) = taints.iter().find(|t| is_ephemeral_taint(&t.key, t.value.as_deref())) {
        return Some(format!("ephemeral taint {:?} still present", t.key));
    }
    for startup in claim.spec.startup_taints() {
        if taints.iter().any(|t| t.key == startup.key && t.effect == startup.effect) {
            return Some(format!("startup taint {:?} still present", startup.key));
        }
    }
    let requested = claim
        .spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| Resources::from_resource_list(r).ok())
        .unwrap_or_default();
    let allocatable = node
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| Resources::from_quantities(a).ok())
        .unwrap_or_default();
    for (name, amount) in &requested.extended {
        if *amount > 0 && allocatable.get(name) <= 0 {
            return Some(format!("extended resource {name:?} not registered"));
        }
    }
    None
}

/// Whether the Node already carries `karpenter.sh/initialized: "true"` (then the
/// initialization patch would change nothing, and core sends none: `initialization.go:93-95`).
pub fn has_initialized_label(node: &Node) -> bool {
    node.metadata.labels.as_ref().and_then(|l| l.get(labels::NODE_INITIALIZED_LABEL)).is_some_and(|v| v == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> NodeClaim {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
                     "startupTaints": [{"key": "example.com/startup", "effect": "NoSchedule"}],
                     "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}
        }))
        .expect("claim")
    }

    fn node(taints: serde_json::Value, gpu: &str) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"}, "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "4", "nvidia.com/gpu": gpu}}
        }))
        .expect("node")
    }

    #[test]
    fn waits_for_startup_ephemeral_taints_and_extended_resources() {
        let c = claim();
        let startup = node(serde_json::json!([{"key": "example.com/startup", "effect": "NoSchedule"}]), "1");
        assert!(not_initialized_reason(&c, &startup).unwrap().contains("startup taint"));
        let not_ready = node(serde_json::json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]), "1");
        assert!(not_initialized_reason(&c, &not_ready).unwrap().contains("ephemeral"));
        let no_gpu = node(serde_json::json!([]), "0");
        assert!(not_initialized_reason(&c, &no_gpu).unwrap().contains("nvidia.com/gpu"));
        assert_eq!(not_initialized_reason(&c, &node(serde_json::json!([]), "1")), None);
    }

    #[test]
    fn the_initialized_label_is_patched_only_when_missing() {
        let mut n = node(serde_json::json!([]), "1");
        assert!(!has_initialized_label(&n));
        n.metadata.labels = Some([(labels::NODE_INITIALIZED_LABEL.to_owned(), "true".to_owned())].into());
        assert!(has_initialized_label(&n));
    }
}
