//! Which pods the provisioner acts on (karpenter-behaviour.md §2.1, core pkg/utils/pod).

use k8s_openapi::api::core::v1::Pod;

/// How long a terminating pod is still waited on: after this it counts as stuck.
pub const STUCK_TERMINATING_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether the pod is owned by a DaemonSet.
pub fn is_daemon_set_pod(pod: &Pod) -> bool {
    pod.metadata.owner_references.iter().flatten().any(|o| o.kind == "DaemonSet" && o.controller == Some(true))
}

/// Whether the pod is a static (mirror) pod, owned by its Node.
pub fn is_static_pod(pod: &Pod) -> bool {
    pod.metadata.owner_references.iter().flatten().any(|o| o.kind == "Node")
        || pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"))
}

/// Whether the pod has finished (Succeeded or Failed).
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
}

/// Whether the pod is being deleted.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// kube-scheduler has marked it `PodScheduled=False, reason=Unschedulable`.
pub fn failed_to_schedule(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|conditions| {
        conditions
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
    })
}

/// Karpenter's `IsProvisionable`: unschedulable per kube-scheduler, not bound, not preempting,
/// not a DaemonSet or static pod, and not finished or deleting.
pub fn is_provisionable(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    failed_to_schedule(pod)
        && spec.and_then(|s| s.node_name.as_deref()).is_none_or(str::is_empty)
        && pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref()).is_none_or(str::is_empty)
        && !is_daemon_set_pod(pod)
        && !is_static_pod(pod)
        && !is_terminal(pod)
        && !is_terminating(pod)
}

/// Karpenter's `IsReschedulable`: a pod on a deleting node that must land elsewhere: active (a
/// terminating StatefulSet pod still counts), not a DaemonSet or static pod.
pub fn is_reschedulable(pod: &Pod) -> bool {
    let stateful = pod.metadata.owner_references.iter().flatten().any(|o| o.kind == "StatefulSet");
    !is_terminal(pod) && (!is_terminating(pod) || stateful) && !is_daemon_set_pod(pod) && !is_static_pod(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("pod")
    }

    fn unschedulable() -> serde_json::Value {
        serde_json::json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]})
    }

    #[test]
    fn provisionable_needs_kube_scheduler_to_have_failed_first() {
        let fresh = pod(
            serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": []}, "status": {"phase": "Pending"}}),
        );
        assert!(!is_provisionable(&fresh));
        let failed =
            pod(serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": []}, "status": unschedulable()}));
        assert!(is_provisionable(&failed));
    }

    #[test]
    fn daemonset_preempting_and_bound_pods_are_not_provisionable() {
        let ds = pod(serde_json::json!({"metadata": {"name": "a", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u", "controller": true}]},
            "spec": {"containers": []}, "status": unschedulable()}));
        assert!(!is_provisionable(&ds));
        let mut status = unschedulable();
        status["nominatedNodeName"] = "n1".into();
        let preempting =
            pod(serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": []}, "status": status}));
        assert!(!is_provisionable(&preempting));
        let bound = pod(
            serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": [], "nodeName": "n"}, "status": unschedulable()}),
        );
        assert!(!is_provisionable(&bound));
    }

    #[test]
    fn terminating_statefulset_pods_still_reschedule() {
        let sts = pod(
            serde_json::json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s", "uid": "u", "controller": true}]},
            "spec": {"containers": []}, "status": {"phase": "Running"}}),
        );
        assert!(is_reschedulable(&sts));
        let rs = pod(serde_json::json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": []}, "status": {"phase": "Running"}}));
        assert!(!is_reschedulable(&rs));
    }
}
