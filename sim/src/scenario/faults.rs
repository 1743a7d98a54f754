//! `faults:` — what goes wrong, and when.
//!
//! An entry names one fault kind (one key) and is either scheduled (`at`, with `for` for
//! faults that last) or random (`perHour`: a Poisson process whose rate each seed draws,
//! live in a seed with probability `live`, swarm-style, so a sweep explores fault mixes as
//! well as timings). Every parameter may be a distribution, drawn per occurrence.

use serde::{Deserialize, Serialize};

use super::dist::Dist;
use super::error::FieldError;
use super::instance_status::InstanceStatusSpec;
use super::node_conditions::NodeConditionsSpec;
use super::node_network::NodeNetworkSpec;
use dovetail_world::SimDuration;

/// One fault entry.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FaultSpec {
    /// Scheduled: when it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SimDuration>,
    /// Random: occurrences per hour (the rate is drawn once per seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<Dist<f64>>,
    /// Random: the probability that this entry is live at all in a seed (0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<f64>,
    /// Random: occurrences start from here (`0s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<SimDuration>,
    /// How long each occurrence lasts (faults that last; drawn per occurrence). Everything
    /// still active heals at `phases.faultsUntil`.
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub lasts: Option<Dist<SimDuration>>,

    /// EC2 has no capacity in matching pools (`InsufficientInstanceCapacity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insufficient_capacity: Option<IceSpec>,
    /// Spot interruption warnings (2-minute notice, rebalance recommendations first per the
    /// cloud's rebalance probability) for a share of running spot instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot_interruption: Option<SpotStormSpec>,
    /// A zone goes dark: its instances stop, launches there fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_outage: Option<ZoneSpec>,
    /// EC2 throttles every action with a small token bucket (`RequestLimitExceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ec2_throttling: Option<ThrottleSpec>,
    /// EC2 answers 500/503 at a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ec2_errors: Option<RateSpec>,
    /// New instances are invisible to DescribeInstances for a while.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub describe_lag: Option<LagSpec>,
    /// SQS delivers late, twice, out of order, or never (EventBridge delivery lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqs: Option<SqsSpec>,
    /// The API server answers 429, 5xx or 409 at rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server_errors: Option<ApiErrorsSpec>,
    /// Watch events arrive late (watches opened while it lasts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_delay: Option<LagSpec>,
    /// Paged lists come back in short pages, and continue tokens expire (410) at a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_paging: Option<ListPagingSpec>,
    /// Every list is answered `delay` late, with the items as they were when it arrived (a
    /// loaded etcd): the client acts on a list already stale when it gets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_lists: Option<LagSpec>,
    /// Every watch ends with 410 Gone and clients relist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_expiry: Option<Empty>,
    /// No packets between two endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<LinkSpec>,
    /// Extra latency between two endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySpec>,
    /// A controller replica crashes, and restarts after `for` (immediately without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_crash: Option<CrashSpec>,
    /// The leader of two replicas crashes for `for` (30s); the other takes over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_failover: Option<Empty>,
    /// Amazon publishes a new EKS-optimized AMI: the `recommended` SSM parameters move to
    /// new images, so NodeClasses on `al2023@latest` drift (an upgrade rollout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ami_release: Option<AmiReleaseSpec>,
    /// The cluster has no access entry for an IAM role (deleted, `aws-auth` overwritten, or
    /// an EC2NodeClass naming the wrong role): instances with that role run and bill, but
    /// their kubelets never register, until it heals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_entry_missing: Option<AccessEntrySpec>,
    /// The nodes' network cannot reach the cluster endpoint (a subnet with no route to it,
    /// or a security group without the cluster's rules): instances launched there run and
    /// bill, but their kubelets never register, until it heals (`NodeNetworkSpec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_network_blocked: Option<NodeNetworkSpec>,
    /// Kubelets report a Node condition unhealthy (`Ready` False by default) on some nodes,
    /// until it heals: what Karpenter's NodeRepair replaces (`super::node_conditions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_conditions: Option<NodeConditionsSpec>,
    /// EC2 reports instances unhealthy in DescribeInstanceStatus (failed status checks,
    /// scheduled events), until it heals: what Karpenter's instance status controller acts on
    /// (`super::instance_status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_status: Option<InstanceStatusSpec>,
}

/// The fault kinds, as written.
pub const KINDS: &[&str] = &[
    "insufficientCapacity",
    "spotInterruption",
    "zoneOutage",
    "ec2Throttling",
    "ec2Errors",
    "describeLag",
    "sqs",
    "apiServerErrors",
    "watchDelay",
    "watchExpiry",
    "listPaging",
    "partition",
    "latency",
    "controllerCrash",
    "leaderFailover",
    "amiRelease",
    "accessEntryMissing",
    "slowLists",
    "nodeNetworkBlocked",
];

/// Fault kinds the story generator (`crate::generate`) does not draw yet (the simulated
/// cluster's kubelets, EC2's status checks); kept apart from [`KINDS`] so adding one does not
/// reshuffle every generated story's fault mix.
pub const CLUSTER_KINDS: &[&str] = &["nodeConditions", "instanceStatus"];

