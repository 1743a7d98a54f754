//! `faults: [{instanceStatus: ...}]` — EC2 reports instances unhealthy in
//! `DescribeInstanceStatus`: failed status checks (the host's `system` check, the instance's own
//! `instance` check, the `attachedEbs` check) and/or scheduled events (`instance-retirement`,
//! `system-maintenance`, ...), which is what Karpenter's instance status controller polls for
//! (aws `pkg/controllers/interruption/instancestatus_controller.go`). Which instances (a count
//! or a fraction of the running instances Karpenter launched, optionally of one NodePool),
//! which checks fail and which events are listed; the entry's `at` and `for` say from when and
//! for how long (a `for` cut at, or absent meaning, `phases.faultsUntil`). The events are only
//! listed by EC2: nothing is published to the interruption queue.
//!
//! ```yaml
//! faults:
//!   - at: 5m
//!     for: 20m
//!     instanceStatus: {nodePool: web, count: 1, checks: [system]}
//!   - at: 12m
//!     for: 10m
//!     instanceStatus: {count: 1, events: [instance-retirement]}
//! ```

use serde::{Deserialize, Serialize};

use super::error::FieldError;
use dovetail_fakecloud::StatusCheck;
use dovetail_fakecloud::status_checks::EVENT_CODES;

/// Which instances fail which checks, or get which events.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InstanceStatusSpec {
    /// Only instances of this NodePool (tag `karpenter.sh/nodepool`); default every instance
    /// Karpenter launched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
    /// This many of the matching instances (set this or `fraction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// This share of the matching instances, rounded up (set this or `count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// The status checks that fail: `system`, `instance`, `attachedEbs`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// The scheduled event codes listed: `instance-reboot`, `system-reboot`,
    /// `system-maintenance`, `instance-retirement`, `instance-stop`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
}

impl InstanceStatusSpec {
    /// Checks the selection, the checks and the event codes; `kind` is the entry's key for
    /// error paths.
    pub fn validate(&self, kind: &str) -> Result<(), FieldError> {
        super::selection::validate(kind, "instances", self.node_pool.as_deref(), self.count, self.fraction)?;
        if self.checks.is_empty() && self.events.is_empty() {
            return Err(FieldError::new(
                kind,
                "set `checks` (failing status checks) and/or `events` (scheduled events)",
            ));
        }
        let check_names: Vec<&str> = StatusCheck::ALL.iter().map(|c| c.name()).collect();
        for (i, c) in self.checks.iter().enumerate() {
            if StatusCheck::parse(c).is_none() {
                return Err(FieldError::new(
                    format!("{kind}.checks[{i}]"),
                    format!("unknown status check `{c}`, expected one of {}", check_names.join(", ")),
                ));
            }
            if self.checks[..i].contains(c) {
                return Err(FieldError::new(format!("{kind}.checks[{i}]"), format!("`{c}` is listed twice")));
            }
        }
        for (i, e) in self.events.iter().enumerate() {
            if !EVENT_CODES.contains(&e.as_str()) {
                return Err(FieldError::new(
                    format!("{kind}.events[{i}]"),
                    format!("unknown scheduled event code `{e}`, expected one of {}", EVENT_CODES.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The failing checks, parsed (call after [`InstanceStatusSpec::validate`]).
    pub fn parsed_checks(&self) -> Vec<StatusCheck> {
        self.checks.iter().filter_map(|c| StatusCheck::parse(c)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(count: Option<u32>, fraction: Option<f64>, checks: &[&str], events: &[&str]) -> InstanceStatusSpec {
        InstanceStatusSpec {
            count,
            fraction,
            checks: checks.iter().map(|s| s.to_string()).collect(),
            events: events.iter().map(|s| s.to_string()).collect(),
            ..InstanceStatusSpec::default()
        }
    }

    fn err(s: &InstanceStatusSpec) -> String {
        s.validate("instanceStatus").unwrap_err().to_string()
    }

    #[test]
    fn needs_exactly_one_selection_and_something_unhealthy() {
        assert!(spec(Some(1), None, &["system"], &[]).validate("instanceStatus").is_ok());
        assert!(spec(None, Some(0.5), &[], &["instance-retirement"]).validate("instanceStatus").is_ok());
        assert!(err(&spec(None, None, &["system"], &[])).contains("exactly one of `count` and `fraction`"));
        assert!(err(&spec(Some(1), Some(0.5), &["system"], &[])).contains("exactly one of"));
        assert!(err(&spec(Some(0), None, &["system"], &[])).contains("instanceStatus.count"));
        assert!(err(&spec(None, Some(1.5), &["system"], &[])).contains("instanceStatus.fraction"));
        assert!(err(&spec(Some(1), None, &[], &[])).contains("set `checks`"));
    }

    #[test]
    fn checks_and_event_codes_are_refused_by_name_and_index() {
        let e = err(&spec(Some(1), None, &["system", "network"], &[]));
        assert!(e.contains("instanceStatus.checks[1]") && e.contains("system, instance, attachedEbs"), "{e}");
        let e = err(&spec(Some(1), None, &["system", "system"], &[]));
        assert!(e.contains("instanceStatus.checks[1]") && e.contains("twice"), "{e}");
        let e = err(&spec(Some(1), None, &[], &["instance-retirement", "reboot"]));
        assert!(e.contains("instanceStatus.events[1]") && e.contains("instance-retirement"), "{e}");
        let mut s = spec(Some(1), None, &["instance"], &[]);
        s.node_pool = Some(String::new());
        assert!(err(&s).contains("instanceStatus.nodePool"));
        s.node_pool = Some("web".into());
        assert_eq!(s.parsed_checks(), [StatusCheck::Instance]);
    }
}
