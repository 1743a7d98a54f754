//! EC2 instance status checks and scheduled events, as the instance status controller reads
//! them (aws/karpenter-provider-aws v1.14.1 `pkg/providers/instancestatus/instancestatus.go`).
//!
//! [`list`] asks `DescribeInstanceStatus` three times, once per filter set (l. 47–62): EC2 ANDs
//! filters of different names, and an instance is of interest when its instance check is
//! impaired, OR its system check is, OR it has a scheduled event of one of five codes. Each
//! set is paged through to the end (`NewDescribeInstanceStatusPaginator`, l. 99–113) and an
//! instance is kept the first time it is seen. [`health_status`] then keeps only the failed
//! details (l. 119–136): a failed instance or system check counts once it has been impaired
//! for [`UNHEALTHY_THRESHOLD`]; every listed scheduled event counts at once (upstream treats
//! them all as degraded hardware, and stamps them impaired "now", l. 181–188); EBS checks are
//! read but never count ("ignored until we can differentiate which volumes affect the node",
//! l. 40), so an instance whose only failure is EBS is not listed.

use std::collections::BTreeSet;
use std::time::Duration;

use aws_sdk_ec2::primitives::DateTime;
use aws_sdk_ec2::types::{Filter, InstanceStatus, InstanceStatusDetails, InstanceStatusSummary, StatusType};

use super::errors::classify;
use crate::cloudprovider::CloudError;
use crate::runtime::clock::elapsed;

/// How long an instance or system check must have failed before it counts
/// (`instancestatus.go` l. 45, `UnhealthyThreshold = 120 * time.Second`).
pub const UNHEALTHY_THRESHOLD: Duration = Duration::from_secs(120);

/// The scheduled event codes that make an instance unhealthy (l. 55–61).
pub const EVENT_CODES: [&str; 5] =
    ["instance-reboot", "system-reboot", "system-maintenance", "instance-retirement", "instance-stop"];

/// The AWS error code of a caller without `ec2:DescribeInstanceStatus`: the controller logs it
/// and stops polling (`instancestatus_controller.go` l. 97–100).
pub const UNAUTHORIZED_OPERATION: &str = "UnauthorizedOperation";

/// Which status a detail comes from (upstream `Category`, l. 31–42). The order is the order
/// the controller handles categories in: the forceful ones first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// The instance's own reachability check.
    InstanceStatus,
    /// The host's (AWS side) reachability check.
    SystemStatus,
    /// A scheduled maintenance event.
    EventStatus,
    /// Attached EBS volumes' check (read, never acted on).
    EbsStatus,
}

impl Category {
    /// Upstream's string, the `category` label of `karpenter_interruption_instance_status_unhealthy_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InstanceStatus => "InstanceStatus",
            Self::SystemStatus => "SystemStatus",
            Self::EventStatus => "EventStatus",
            Self::EbsStatus => "EBSStatus",
        }
    }
}

/// One check or event of one instance (upstream `Details`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Details {
    /// Where it comes from.
    pub category: Category,
    /// The check name (`reachability`) or the event code.
    pub name: String,
    /// Since when it failed (`now` for events; `None` when EC2 gave no time).
    pub impaired_since: Option<jiff::Timestamp>,
    /// Whether it failed (events always count as failed).
    pub failed: bool,
}

/// One unhealthy instance (upstream `HealthStatus`): its failing details and the earliest time
/// any of them failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthStatus {
    /// `i-…`
    pub instance_id: String,
    /// The earliest `impaired_since` of the details.
    pub impaired_since: jiff::Timestamp,
    /// The details that count, in the order EC2 listed them (instance, system, EBS, events).
    pub details: Vec<Details>,
}

impl HealthStatus {
    /// The distinct categories of the details, forceful ones first.
    pub fn categories(&self) -> BTreeSet<Category> {
        self.details.iter().map(|d| d.category).collect()
    }
}

/// The three filter sets (l. 52–62).
pub fn filter_sets() -> [Filter; 3] {
    [
        Filter::builder().name("instance-status.status").values("impaired").build(),
        Filter::builder().name("system-status.status").values("impaired").build(),
        Filter::builder().name("event.code").set_values(Some(EVENT_CODES.map(str::to_owned).to_vec())).build(),
    ]
}