/// One IAM role without an access entry.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AccessEntrySpec {
    /// The role name, as an EC2NodeClass's `role` names it.
    pub role: String,
}

/// A new AMI release.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AmiReleaseSpec {
    /// The release's version suffix (`v20261201`); default `v` + the simulated second it
    /// happens at, so every occurrence is a new release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// No parameters: `watchExpiry: {}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Which pools run dry.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IceSpec {
    /// Instance type names or prefixes ending in `*` (`m5.*`, `c*`); default every type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instance_types: Vec<String>,
    /// Only the N cheapest (on-demand price) of the matching types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cheapest: Option<u32>,
    /// Zones (names, or `random` for one drawn zone); default every zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// `spot` and/or `on-demand`; default both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_types: Vec<String>,
}

/// A spot interruption storm.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SpotStormSpec {
    /// A zone name, `random`, or `all` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Share of matching spot instances interrupted (1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<Dist<f64>>,
}

/// One zone.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ZoneSpec {
    /// A zone name or `random`.
    pub zone: String,
}

/// A token bucket per EC2 action.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ThrottleSpec {
    /// Burst (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<Dist<f64>>,
    /// Tokens per second (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill_per_second: Option<Dist<f64>>,
}

/// A probability per call.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateSpec {
    /// In `[0, 1]`.
    pub rate: Dist<f64>,
}

/// A delay.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LagSpec {
    /// How long.
    pub delay: Dist<SimDuration>,
}

/// SQS misbehaviour; unset parts stay off.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SqsSpec {
    /// Extra delivery delay, up to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Dist<SimDuration>>,
    /// P(a message is delivered twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_rate: Option<Dist<f64>>,
    /// Shuffle delivery order.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reorder: bool,
    /// P(an event never reaches the queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_rate: Option<Dist<f64>>,
}

/// API server error rates; unset rates stay 0.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApiErrorsSpec {
    /// P(429) per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_rate: Option<Dist<f64>>,
    /// P(5xx) per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<Dist<f64>>,
    /// P(409) per write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict_rate: Option<Dist<f64>>,
}

/// Short list pages and expiring continue tokens.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListPagingSpec {
    /// At most this many items per page (at least 1).
    pub page_size: u32,
    /// P(a continued list gets 410 Gone) (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_rate: Option<Dist<f64>>,
}

/// Endpoints a network fault sits between.
pub const ENDPOINTS: &[&str] = &["controller", "leader", "apiserver", "aws"];

/// Two endpoints: `controller` (every replica), `leader`, `apiserver`, `aws`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkSpec {
    /// The pair.
    pub between: [String; 2],
}

/// Latency on a link.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LatencySpec {
    /// The pair.
    pub between: [String; 2],
    /// One-way latency.
    pub latency: Dist<SimDuration>,
}

