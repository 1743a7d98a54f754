//! Faults a scenario can switch on and off while the cloud runs.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::throttle::ThrottleConfig;

/// A scripted error: the next `count` calls of `action` (or of any action when `None`)
/// fail with `code`/`status`, before any other processing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedError {
    /// Action to fail, e.g. `CreateFleet`; `None` matches every action.
    pub action: Option<String>,
    /// Error code, e.g. `RequestLimitExceeded`, `InternalError`.
    pub code: String,
    /// HTTP status.
    pub status: u16,
    /// Calls left to fail.
    pub count: u32,
}

/// A scripted spot storm: at its time, interrupt `fraction` of the running spot instances
/// that match (zone and/or types), chosen with the seeded RNG.
#[derive(Debug, Clone, PartialEq)]
pub struct SpotStorm {
    /// Only this zone (`None`: every zone).
    pub zone: Option<String>,
    /// Only these instance types (empty: every type).
    pub instance_types: Vec<String>,
    /// Share of matching instances to interrupt, in `[0, 1]`.
    pub fraction: f64,
}

/// The switchable faults. Everything is off by default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Token-bucket throttling per action (`RequestLimitExceeded`, HTTP 503).
    pub throttling: Option<ThrottleConfig>,
    /// Probability that an EC2 call fails with `InternalError` (HTTP 500) or
    /// `ServiceUnavailable` (HTTP 503), chosen evenly.
    pub server_error_rate: f64,
    /// Scripted errors, consumed in order.
    pub scripted: Vec<ScriptedError>,
    /// A new instance is invisible to DescribeInstances for this long after launch
    /// (EC2's eventual consistency; asking for it by id gives `InvalidInstanceID.NotFound`).
    pub describe_lag: Duration,
    /// Probability that a launched instance never leaves `pending`.
    pub stuck_pending_rate: f64,
    /// Extra SQS delivery delay, drawn uniformly from zero to this.
    pub sqs_delay_max: Duration,
    /// Probability that an SQS message is delivered twice (same MessageId).
    pub sqs_duplicate_rate: f64,
    /// Shuffle the order in which visible SQS messages are returned.
    pub sqs_reorder: bool,
    /// Probability that an event never reaches the queue (EventBridge's delivery to its
    /// SQS target fails, e.g. a queue policy that no longer admits `events.amazonaws.com`,
    /// and the event is dropped): the sender sees success, no one ever receives it.
    pub sqs_loss_rate: f64,
    /// IAM roles the EKS cluster has no access entry for (an entry deleted, `aws-auth`
    /// overwritten, or an EC2NodeClass naming the wrong role). A kubelet whose instance
    /// profile carries such a role fails to authenticate and never registers its Node; it
    /// keeps retrying, so it joins once the entry exists. See [`crate::NodeAuth`].
    pub missing_access_entries: BTreeSet<String>,
    /// Subnets with no route to the cluster endpoint (a private subnet without a NAT
    /// gateway or VPC endpoint): a kubelet of an instance launched into one cannot reach
    /// the API server and never registers; it keeps retrying, so it joins once the route
    /// is back.
    pub unreachable_subnets: BTreeSet<String>,
    /// Security groups without the rules the cluster endpoint needs (the cluster security
    /// group's ingress from nodes): a kubelet of an instance carrying one cannot reach the
    /// API server, as with [`Self::unreachable_subnets`].
    pub unreachable_security_groups: BTreeSet<String>,
    /// Every instance CreateFleet launches is launched twice: the second, identical
    /// (same tags) instance is not in the response. A broken cloud for invariant
    /// self-tests: one request, two running instances for one NodeClaim.
    pub duplicate_launches: bool,
}
