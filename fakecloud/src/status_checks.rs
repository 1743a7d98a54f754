//! EC2 status checks as `DescribeInstanceStatus` reports them: each running instance has an
//! instance check (its own reachability), a system check (the host's) and an attached-EBS
//! check, each `ok`/`passed` or, while a fault holds it, `impaired`/`failed` with the time it
//! failed (`impairedSince`). An instance that is not running reports `not-applicable`.
//! Scheduled events (`instance-retirement`, `system-maintenance`, ...) are listed beside them
//! ([`crate::instance::ScheduledEvent`]).

use std::time::Duration;

use crate::error::{ApiError, ApiResult};
use crate::tags::Filter;

/// The scheduled event codes EC2 defines (`EventCode`).
pub const EVENT_CODES: [&str; 5] =
    ["instance-reboot", "system-reboot", "system-maintenance", "instance-retirement", "instance-stop"];

/// One of the status checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StatusCheck {
    /// `instanceStatus`.
    Instance,
    /// `systemStatus`.
    System,
    /// `attachedEbsStatus`.
    AttachedEbs,
}

impl StatusCheck {
    /// Every check, in the order a response lists them.
    pub const ALL: [StatusCheck; 3] = [Self::System, Self::Instance, Self::AttachedEbs];

    /// The check's name in scenarios and errors (`instance`, `system`, `attachedEbs`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Instance => "instance",
            Self::System => "system",
            Self::AttachedEbs => "attachedEbs",
        }
    }

    /// Parses [`StatusCheck::name`].
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The response element (`instanceStatus`, `systemStatus`, `attachedEbsStatus`).
    pub fn element(self) -> &'static str {
        match self {
            Self::Instance => "instanceStatus",
            Self::System => "systemStatus",
            Self::AttachedEbs => "attachedEbsStatus",
        }
    }

    /// The filter name prefix (`instance-status`, `system-status`, `attached-ebs-status`).
    pub fn filter_prefix(self) -> &'static str {
        match self {
            Self::Instance => "instance-status",
            Self::System => "system-status",
            Self::AttachedEbs => "attached-ebs-status",
        }
    }
}

/// Since when each check has failed (`None`: passing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusChecks {
    /// The instance check.
    pub instance: Option<Duration>,
    /// The system check.
    pub system: Option<Duration>,
    /// The attached EBS check.
    pub attached_ebs: Option<Duration>,
}

impl StatusChecks {
    /// Since when `check` has failed.
    pub fn impaired_since(&self, check: StatusCheck) -> Option<Duration> {
        match check {
            StatusCheck::Instance => self.instance,
            StatusCheck::System => self.system,
            StatusCheck::AttachedEbs => self.attached_ebs,
        }
    }

    /// Fails `check` from `now` (keeping an earlier failure's time), or passes it again.
    pub fn set(&mut self, check: StatusCheck, impaired: bool, now: Duration) {
        let slot = match check {
            StatusCheck::Instance => &mut self.instance,
            StatusCheck::System => &mut self.system,
            StatusCheck::AttachedEbs => &mut self.attached_ebs,
        };
        *slot = if impaired { Some(slot.unwrap_or(now)) } else { None };
    }

    /// Whether any check fails.
    pub fn any_impaired(&self) -> bool {
        StatusCheck::ALL.iter().any(|c| self.impaired_since(*c).is_some())
    }

    /// The summary status (`ok`, `impaired`, `not-applicable`) and the reachability detail
    /// status (`passed`, `failed`, `not-applicable`) of `check` on an instance that is
    /// `running` or not, and since when it failed.
    pub fn report(&self, check: StatusCheck, running: bool) -> (&'static str, &'static str, Option<Duration>) {
        if !running {
            return ("not-applicable", "not-applicable", None);
        }
        match self.impaired_since(check) {
            Some(since) => ("impaired", "failed", Some(since)),
            None => ("ok", "passed", None),
        }
    }
}

/// The filter names DescribeInstanceStatus accepts here; any other is refused by name.
pub const FILTER_NAMES: [&str; 12] = [
    "availability-zone",
    "instance-state-name",
    "instance-state-code",
    "instance-status.status",
    "instance-status.reachability",
    "system-status.status",
    "system-status.reachability",
    "attached-ebs-status.status",
    "attached-ebs-status.reachability",
    "event.code",
    "event.instance-event-id",
    "event.description",
];

/// Refuses a filter whose name DescribeInstanceStatus does not know, as EC2 does.
///
/// # Errors
/// `InvalidParameterValue` naming the filter.
pub fn check_filters(filters: &[Filter]) -> ApiResult<()> {
    match filters.iter().find(|f| !FILTER_NAMES.contains(&f.name.as_str())) {
        Some(f) => Err(ApiError::invalid_parameter(format!("The filter '{}' is invalid", f.name))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_keeps_its_first_failure_time_and_clears() {
        let mut c = StatusChecks::default();
        c.set(StatusCheck::System, true, Duration::from_secs(5));
        c.set(StatusCheck::System, true, Duration::from_secs(9));
        assert_eq!(c.impaired_since(StatusCheck::System), Some(Duration::from_secs(5)));
        assert_eq!(c.impaired_since(StatusCheck::Instance), None);
        assert!(c.any_impaired());
        c.set(StatusCheck::System, false, Duration::from_secs(10));
        assert!(!c.any_impaired());
    }

    #[test]
    fn unknown_filters_are_refused_by_name() {
        let ok = [Filter { name: "system-status.status".into(), values: vec!["impaired".into()] }];
        assert!(check_filters(&ok).is_ok());
        let bad = [Filter { name: "system-status.health".into(), values: vec![] }];
        let e = check_filters(&bad).unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("InvalidParameterValue", "The filter 'system-status.health' is invalid")
        );
        assert_eq!(StatusCheck::parse("attachedEbs"), Some(StatusCheck::AttachedEbs));
        assert_eq!(StatusCheck::parse("ebs"), None);
    }
}
