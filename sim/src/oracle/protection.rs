//! What protects a running pod from a voluntary disruption, as Kubernetes and Karpenter
//! define it, written apart from the controller: a PodDisruptionBudget's required healthy
//! pods and an active `karpenter.sh/do-not-disrupt`.

use std::time::Duration;

use dovetail_fakecloud::FakeCloud;
use dovetail_world::SimDuration;
use serde_json::Value;

use super::view::sim_time;

/// Healthy pods a PDB spec requires out of `expected` (policy/v1 rounding: percentages
/// round up).
pub fn desired_healthy(spec: &Value, expected: i64) -> Option<i64> {
    let scaled = |v: &Value| -> Option<i64> {
        match v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => match s.strip_suffix('%') {
                Some(p) => p.parse::<f64>().ok().map(|p| (p / 100.0 * expected as f64).ceil() as i64),
                None => s.parse().ok(),
            },
            _ => None,
        }
    };
    if let Some(min) = spec.get("minAvailable").filter(|v| !v.is_null()) {
        return scaled(min);
    }
    if let Some(max) = spec.get("maxUnavailable").filter(|v| !v.is_null()) {
        return scaled(max).map(|m| (expected - m).max(0));
    }
    None
}

/// `karpenter.sh/do-not-disrupt: "true"`, or a duration not yet past the pod's start.
pub fn do_not_disrupt_active(pod: &Value, now: Duration) -> bool {
    match pod.pointer("/metadata/annotations/karpenter.sh~1do-not-disrupt").and_then(Value::as_str) {
        Some("true") => true,
        Some(d) => match (SimDuration::parse(d), sim_time(&pod["status"]["startTime"])) {
            (Ok(d), Some(start)) => start + d.0 > now,
            _ => false,
        },
        None => false,
    }
}

/// How long a system or instance status check must have failed before Karpenter acts on it
/// (aws/karpenter-provider-aws v1.14.1 `pkg/providers/instancestatus/instancestatus.go`
/// l. 45, `UnhealthyThreshold`).
pub const FAILED_CHECK_FORCES_AFTER: Duration = Duration::from_secs(120);

/// Whether the cloud's own status checks make Karpenter's termination of the instance behind
/// `provider_id` forceful at `at`: its system or instance check (not the attached-EBS one) has
/// failed for [`FAILED_CHECK_FORCES_AFTER`]. Karpenter then sets the NodeClaim's termination
/// timestamp to now before deleting it (aws `pkg/controllers/interruption/utils.go`
/// l. 117–124 and 174–186, `ForcefulTermination`), so the drain deletes every pod at once
/// whatever its PodDisruptionBudgets and do-not-disrupt say (core
/// `pkg/controllers/node/termination/terminator/terminator.go`, `DeleteExpiringPods`). Read
/// from the cloud's record of the instance, never from the annotation the controller writes.
pub fn failed_check_forces(cloud: &FakeCloud, provider_id: &str, at: Duration) -> bool {
    let Some(id) = provider_id.rsplit('/').next().filter(|id| !id.is_empty()) else { return false };
    cloud.instances().filter(|i| i.id == id).any(|i| {
        let checks = &i.status_checks;
        [checks.instance, checks.system].into_iter().flatten().any(|since| since + FAILED_CHECK_FORCES_AFTER <= at)
    })
}

/// A NodePool's `spec.template.spec.terminationGracePeriod`, if set and valid.
pub fn termination_grace_period(pool: &Value) -> Option<Duration> {
    let text = pool.pointer("/spec/template/spec/terminationGracePeriod")?.as_str()?;
    SimDuration::parse(text).ok().map(|d| d.0)
}

/// When a node being deleted since `deleting_since` must be gone: its deletion time plus the
/// pool's terminationGracePeriod (core `pkg/controllers/nodeclaim/lifecycle/controller.go`,
/// `annotateTerminationGracePeriodTerminationTime`: `DeletionTimestamp + TerminationGracePeriod`).
/// Computed from the claim's own deletionTimestamp, never from the annotation the controller
/// writes, so a wrong annotation cannot excuse anything.
pub fn termination_deadline(deleting_since: Option<Duration>, pool: Option<&Value>) -> Option<Duration> {
    Some(deleting_since? + termination_grace_period(pool?)?)
}

/// A pod's `terminationGracePeriodSeconds` (Kubernetes defaults it to 30 s).
pub fn pod_grace(pod: &Value) -> Duration {
    Duration::from_secs(pod["spec"]["terminationGracePeriodSeconds"].as_u64().unwrap_or(30))
}

/// Whether the node's terminationGracePeriod forces `pod` off at `now`: Karpenter deletes a
/// pod its grace period before the node's deadline, whatever its PDBs and do-not-disrupt say
/// (core `pkg/controllers/node/termination/terminator/terminator.go`, `DeleteExpiringPods` and
/// `podDeleteTimeWithGracePeriod`), and terminates the instance at the deadline. One second
/// of slack covers the observation tick.
pub fn forced_off(pod: &Value, deadline: Option<Duration>, now: Duration) -> bool {
    deadline.is_some_and(|d| now + pod_grace(pod) + Duration::from_secs(1) >= d)
}