/// Lists the instances EC2 reports unhealthy, as of `now`.
///
/// # Errors
/// The first failed page's EC2 error ([`UNAUTHORIZED_OPERATION`] as its reason when the
/// caller lacks the permission).
pub async fn list(ec2: &aws_sdk_ec2::Client, now: jiff::Timestamp) -> Result<Vec<HealthStatus>, CloudError> {
    let mut seen = BTreeSet::new();
    let mut statuses = Vec::new();
    for filter in filter_sets() {
        let pages: Vec<_> = ec2
            .describe_instance_status()
            .filters(filter)
            .into_paginator()
            .send()
            .try_collect()
            .await
            .map_err(|e| classify(&e))?;
        for status in pages.iter().flat_map(|p| p.instance_statuses().iter()) {
            let Some(id) = status.instance_id() else { continue };
            if seen.insert(id.to_owned()) {
                statuses.push(status.clone());
            }
        }
    }
    Ok(statuses.iter().filter_map(|s| health_status(s, now)).collect())
}

/// What one `InstanceStatus` item says, if anything counts (l. 117–141, 146–197).
pub fn health_status(status: &InstanceStatus, now: jiff::Timestamp) -> Option<HealthStatus> {
    let summary = |s: Option<&InstanceStatusSummary>, category: Category| -> Vec<Details> {
        s.map(|s| s.details().iter().map(|d| check_details(d, category)).collect()).unwrap_or_default()
    };
    let mut details = summary(status.instance_status(), Category::InstanceStatus);
    details.extend(summary(status.system_status(), Category::SystemStatus));
    if let Some(ebs) = status.attached_ebs_status() {
        details.extend(ebs.details().iter().map(|d| Details {
            category: Category::EbsStatus,
            name: d.name().map(|n| n.as_str().to_owned()).unwrap_or_default(),
            impaired_since: d.impaired_since().and_then(timestamp),
            failed: d.status() == Some(&StatusType::Failed),
        }));
    }
    details.extend(status.events().iter().map(|e| Details {
        category: Category::EventStatus,
        name: e.code().map(|c| c.as_str().to_owned()).unwrap_or_default(),
        impaired_since: Some(now),
        failed: true,
    }));
    details.retain(|d| counts(d, now));
    let impaired_since = details.iter().filter_map(|d| d.impaired_since).min()?;
    Some(HealthStatus { instance_id: status.instance_id()?.to_owned(), impaired_since, details })
}

fn check_details(d: &InstanceStatusDetails, category: Category) -> Details {
    Details {
        category,
        name: d.name().map(|n| n.as_str().to_owned()).unwrap_or_default(),
        impaired_since: d.impaired_since().and_then(timestamp),
        failed: d.status() == Some(&StatusType::Failed),
    }
}

/// Whether a detail counts (l. 120–133). Upstream reads a missing `ImpairedSince` as Go's zero
/// time, long past the threshold: such a failed check counts.
fn counts(d: &Details, now: jiff::Timestamp) -> bool {
    if !d.failed || d.category == Category::EbsStatus {
        return false;
    }
    if d.category == Category::EventStatus {
        return true;
    }
    d.impaired_since.is_none_or(|since| elapsed(since, now) >= UNHEALTHY_THRESHOLD)
}

