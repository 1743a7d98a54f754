//! Instances and their lifecycle states.
//!
//! ```text
//! pending --(launch delay)--> running --terminate--> shutting-down --(delay)--> terminated
//!    |                           |                                                  |
//!    +--terminate----------------+--stop (AZ outage)--> stopping --> stopped     (visible ~1 h,
//!                                                                                 then gone)
//! ```

use std::time::Duration;

use crate::capacity::CapacityType;
use crate::status_checks::{StatusCheck, StatusChecks};
use crate::tags::{Filter, Tags};

/// EC2 instance states with their API codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InstanceState {
    /// Booting; not billed yet.
    Pending,
    /// Running and billed.
    Running,
    /// Terminating; billing has stopped.
    ShuttingDown,
    /// Gone, but still listed for a while.
    Terminated,
    /// Stopping (e.g. AZ outage).
    Stopping,
    /// Stopped.
    Stopped,
}

impl InstanceState {
    /// EC2's numeric state code (low byte).
    pub fn code(self) -> u16 {
        match self {
            Self::Pending => 0,
            Self::Running => 16,
            Self::ShuttingDown => 32,
            Self::Terminated => 48,
            Self::Stopping => 64,
            Self::Stopped => 80,
        }
    }

    /// EC2's state name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::ShuttingDown => "shutting-down",
            Self::Terminated => "terminated",
            Self::Stopping => "stopping",
            Self::Stopped => "stopped",
        }
    }

    /// Whether the instance still holds capacity, an IP and quota.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Pending | Self::Running | Self::Stopping | Self::Stopped)
    }
}

/// One instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// `i-…`
    pub id: String,
    /// Instance type name.
    pub instance_type: String,
    /// Zone name.
    pub zone: String,
    /// Zone id.
    pub zone_id: String,
    /// `subnet-…`
    pub subnet_id: String,
    /// `vpc-…`
    pub vpc_id: String,
    /// `ami-…`
    pub image_id: String,
    /// EC2 architecture of the type (`x86_64`/`arm64`).
    pub architecture: String,
    /// On-demand or spot.
    pub capacity_type: CapacityType,
    /// Current state.
    pub state: InstanceState,
    /// When the state was entered.
    pub state_since: Duration,
    /// When the launch was requested.
    pub launch_time: Duration,
    /// When it became running (billing starts).
    pub running_at: Option<Duration>,
    /// When billing stopped (shutting-down or stopping entered).
    pub billing_end: Option<Duration>,
    /// Private IPv4 address.
    pub private_ip: String,
    /// `r-…` of the launch call.
    pub reservation_id: String,
    /// Launch template used, if any.
    pub launch_template_id: Option<String>,
    /// Fleet that launched it, if any.
    pub fleet_id: Option<String>,
    /// Security groups.
    pub security_group_ids: Vec<String>,
    /// Tags.
    pub tags: Tags,
    /// `stateReason` code/message once set (e.g. `Server.SpotInstanceTermination`).
    pub state_reason: Option<(String, String)>,
    /// Set when a spot interruption warning has been issued: the reclaim time.
    pub reclaim_at: Option<Duration>,
    /// Never leaves pending (fault injection).
    pub stuck_pending: bool,
    /// Since when each status check has failed (DescribeInstanceStatus `impaired`).
    pub status_checks: StatusChecks,
    /// Scheduled events DescribeInstanceStatus lists (e.g. `system-maintenance`).
    pub scheduled_events: Vec<ScheduledEvent>,
    /// The capacity reservation (`cr-…`) it was launched into, if any.
    pub capacity_reservation_id: Option<String>,
}

/// The description DescribeInstanceStatus gives every scheduled event.
pub const SCHEDULED_EVENT_DESCRIPTION: &str = "The instance is running on degraded hardware";

/// An EC2 scheduled event on an instance, as DescribeInstanceStatus reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledEvent {
    /// `instance-event-…`
    pub id: String,
    /// `instance-reboot`, `system-reboot`, `system-maintenance`, `instance-retirement`, `instance-stop`.
    pub code: String,
    /// Earliest start.
    pub not_before: Duration,
    /// Latest end.
    pub not_after: Duration,
}

impl Instance {
    /// Whether the instance passes every DescribeInstances filter.
    pub fn matches(&self, filters: &[Filter]) -> bool {
        filters.iter().all(|f| {
            f.match_tags(&self.tags).unwrap_or_else(|| match f.name.as_str() {
                "instance-id" => f.matches(&self.id),
                "instance-state-name" => f.matches(self.state.name()),
                "instance-state-code" => f.matches(&self.state.code().to_string()),
                "instance-type" => f.matches(&self.instance_type),
                "availability-zone" => f.matches(&self.zone),
                "subnet-id" => f.matches(&self.subnet_id),
                "vpc-id" => f.matches(&self.vpc_id),
                "image-id" => f.matches(&self.image_id),
                "private-ip-address" => f.matches(&self.private_ip),
                "reservation-id" => f.matches(&self.reservation_id),
                "capacity-reservation-id" => self.capacity_reservation_id.as_deref().is_some_and(|id| f.matches(id)),
                "instance-lifecycle" => self.capacity_type == CapacityType::Spot && f.matches("spot"),
                "architecture" => f.matches(&self.architecture),
                _ => false,
            })
        })
    }

    /// What DescribeInstanceStatus says of one status check (see
    /// [`StatusChecks::report`](crate::status_checks::StatusChecks::report)).
    pub fn status_report(&self, check: StatusCheck) -> (&'static str, &'static str, Option<Duration>) {
        self.status_checks.report(check, self.state == InstanceState::Running)
    }

    /// Whether the instance passes every DescribeInstanceStatus filter (names checked
    /// beforehand by [`check_filters`](crate::status_checks::check_filters)).
    pub fn matches_status(&self, filters: &[Filter]) -> bool {
        filters.iter().all(|f| {
            let name = f.name.as_str();
            if let Some(check) = StatusCheck::ALL.into_iter().find(|c| name.starts_with(c.filter_prefix())) {
                let (summary, detail, _) = self.status_report(check);
                return if name.ends_with(".status") { f.matches(summary) } else { f.matches(detail) };
            }
            match name {
                "availability-zone" => f.matches(&self.zone),
                "instance-state-name" => f.matches(self.state.name()),
                "instance-state-code" => f.matches(&self.state.code().to_string()),
                "event.code" => f.matches_any(self.scheduled_events.iter().map(|e| e.code.as_str())),
                "event.instance-event-id" => f.matches_any(self.scheduled_events.iter().map(|e| e.id.as_str())),
                "event.description" => !self.scheduled_events.is_empty() && f.matches(SCHEDULED_EVENT_DESCRIPTION),
                _ => false,
            }
        })
    }

    /// The private DNS name EC2 gives instances in a VPC (`ip-10-0-0-5.<region>.compute.internal`).
    pub fn private_dns_name(&self, region: &str) -> String {
        let host = self.private_ip.replace('.', "-");
        if region == "us-east-1" {
            format!("ip-{host}.ec2.internal")
        } else {
            format!("ip-{host}.{region}.compute.internal")
        }
    }
}
