//! `faults: [{nodeConditions: ...}]` — kubelets that report a Node condition unhealthy (a
//! hung container runtime, a kernel problem the EKS node monitoring agent reports), which is
//! what Karpenter's NodeRepair acts on. Which nodes (a count or a fraction, optionally of one
//! NodePool), which condition and status; the entry's `at` and `for` say from when and for how
//! long (a `for` cut at, or absent meaning, `phases.faultsUntil`).
//!
//! ```yaml
//! faults:
//!   - at: 5m
//!     for: 40m
//!     nodeConditions: {nodePool: web, fraction: 0.2, condition: Ready, status: "False"}
//! ```

use serde::{Deserialize, Serialize};

use super::error::FieldError;

/// The statuses a Node condition can have.
pub const STATUSES: &[&str] = &["True", "False", "Unknown"];

/// Which nodes report which condition.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeConditionsSpec {
    /// Only Nodes of this NodePool (label `karpenter.sh/nodepool`); default every Karpenter
    /// Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
    /// This many of the matching Nodes (set this or `fraction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// This share of the matching Nodes, rounded up (set this or `count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// The condition type (`Ready`, or a node monitoring agent condition such as
    /// `KernelReady`); default `Ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Its status while the fault lasts: `False` (default), `Unknown` or `True`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl NodeConditionsSpec {
    /// The condition type, defaulted.
    pub fn condition(&self) -> String {
        self.condition.clone().unwrap_or_else(|| "Ready".into())
    }

    /// The status, defaulted.
    pub fn status(&self) -> String {
        self.status.clone().unwrap_or_else(|| "False".into())
    }

    /// Checks the selection and the condition; `kind` is the entry's key for error paths.
    pub fn validate(&self, kind: &str) -> Result<(), FieldError> {
        super::selection::validate(kind, "nodes", self.node_pool.as_deref(), self.count, self.fraction)?;
        if let Some(c) = &self.condition
            && (c.is_empty() || !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '.' || ch == '/' || ch == '-'))
        {
            return Err(FieldError::new(format!("{kind}.condition"), format!("`{c}` is not a condition type")));
        }
        if let Some(s) = &self.status
            && !STATUSES.contains(&s.as_str())
        {
            return Err(FieldError::new(
                format!("{kind}.status"),
                format!("unknown status `{s}`, expected one of {}", STATUSES.join(", ")),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(count: Option<u32>, fraction: Option<f64>) -> NodeConditionsSpec {
        NodeConditionsSpec { count, fraction, ..NodeConditionsSpec::default() }
    }

    #[test]
    fn needs_exactly_one_selection() {
        assert!(spec(Some(2), None).validate("nodeConditions").is_ok());
        assert!(spec(None, Some(0.2)).validate("nodeConditions").is_ok());
        for bad in [spec(None, None), spec(Some(1), Some(0.5))] {
            let e = bad.validate("nodeConditions").unwrap_err();
            assert!(e.to_string().contains("exactly one of `count` and `fraction`"), "{e}");
        }
        assert!(spec(Some(0), None).validate("nodeConditions").unwrap_err().to_string().contains("count"));
        for f in [0.0, 1.5, f64::NAN] {
            let e = spec(None, Some(f)).validate("nodeConditions").unwrap_err();
            assert!(e.to_string().contains("nodeConditions.fraction"), "{e}");
        }
    }

    #[test]
    fn checks_status_condition_and_pool() {
        let mut s = spec(Some(1), None);
        assert_eq!((s.condition(), s.status()), ("Ready".to_owned(), "False".to_owned()));
        s.status = Some("false".into());
        let e = s.validate("nodeConditions").unwrap_err().to_string();
        assert!(e.contains("nodeConditions.status") && e.contains("True, False, Unknown"), "{e}");
        s.status = Some("Unknown".into());
        s.condition = Some("Kernel Ready".into());
        assert!(s.validate("nodeConditions").unwrap_err().to_string().contains("nodeConditions.condition"));
        s.condition = Some("KernelReady".into());
        s.node_pool = Some(" ".into());
        assert!(s.validate("nodeConditions").unwrap_err().to_string().contains("nodeConditions.nodePool"));
    }
}