fn timestamp(t: &DateTime) -> Option<jiff::Timestamp> {
    jiff::Timestamp::new(t.secs(), i32::try_from(t.subsec_nanos()).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use aws_sdk_ec2::types::{
        EbsStatusDetails, EbsStatusSummary, EventCode, InstanceStatusEvent, StatusName, SummaryStatus,
    };

    use super::*;
    use crate::runtime::clock::add;

    fn at(secs: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + secs).expect("time")
    }

    fn check(status: StatusType, since: Option<jiff::Timestamp>) -> InstanceStatusSummary {
        let mut d = InstanceStatusDetails::builder().name(StatusName::Reachability).status(status);
        if let Some(s) = since {
            d = d.impaired_since(DateTime::from_secs(s.as_second()));
        }
        InstanceStatusSummary::builder().status(SummaryStatus::Impaired).details(d.build()).build()
    }

    fn retirement() -> InstanceStatusEvent {
        InstanceStatusEvent::builder().code(EventCode::InstanceRetirement).build()
    }

    /// Upstream `providers/instancestatus/suite_test.go` "should return all impairment
    /// details": failed instance and system checks an hour old and an event count, EBS does not.
    #[test]
    fn failed_checks_past_the_threshold_and_events_count_and_ebs_does_not() {
        let impaired = at(0);
        let now = add(impaired, Duration::from_secs(3600));
        let ebs = EbsStatusSummary::builder()
            .status(SummaryStatus::Impaired)
            .details(
                EbsStatusDetails::builder()
                    .name(StatusName::Reachability)
                    .status(StatusType::Failed)
                    .impaired_since(DateTime::from_secs(impaired.as_second()))
                    .build(),
            )
            .build();
        let status = InstanceStatus::builder()
            .instance_id("i-0123456789")
            .instance_status(check(StatusType::Failed, Some(impaired)))
            .system_status(check(StatusType::Failed, Some(impaired)))
            .attached_ebs_status(ebs)
            .events(retirement())
            .build();
        let health = health_status(&status, now).expect("unhealthy");
        assert_eq!(health.instance_id, "i-0123456789");
        assert_eq!(health.impaired_since, impaired);
        let got: Vec<(Category, &str, Option<jiff::Timestamp>)> =
            health.details.iter().map(|d| (d.category, d.name.as_str(), d.impaired_since)).collect();
        assert_eq!(
            got,
            [
                (Category::InstanceStatus, "reachability", Some(impaired)),
                (Category::SystemStatus, "reachability", Some(impaired)),
                (Category::EventStatus, "instance-retirement", Some(now)),
            ]
        );
    }

    /// "should not return healthy statuses", and an EBS-only failure is not listed either.
    #[test]
    fn healthy_initializing_and_ebs_only_instances_are_not_listed() {
        let now = at(3600);
        let initializing = InstanceStatus::builder()
            .instance_id("i-1")
            .instance_status(check(StatusType::Initializing, None))
            .system_status(check(StatusType::Passed, None))
            .build();
        assert_eq!(health_status(&initializing, now), None);
        let ebs_only = InstanceStatus::builder()
            .instance_id("i-2")
            .attached_ebs_status(
                EbsStatusSummary::builder()
                    .details(EbsStatusDetails::builder().status(StatusType::Failed).build())
                    .build(),
            )
            .build();
        assert_eq!(health_status(&ebs_only, now), None);
    }

    /// "should return scheduled maintenance events even when other statuses are healthy".
    #[test]
    fn a_scheduled_event_counts_at_once() {
        let now = at(0);
        let status = InstanceStatus::builder()
            .instance_id("i-3")
            .instance_status(check(StatusType::InsufficientData, None))
            .events(retirement())
            .build();
        let health = health_status(&status, now).expect("unhealthy");
        assert_eq!(health.categories().into_iter().collect::<Vec<_>>(), [Category::EventStatus]);
        assert_eq!(health.impaired_since, now);
    }

    /// A failed check counts from [`UNHEALTHY_THRESHOLD`] after it failed, not a second before.
    #[test]
    fn a_failed_check_counts_only_after_the_threshold() {
        let impaired = at(0);
        let status = InstanceStatus::builder()
            .instance_id("i-4")
            .system_status(check(StatusType::Failed, Some(impaired)))
            .build();
        let just_before = add(impaired, UNHEALTHY_THRESHOLD - Duration::from_secs(1));
        assert_eq!(health_status(&status, just_before), None);
        let health = health_status(&status, add(impaired, UNHEALTHY_THRESHOLD)).expect("unhealthy");
        assert_eq!(health.categories().into_iter().collect::<Vec<_>>(), [Category::SystemStatus]);
    }

    #[test]
    fn three_filter_sets_or_the_conditions() {
        let sets = filter_sets();
        let names: Vec<&str> = sets.iter().map(|f| f.name().unwrap_or_default()).collect();
        assert_eq!(names, ["instance-status.status", "system-status.status", "event.code"]);
        assert_eq!(filter_sets()[2].values(), EVENT_CODES);
        assert!(Category::InstanceStatus < Category::EventStatus, "forceful categories are handled first");
    }
}
