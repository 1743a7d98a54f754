//! One fault occurrence with every parameter drawn: the scenario's plan draws it from a
//! [`FaultSpec`] and prints it; the fault machinery (`crate::faults`) plays it.

use rand::Rng;
use serde::Serialize;

use super::dist::Dist;
use super::faults::FaultSpec;
use dovetail_world::{SimDuration, SimRng};

/// One fault occurrence, fully drawn.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum DrawnFault {
    /// Matching pools have no capacity.
    #[serde(rename_all = "camelCase")]
    InsufficientCapacity {
        /// Type names or `prefix*` patterns (empty: all).
        instance_types: Vec<String>,
        /// Only the N cheapest matching types.
        #[serde(skip_serializing_if = "Option::is_none")]
        cheapest: Option<u32>,
        /// Zones.
        zones: Vec<String>,
        /// `spot` / `on-demand`.
        capacity_types: Vec<String>,
    },
    /// Spot interruption warnings for a share of running spot instances.
    #[serde(rename_all = "camelCase")]
    SpotInterruption {
        /// One zone, or all.
        #[serde(skip_serializing_if = "Option::is_none")]
        zone: Option<String>,
        /// Share interrupted.
        fraction: f64,
    },
    /// A zone outage.
    ZoneOutage {
        /// The zone.
        zone: String,
    },
    /// EC2 token buckets.
    #[serde(rename_all = "camelCase")]
    Ec2Throttling {
        /// Burst.
        burst: f64,
        /// Tokens per second.
        refill_per_second: f64,
    },
    /// EC2 500/503.
    Ec2Errors {
        /// Probability per call.
        rate: f64,
    },
    /// DescribeInstances lag.
    DescribeLag {
        /// Invisible for this long after launch.
        delay: SimDuration,
    },
    /// SQS delay, duplicates, reordering, loss.
    #[serde(rename_all = "camelCase")]
    Sqs {
        /// Extra delay up to this.
        delay: SimDuration,
        /// P(duplicate).
        duplicate_rate: f64,
        /// Shuffle.
        reorder: bool,
        /// P(never delivered).
        #[serde(skip_serializing_if = "is_zero")]
        loss_rate: f64,
    },
    /// API server 429/5xx/409.
    #[serde(rename_all = "camelCase")]
    ApiServerErrors {
        /// P(429).
        throttle_rate: f64,
        /// P(5xx).
        error_rate: f64,
        /// P(409) per write.
        conflict_rate: f64,
    },
    /// Watch events late.
    WatchDelay {
        /// Per event.
        delay: SimDuration,
    },
    /// Every watch gets 410 Gone.
    WatchExpiry,
    /// Short list pages, expiring continue tokens.
    #[serde(rename_all = "camelCase")]
    ListPaging {
        /// Items per page at most.
        page_size: u32,
        /// P(410 on a continued list).
        expiry_rate: f64,
    },
    /// No packets between two endpoints until it heals; the TCP segments sent meanwhile are
    /// held and delivered when it heals, as TCP's retransmissions deliver them after an
    /// outage shorter than its retry limit (Linux `tcp_retries2`, about 15 minutes): requests
    /// in flight complete late, new connects time out (10 s), and the controller gives up on
    /// a response after its own timeout (`runtime::api_timeout`, 60 s).
    Partition {
        /// The pair.
        between: [String; 2],
    },
    /// Extra latency between two endpoints.
    Latency {
        /// The pair.
        between: [String; 2],
        /// One-way latency.
        latency: SimDuration,
    },
    /// A controller replica crashes (restarts when it heals, or at once).
    ControllerCrash {
        /// `leader` or `controller`.
        target: String,
    },
    /// The leader crashes; the other replica takes over.
    LeaderFailover,
    /// A new EKS-optimized AMI is published.
    AmiRelease {
        /// The release's version suffix (`None`: derived from the time it happens).
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<String>,
    },
    /// An IAM role without an access entry: its kubelets cannot register.
    AccessEntryMissing {
        /// The role.
        role: String,
    },
    /// Every list answered `delay` late (`crate::faults::apiserver`).
    SlowLists {
        /// How late.
        delay: SimDuration,
    },
    /// The nodes' network cannot reach the cluster endpoint: kubelets of instances in the
    /// cut-off subnets (`cause: subnet`, by zone) or with the node security group (`cause:
    /// securityGroup`) cannot register.
    NodeNetworkBlocked {
        /// `subnet` or `securityGroup`.
        cause: String,
        /// The zones whose subnets are cut off (empty for `securityGroup`).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        zones: Vec<String>,
    },
    /// Kubelets report a Node condition unhealthy (`crate::faults::node_conditions`).
    #[serde(rename_all = "camelCase")]
    NodeConditions {
        /// Only this NodePool's Nodes (`None`: every Karpenter Node).
        #[serde(skip_serializing_if = "Option::is_none")]
        node_pool: Option<String>,
        /// How many of them.
        #[serde(skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
        /// Or which share, rounded up.
        #[serde(skip_serializing_if = "Option::is_none")]
        fraction: Option<f64>,
        /// The condition type.
        condition: String,
        /// Its status while the fault lasts.
        status: String,
    },
    /// EC2 reports instances unhealthy (`crate::faults::instance_status`).
    #[serde(rename_all = "camelCase")]
    InstanceStatus {
        /// Only this NodePool's instances (`None`: every instance Karpenter launched).
        #[serde(skip_serializing_if = "Option::is_none")]
        node_pool: Option<String>,
        /// How many of them.
        #[serde(skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
        /// Or which share, rounded up.
        #[serde(skip_serializing_if = "Option::is_none")]
        fraction: Option<f64>,
        /// The failing status checks (`system`, `instance`, `attachedEbs`).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        checks: Vec<String>,
        /// The scheduled event codes listed.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        events: Vec<String>,
    },
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl DrawnFault {
    /// Draws one occurrence of `spec` (validated).
    pub fn draw(spec: &FaultSpec, zones: &[String], _replicas: u8, rng: &mut SimRng) -> DrawnFault {
        let zone = |z: &str, rng: &mut SimRng| -> String {
            if z == "random" && !zones.is_empty() {
                zones[rng.random_range(0..zones.len())].clone()
            } else {
                z.to_string()
            }
        };
        let rate = |d: &Option<Dist<f64>>, rng: &mut SimRng| Dist::draw_or(d.as_ref(), 0.0, rng).clamp(0.0, 1.0);
        if let Some(s) = &spec.insufficient_capacity {
            let zs = if s.zones.is_empty() { zones.to_vec() } else { s.zones.iter().map(|z| zone(z, rng)).collect() };
            let cts = if s.capacity_types.is_empty() {
                vec!["on-demand".to_string(), "spot".to_string()]
            } else {
                s.capacity_types.clone()
            };
            return DrawnFault::InsufficientCapacity {
                instance_types: s.instance_types.clone(),
                cheapest: s.cheapest,
                zones: zs,
                capacity_types: cts,
            };
        }
        if let Some(s) = &spec.spot_interruption {
            let z = s.zone.as_deref().filter(|z| *z != "all").map(|z| zone(z, rng));
            return DrawnFault::SpotInterruption { zone: z, fraction: Dist::draw_or(s.fraction.as_ref(), 1.0, rng) };
        }
        if let Some(s) = &spec.zone_outage {
            return DrawnFault::ZoneOutage { zone: zone(&s.zone, rng) };
        }
        if let Some(s) = &spec.ec2_throttling {
            return DrawnFault::Ec2Throttling {
                burst: Dist::draw_or(s.burst.as_ref(), 10.0, rng),
                refill_per_second: Dist::draw_or(s.refill_per_second.as_ref(), 1.0, rng),
            };
        }
        if let Some(s) = &spec.ec2_errors {
            return DrawnFault::Ec2Errors { rate: s.rate.draw(rng).clamp(0.0, 1.0) };
        }
        if let Some(s) = &spec.describe_lag {
            return DrawnFault::DescribeLag { delay: s.delay.draw(rng) };
        }
        if let Some(s) = &spec.sqs {
            return DrawnFault::Sqs {
                delay: Dist::draw_or(s.delay.as_ref(), SimDuration::default(), rng),
                duplicate_rate: rate(&s.duplicate_rate, rng),
                reorder: s.reorder,
                loss_rate: rate(&s.loss_rate, rng),
            };
        }
        if let Some(s) = &spec.api_server_errors {
            return DrawnFault::ApiServerErrors {
                throttle_rate: rate(&s.throttle_rate, rng),
                error_rate: rate(&s.error_rate, rng),
                conflict_rate: rate(&s.conflict_rate, rng),
            };
        }
        if let Some(s) = &spec.watch_delay {
            return DrawnFault::WatchDelay { delay: s.delay.draw(rng) };
        }
        if spec.watch_expiry.is_some() {
            return DrawnFault::WatchExpiry;
        }
        if let Some(s) = &spec.list_paging {
            return DrawnFault::ListPaging { page_size: s.page_size, expiry_rate: rate(&s.expiry_rate, rng) };
        }
        if let Some(s) = &spec.partition {
            return DrawnFault::Partition { between: s.between.clone() };
        }
        if let Some(s) = &spec.latency {
            return DrawnFault::Latency { between: s.between.clone(), latency: s.latency.draw(rng) };
        }
        if let Some(s) = &spec.controller_crash {
            return DrawnFault::ControllerCrash { target: s.target.clone().unwrap_or_else(|| "leader".into()) };
        }
        if let Some(s) = &spec.access_entry_missing {
            return DrawnFault::AccessEntryMissing { role: s.role.clone() };
        }
        if let Some(s) = &spec.slow_lists {
            return DrawnFault::SlowLists { delay: s.delay.draw(rng) };
        }
        if let Some(s) = &spec.node_network_blocked {
            return DrawnFault::NodeNetworkBlocked {
                cause: s.cause.clone(),
                zones: s.zones.iter().map(|z| zone(z, rng)).collect(),
            };
        }
        if let Some(s) = &spec.node_conditions {
            return DrawnFault::NodeConditions {
                node_pool: s.node_pool.clone(),
                count: s.count,
                fraction: s.fraction,
                condition: s.condition(),
                status: s.status(),
            };
        }
        if let Some(s) = &spec.instance_status {
            return DrawnFault::InstanceStatus {
                node_pool: s.node_pool.clone(),
                count: s.count,
                fraction: s.fraction,
                checks: s.checks.clone(),
                events: s.events.clone(),
            };
        }
        if let Some(s) = &spec.ami_release {
            return DrawnFault::AmiRelease { version: s.version.clone() };
        }
        DrawnFault::LeaderFailover
    }

    /// A short description for the trace.
    pub fn describe(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
