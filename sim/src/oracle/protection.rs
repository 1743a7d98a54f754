//! What protects a running pod from a voluntary disruption, as Kubernetes and Karpenter
//! define it, written apart from the controller: a PodDisruptionBudget's required healthy
//! pods and an active `karpenter.sh/do-not-disrupt`.

use std::time::Duration;

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
}
