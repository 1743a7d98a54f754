//! The generated fault mix: one to four distinct kinds out of every kind the format knows
//! ([`KINDS`]), each scheduled (`at`, and `for` ending by `faultsUntil`) or random
//! (`perHour`, swarm-style `live`), with parameters drawn per story.

use super::draw::{Dice, secs};
use crate::scenario::dist::Dist;
use crate::scenario::faults::{
    AccessEntrySpec, AmiReleaseSpec, ApiErrorsSpec, CrashSpec, Empty, FaultSpec, IceSpec, KINDS, LagSpec, LatencySpec,
    LinkSpec, ListPagingSpec, RateSpec, SpotStormSpec, SqsSpec, ThrottleSpec, ZoneSpec,
};
use crate::scenario::node_network::NodeNetworkSpec;
use dovetail_world::SimDuration;

/// The drawn faults, all ending by `faults_until`.
pub struct Mix {
    /// The entries.
    pub faults: Vec<FaultSpec>,
    /// Whether the mix needs two controller replicas (`leaderFailover`).
    pub needs_two_replicas: bool,
    /// Whether a zone goes dark (instances launched there may never join before
    /// Karpenter's registration timeout deletes them).
    pub has_zone_outage: bool,
    /// Whether the node role's access entry goes missing or the nodes' network is cut off
    /// from the endpoint: an instance launched then never registers, and Karpenter keeps
    /// counting on its claim until the registration TTL.
    pub has_missing_access_entry: bool,
}

/// Draws a mix of faults that all end by `faults_until` (at least two minutes in).
pub fn draw(dice: &mut Dice, faults_until: SimDuration) -> Mix {
    let until = faults_until.0.as_secs();
    let count = dice.int(1, 4) as usize;
    let kinds: Vec<&str> = dice.subset(KINDS.len(), count).into_iter().map(|i| KINDS[i]).collect();
    let mut faults = Vec::new();
    for kind in &kinds {
        let Some(mut f) = with_kind(dice, kind) else { continue };
        if dice.chance(0.25) {
            f.per_hour = Some(Dist::Fixed(f64::from(dice.int(5, 20))));
            f.live = Some(dice.fraction(0.5, 1.0));
            f.from = Some(secs(60 * dice.int(0, (until / 120) as u32) as u64));
            if !FaultSpec::instantaneous(kind) {
                f.lasts = Some(Dist::Uniform(secs(20), secs(60)));
            }
        } else {
            let at = dice.int(30, until as u32 - 60) as u64;
            f.at = Some(secs(at));
            if !FaultSpec::instantaneous(kind) {
                let longest =
                    if matches!(*kind, "partition" | "controllerCrash" | "leaderFailover") { 90 } else { until - at };
                f.lasts = Some(Dist::Fixed(secs(u64::from(dice.int(20, longest.min(until - at) as u32)))));
            }
        }
        faults.push(f);
    }
    Mix {
        faults,
        needs_two_replicas: kinds.contains(&"leaderFailover"),
        has_zone_outage: kinds.contains(&"zoneOutage"),
        has_missing_access_entry: kinds.contains(&"accessEntryMissing") || kinds.contains(&"nodeNetworkBlocked"),
    }
}

/// The IAM role every generated EC2NodeClass names (see `cluster.rs`), so an
/// `accessEntryMissing` fault keeps the story's nodes from joining.
const NODE_ROLE: &str = "KarpenterNodeRole-dovetail";

/// An entry of `kind` with drawn parameters and no timing yet; `None` for a kind the
/// generator does not know yet (a unit test insists it knows every one of [`KINDS`]).
pub fn with_kind(dice: &mut Dice, kind: &str) -> Option<FaultSpec> {
    let mut f = FaultSpec::default();
    match kind {
        "insufficientCapacity" => {
            f.insufficient_capacity = Some(IceSpec {
                cheapest: Some(dice.int(1, 10)),
                zones: if dice.chance(0.5) { vec!["random".into()] } else { Vec::new() },
                capacity_types: if dice.chance(0.5) { vec!["spot".into()] } else { Vec::new() },
                instance_types: Vec::new(),
            })
        }
        "spotInterruption" => {
            f.spot_interruption = Some(SpotStormSpec {
                zone: Some(dice.pick(&["random", "all"]).to_string()),
                fraction: Some(Dist::Fixed(dice.fraction(0.2, 1.0))),
            })
        }
        "zoneOutage" => f.zone_outage = Some(ZoneSpec { zone: "random".into() }),
        "ec2Throttling" => {
            f.ec2_throttling = Some(ThrottleSpec {
                burst: Some(Dist::Fixed(f64::from(dice.int(2, 10)))),
                refill_per_second: Some(Dist::Fixed(dice.fraction(0.2, 2.0))),
            })
        }
        "ec2Errors" => f.ec2_errors = Some(RateSpec { rate: Dist::Fixed(dice.fraction(0.05, 0.5)) }),
        "describeLag" => f.describe_lag = Some(LagSpec { delay: Dist::Fixed(dice.seconds(5, 60)) }),
        "sqs" => {
            f.sqs = Some(SqsSpec {
                delay: dice.chance(0.5).then(|| Dist::Fixed(dice.seconds(5, 30))),
                duplicate_rate: Some(Dist::Fixed(dice.fraction(0.0, 0.5))),
                reorder: dice.chance(0.5),
                loss_rate: dice.chance(0.5).then(|| Dist::Fixed(dice.fraction(0.0, 0.3))),
            })
        }
        "apiServerErrors" => {
            f.api_server_errors = Some(ApiErrorsSpec {
                throttle_rate: Some(Dist::Fixed(dice.fraction(0.0, 0.2))),
                error_rate: Some(Dist::Fixed(dice.fraction(0.0, 0.2))),
                conflict_rate: Some(Dist::Fixed(dice.fraction(0.0, 0.2))),
            })
        }
        "watchDelay" => f.watch_delay = Some(LagSpec { delay: Dist::Fixed(dice.seconds(1, 5)) }),
        "watchExpiry" => f.watch_expiry = Some(Empty {}),
        "partition" => {
            let other = dice.pick(&["apiserver", "aws"]).to_string();
            f.partition = Some(LinkSpec { between: ["controller".into(), other] })
        }
        "latency" => {
            let other = dice.pick(&["apiserver", "aws"]).to_string();
            let latency = SimDuration(std::time::Duration::from_millis(u64::from(dice.int(50, 500))));
            f.latency = Some(LatencySpec { between: ["controller".into(), other], latency: Dist::Fixed(latency) })
        }
        "controllerCrash" => f.controller_crash = Some(CrashSpec { target: Some("controller".into()) }),
        "leaderFailover" => f.leader_failover = Some(Empty {}),
        "amiRelease" => f.ami_release = Some(AmiReleaseSpec { version: None }),
        "listPaging" => {
            f.list_paging = Some(ListPagingSpec {
                page_size: dice.int(1, 50),
                expiry_rate: Some(Dist::Fixed(dice.fraction(0.0, 0.5))),
            })
        }
        "accessEntryMissing" => f.access_entry_missing = Some(AccessEntrySpec { role: NODE_ROLE.into() }),
        "slowLists" => f.slow_lists = Some(LagSpec { delay: Dist::Fixed(dice.seconds(1, 10)) }),
        "nodeNetworkBlocked" => {
            f.node_network_blocked = Some(if dice.chance(0.5) {
                NodeNetworkSpec { cause: "subnet".into(), zones: vec!["random".into()] }
            } else {
                NodeNetworkSpec { cause: "securityGroup".into(), zones: Vec::new() }
            })
        }
        _ => return None,
    }
    Some(f)
}