/// Whether a pod tolerates `karpenter.sh/disrupted:NoSchedule`: Karpenter neither drains nor
/// waits for such pods (core `pkg/utils/pod/scheduling.go`, `IsDrainable`,
/// `ToleratesDisruptedNoScheduleTaint`), so they go down with their node by design.
pub fn tolerates_disrupted_taint(pod: &Value) -> bool {
    let Some(tolerations) = pod.pointer("/spec/tolerations").and_then(Value::as_array) else { return false };
    tolerations.iter().any(|t| {
        let key = t["key"].as_str().unwrap_or_default();
        let effect_ok = matches!(t["effect"].as_str(), None | Some("") | Some("NoSchedule"));
        let key_ok = match t["operator"].as_str() {
            Some("Exists") => key.is_empty() || key == "karpenter.sh/disrupted",
            _ => key == "karpenter.sh/disrupted" && t["value"].as_str().unwrap_or_default().is_empty(),
        };
        effect_ok && key_ok
    })
}

/// Whether a pod is a mirror (static) pod, owned by its Node: Karpenter cannot drain it.
pub fn owned_by_node(pod: &Value) -> bool {
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|o| o.iter().any(|o| o["kind"] == "Node"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pdb_budgets_round_percentages_up() {
        assert_eq!(desired_healthy(&json!({"minAvailable": 2}), 5), Some(2));
        assert_eq!(desired_healthy(&json!({"minAvailable": "50%"}), 5), Some(3));
        assert_eq!(desired_healthy(&json!({"maxUnavailable": 1}), 5), Some(4));
        assert_eq!(desired_healthy(&json!({"maxUnavailable": "30%"}), 5), Some(3));
        assert_eq!(desired_healthy(&json!({}), 5), None);
    }

    #[test]
    fn do_not_disrupt_durations_expire() {
        let pod = |v: &str| {
            json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": v}},
                   "status": {"startTime": "2026-01-01T00:00:00Z"}})
        };
        assert!(do_not_disrupt_active(&pod("true"), Duration::from_secs(1 << 30)));
        assert!(!do_not_disrupt_active(&pod("false"), Duration::ZERO));
    }

    #[test]
    fn the_deadline_is_the_claims_deletion_plus_the_pools_grace_period() {
        let pool = json!({"spec": {"template": {"spec": {"terminationGracePeriod": "10m"}}}});
        let deadline = termination_deadline(Some(Duration::from_secs(100)), Some(&pool));
        assert_eq!(deadline, Some(Duration::from_secs(700)));
        assert_eq!(termination_deadline(None, Some(&pool)), None, "not deleting");
        assert_eq!(termination_deadline(Some(Duration::ZERO), Some(&json!({}))), None, "no grace period");
        let pod = json!({"spec": {"terminationGracePeriodSeconds": 60}});
        assert!(!forced_off(&pod, deadline, Duration::from_secs(638)));
        assert!(forced_off(&pod, deadline, Duration::from_secs(640)));
    }

    #[test]
    fn only_a_toleration_of_the_disrupted_no_schedule_taint_counts() {
        let pod = |t: Value| json!({"spec": {"tolerations": [t]}});
        assert!(tolerates_disrupted_taint(&pod(json!({"operator": "Exists"}))));
        assert!(tolerates_disrupted_taint(&pod(json!({"key": "karpenter.sh/disrupted", "operator": "Exists"}))));
        assert!(!tolerates_disrupted_taint(&pod(json!({"key": "karpenter.sh/disrupted", "effect": "NoExecute"}))));
        assert!(!tolerates_disrupted_taint(&pod(json!({"key": "other", "operator": "Exists"}))));
        assert!(!tolerates_disrupted_taint(&json!({"spec": {}})));
    }

    /// The cloud's failed system or instance check makes the termination forceful after
    /// 2 minutes, on that instance only; a failed attached-EBS check never does (Karpenter
    /// ignores it), nor an instance that is not the node's.
    #[test]
    fn only_a_system_or_instance_check_failed_two_minutes_forces_the_termination() {
        use dovetail_fakecloud::{
            Catalog, CloudConfig, LaunchTemplateRef, LaunchTemplateSpec, RunInstancesRequest, StatusCheck,
        };
        let mut cloud = FakeCloud::new(
            CloudConfig::new(1, dovetail_world::clock::sim_epoch()),
            Catalog::load("us-east-1").expect("the shipped catalog"),
        );
        let ami = cloud
            .images()
            .parameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
            .expect("ami")
            .to_string();
        cloud
            .create_launch_template(LaunchTemplateSpec { name: "lt".into(), image_id: Some(ami), ..Default::default() })
            .expect("lt");
        let ids = cloud
            .run_instances(&RunInstancesRequest {
                instance_type: Some("m5.large".into()),
                min_count: 2,
                max_count: 2,
                availability_zone: Some("us-east-1a".into()),
                launch_template: Some(LaunchTemplateRef::Name("lt".into())),
                ..Default::default()
            })
            .expect("launched")
            .instance_ids;
        let (system, ebs) = (format!("aws:///us-east-1a/{}", ids[0]), format!("aws:///us-east-1a/{}", ids[1]));
        cloud.advance_to(Duration::from_secs(100));
        cloud.set_status_check(&ids[0], StatusCheck::System, true).expect("known");
        cloud.set_status_check(&ids[1], StatusCheck::AttachedEbs, true).expect("known");
        assert!(!failed_check_forces(&cloud, &system, Duration::from_secs(219)), "failing for 119 s");
        assert!(failed_check_forces(&cloud, &system, Duration::from_secs(220)));
        assert!(!failed_check_forces(&cloud, &ebs, Duration::from_secs(3600)), "the EBS check");
        assert!(!failed_check_forces(&cloud, "aws:///us-east-1a/i-unknown", Duration::from_secs(3600)));
    }
}