/// Which replica crashes.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CrashSpec {
    /// `leader` (default) or `controller` (every replica).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl FaultSpec {
    /// The kind this entry sets, if exactly one.
    pub fn kind(&self) -> Result<&'static str, FieldError> {
        let set: Vec<&'static str> = [
            self.insufficient_capacity.is_some(),
            self.spot_interruption.is_some(),
            self.zone_outage.is_some(),
            self.ec2_throttling.is_some(),
            self.ec2_errors.is_some(),
            self.describe_lag.is_some(),
            self.sqs.is_some(),
            self.api_server_errors.is_some(),
            self.watch_delay.is_some(),
            self.watch_expiry.is_some(),
            self.list_paging.is_some(),
            self.partition.is_some(),
            self.latency.is_some(),
            self.controller_crash.is_some(),
            self.leader_failover.is_some(),
            self.ami_release.is_some(),
            self.access_entry_missing.is_some(),
            self.slow_lists.is_some(),
            self.node_network_blocked.is_some(),
            self.node_conditions.is_some(),
            self.instance_status.is_some(),
        ]
        .iter()
        .zip(KINDS.iter().chain(CLUSTER_KINDS))
        .filter(|(on, _)| **on)
        .map(|(_, k)| *k)
        .collect();
        match set.as_slice() {
            [one] => Ok(one),
            [] => Err(FieldError::new(
                "",
                format!("no fault kind set; set one of: {}, {}", KINDS.join(", "), CLUSTER_KINDS.join(", ")),
            )),
            many => Err(FieldError::new("", format!("one fault kind per entry, found {}", many.join(", ")))),
        }
    }

    /// Whether the kind happens at an instant (no `for`).
    pub fn instantaneous(kind: &str) -> bool {
        matches!(kind, "spotInterruption" | "watchExpiry" | "amiRelease")
    }

    /// Checks timing fields, the kind, zones, endpoints and distributions.
    pub fn validate(&self, zones: &[String], replicas: u8) -> Result<(), FieldError> {
        let kind = self.kind()?;
        if self.at.is_some() == self.per_hour.is_some() {
            return Err(FieldError::new(kind, "set exactly one of `at` (scheduled) and `perHour` (random)"));
        }
        if self.at.is_some() && (self.live.is_some() || self.from.is_some()) {
            return Err(FieldError::new(kind, "`live` and `from` are for random faults (`perHour`)"));
        }
        if let Some(live) = self.live
            && !(0.0..=1.0).contains(&live)
        {
            return Err(FieldError::new(format!("{kind}.live"), format!("{live} is not a probability in [0, 1]")));
        }
        if Self::instantaneous(kind) && self.lasts.is_some() {
            return Err(FieldError::new(kind, "happens at an instant; remove `for`"));
        }
        if let Some(r) = &self.per_hour {
            r.validate().map_err(|e| e.within(format!("{kind}.perHour")))?;
        }
        if let Some(d) = &self.lasts {
            d.validate().map_err(|e| e.within(format!("{kind}.for")))?;
        }
        let zone_ok = |z: &str, extra: &[&str]| -> Result<(), FieldError> {
            if zones.iter().any(|x| x == z) || extra.contains(&z) {
                Ok(())
            } else {
                let mut allowed: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
                allowed.extend(zones.iter().cloned());
                Err(FieldError::new(kind, format!("unknown zone `{z}`, expected one of {}", allowed.join(", "))))
            }
        };
        let endpoint_ok = |e: &str| -> Result<(), FieldError> {
            if ENDPOINTS.contains(&e) {
                Ok(())
            } else {
                Err(FieldError::new(kind, format!("unknown endpoint `{e}`, expected one of {}", ENDPOINTS.join(", "))))
            }
        };
        let rate_ok = |name: &str, d: &Option<Dist<f64>>| -> Result<(), FieldError> {
            if let Some(d) = d {
                d.validate().map_err(|e| e.within(format!("{kind}.{name}")))?;
                let max = d.max();
                if !(0.0..=1.0).contains(&max) {
                    return Err(FieldError::new(
                        format!("{kind}.{name}"),
                        format!("{max} is not a probability in [0, 1]"),
                    ));
                }
            }
            Ok(())
        };
        if let Some(s) = &self.insufficient_capacity {
            for z in &s.zones {
                zone_ok(z, &["random"])?;
            }
            for c in &s.capacity_types {
                if c != "spot" && c != "on-demand" {
                    return Err(FieldError::new(
                        kind,
                        format!("unknown capacity type `{c}`, expected one of spot, on-demand"),
                    ));
                }
            }
        }
        if let Some(s) = &self.spot_interruption {
            if let Some(z) = &s.zone {
                zone_ok(z, &["random", "all"])?;
            }
            rate_ok("fraction", &s.fraction)?;
        }
        if let Some(s) = &self.zone_outage {
            zone_ok(&s.zone, &["random"])?;
        }
        if let Some(s) = &self.ec2_errors {
            rate_ok("rate", &Some(s.rate.clone()))?;
        }
        if let Some(s) = &self.sqs {
            rate_ok("duplicateRate", &s.duplicate_rate)?;
            rate_ok("lossRate", &s.loss_rate)?;
        }
        if let Some(s) = &self.api_server_errors {
            rate_ok("throttleRate", &s.throttle_rate)?;
            rate_ok("errorRate", &s.error_rate)?;
            rate_ok("conflictRate", &s.conflict_rate)?;
        }
        if let Some(s) = &self.list_paging {
            if s.page_size == 0 {
                return Err(FieldError::new(format!("{kind}.pageSize"), "must be at least 1"));
            }
            rate_ok("expiryRate", &s.expiry_rate)?;
        }
        if let Some(s) = &self.partition {
            s.between.iter().try_for_each(|e| endpoint_ok(e))?;
        }
        if let Some(s) = &self.latency {
            s.between.iter().try_for_each(|e| endpoint_ok(e))?;
        }
        if let Some(s) = &self.controller_crash
            && let Some(t) = &s.target
            && t != "leader"
            && t != "controller"
        {
            return Err(FieldError::new(
                format!("{kind}.target"),
                format!("unknown target `{t}`, expected one of leader, controller"),
            ));
        }
        if let Some(v) = self.ami_release.as_ref().and_then(|s| s.version.as_ref())
            && (v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        {
            return Err(FieldError::new(
                format!("{kind}.version"),
                format!("`{v}` must be non-empty letters, digits, `.` or `-`"),
            ));
        }
        if let Some(s) = &self.access_entry_missing
            && s.role.trim().is_empty()
        {
            return Err(FieldError::new(format!("{kind}.role"), "name the IAM role (an EC2NodeClass's `role`)"));
        }
        if let Some(s) = &self.node_network_blocked {
            s.validate(kind, zones)?;
        }
        if let Some(s) = &self.node_conditions {
            s.validate(kind)?;
        }
        if let Some(s) = &self.instance_status {
            s.validate(kind)?;
        }
        if matches!(kind, "controllerCrash" | "leaderFailover" | "partition" | "latency") && replicas == 0 {
            return Err(FieldError::new(kind, "needs a controller, but the scenario has `controller: none`"));
        }
        if kind == "leaderFailover" && replicas < 2 {
            return Err(FieldError::new(kind, "needs `controller: {replicas: 2}`"));
        }
        Ok(())
    }
}
