//! Why a NodeClaim is being deleted, as the report counts it.

use std::time::Duration;

use serde_json::Value;

use crate::apiserver::store::Store;

/// Why a NodeClaim is being deleted: its `DisruptionReason` condition (Underutilized,
/// Empty, Drifted), a disruption, interruption or instance-status Event about it or its node
/// (`Unhealthy`), the controller's liveness deletion (`registration_timeout`,
/// `launch_timeout`, as upstream's `karpenter_nodeclaims_disrupted_total` labels it:
/// kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/liveness.go` l. 54-55,
/// 154), expiry, or
/// `Other` (garbage collection, launch failure, a deleted NodePool, a user).
pub fn disruption_reason(store: &Store, claim: &Value, now: Duration) -> String {
    let conditions = claim.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(c) = conditions.iter().find(|c| c["type"] == "DisruptionReason" && c["status"] == "True")
        && let Some(r) = c["reason"].as_str()
    {
        return r.to_string();
    }
    let name = claim["metadata"]["name"].as_str().unwrap_or_default();
    let node = claim.pointer("/status/nodeName").and_then(Value::as_str).unwrap_or_default();
    if let Some(rt) = store.registry().get("", "events") {
        let about_claim = |e: &&std::sync::Arc<Value>| {
            let about = e.pointer("/involvedObject/name").and_then(Value::as_str).unwrap_or_default();
            about == name || (!node.is_empty() && about == node)
        };
        // The claim's own liveness deletion (launch or registration timeout) comes first: the
        // instance it terminates then reports a state change, which is not an interruption.
        if let Some(e) = store.iter(&rt.key(), None).filter(about_claim).find(|e| e["reason"] == "Liveness") {
            let message = e["message"].as_str().unwrap_or_default();
            return message.rsplit_once(": ").map_or("Liveness", |(_, r)| r).to_string();
        }
        for e in store.iter(&rt.key(), None).filter(about_claim) {
            let reason = e["reason"].as_str().unwrap_or_default();
            if reason == "DisruptionTerminating" || reason == "Disrupting" {
                // Karpenter: "Disrupting NodeClaim: Underutilized/Delete".
                let message = e["message"].as_str().unwrap_or_default();
                if let Some(r) = message.rsplit_once(": ").map(|(_, r)| r.split('/').next().unwrap_or(r)) {
                    return r.to_string();
                }
            }
            if matches!(
                reason,
                "SpotInterrupted"
                    | "ScheduledChange"
                    | "InstanceStopping"
                    | "InstanceTerminating"
                    | "CapacityReservationInterrupted"
            ) {
                return "Interrupted".into();
            }
            if reason == "InstanceUnhealthy" {
                // aws `pkg/controllers/interruption/utils.go` l. 193–194: a failed status check
                // or a scheduled event EC2 reported through DescribeInstanceStatus.
                return "Unhealthy".into();
            }
        }
    }
    if let Some(expire) = claim.pointer("/spec/expireAfter").and_then(Value::as_str)
        && let Ok(d) = dovetail_world::SimDuration::parse(expire)
        && let Some(created) = claim.pointer("/metadata/creationTimestamp").and_then(Value::as_str)
        && let Ok(created) = created.parse::<jiff::Timestamp>()
    {
        let epoch = dovetail_world::clock::sim_epoch().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let created = Duration::from_secs(created.as_second().max(0) as u64).saturating_sub(epoch);
        if created + d.0 <= now + Duration::from_secs(1) {
            return "Expired".into();
        }
    }
    "Other".into()
}
