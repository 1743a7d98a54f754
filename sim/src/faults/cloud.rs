//! Fake-cloud faults: empty capacity pools, spot interruption storms, zone outages, AMI
//! releases, and the
//! cloud's switchable knobs (throttling, 5xx, DescribeInstances lag, SQS misbehaviour,
//! missing EKS access entries).

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_fakecloud::cloud::{SharedCloud, lock};
use dovetail_fakecloud::{CapacityType, Faults, Pool, PoolKey, SpotStorm, ThrottleConfig};

use crate::scenario::drawn_fault::DrawnFault;
use dovetail_world::SimRng;

/// What healing the cloud's faults restores.
pub struct CloudState {
    /// Pools emptied by each ICE occurrence, as they were before.
    saved_pools: BTreeMap<usize, Vec<(PoolKey, Pool)>>,
    /// Kept for faults that draw at start time.
    _rng: SimRng,
}

impl CloudState {
    /// Nothing saved.
    pub fn new(rng: SimRng) -> Self {
        Self { saved_pools: BTreeMap::new(), _rng: rng }
    }

    /// Starts a pool, storm or outage fault. `now` is where the world stepped to, which is
    /// also the time the cloud acts at.
    pub fn start(&mut self, cloud: &SharedCloud, id: usize, fault: &DrawnFault, now: Duration) {
        let mut c = cloud.advance();
        match fault {
            DrawnFault::InsufficientCapacity { instance_types, cheapest, zones, capacity_types } => {
                let types = matching_types(c.catalog(), instance_types, *cheapest);
                let mut saved = Vec::new();
                for t in &types {
                    for z in zones {
                        for ct in capacity_types.iter().filter_map(|s| CapacityType::parse(s)) {
                            let key = PoolKey::new(t, z, ct);
                            let pool = c.pool(&key);
                            c.set_pool(&key, 0, pool.size, None);
                            saved.push((key, pool));
                        }
                    }
                }
                self.saved_pools.insert(id, saved);
            }
            DrawnFault::SpotInterruption { zone, fraction } => {
                c.schedule_spot_storm(
                    now,
                    SpotStorm { zone: zone.clone(), instance_types: Vec::new(), fraction: *fraction },
                );
                drop(c);
                // The storm strikes now, before anyone looks at the cloud.
                drop(cloud.advance());
            }
            DrawnFault::AmiRelease { version } => {
                let version = version.clone().unwrap_or_else(|| format!("v{}", now.as_secs()));
                c.release_ami(&version);
            }
            DrawnFault::ZoneOutage { zone } => {
                // Validated against the catalog's zones when the scenario loaded.
                let _ = c.schedule_zone_outage(zone, now, None);
                drop(c);
                drop(cloud.advance());
            }
            _ => {}
        }
    }

    /// Heals a pool or outage fault.
    pub fn stop(&mut self, cloud: &SharedCloud, id: usize, fault: &DrawnFault, now: Duration) {
        let mut c = cloud.advance();
        match fault {
            DrawnFault::InsufficientCapacity { .. } => {
                for (key, pool) in self.saved_pools.remove(&id).unwrap_or_default() {
                    c.set_pool(&key, pool.free, pool.size, pool.refill_period);
                }
            }
            DrawnFault::ZoneOutage { zone } => {
                c.schedule_zone_outage_end(zone, now);
                drop(c);
                drop(cloud.advance());
            }
            _ => {}
        }
    }
}

/// Instance type names matching `patterns` (exact names or `prefix*`; empty = all), and
/// of those the `cheapest` N by on-demand price.
pub fn matching_types(
    catalog: &dovetail_fakecloud::Catalog,
    patterns: &[String],
    cheapest: Option<u32>,
) -> Vec<String> {
    let matches = |name: &str| {
        patterns.is_empty()
            || patterns.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == p,
            })
    };
    let mut types: Vec<(f64, String)> = catalog
        .types()
        .filter(|t| matches(&t.name))
        .map(|t| (t.on_demand_price.unwrap_or(f64::MAX), t.name.clone()))
        .collect();
    types.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    if let Some(n) = cheapest {
        types.truncate(n as usize);
    }
    types.into_iter().map(|(_, n)| n).collect()
}

/// Sets the cloud's knobs to the strongest active faults' values, keeping knobs no
/// scenario fault owns (scripted errors, stuck launches).
pub fn apply_knobs(cloud: &SharedCloud, active: &[&DrawnFault]) {
    let mut c = lock(cloud);
    let mut f: Faults = c.faults().clone();
    f.throttling = None;
    f.server_error_rate = 0.0;
    f.describe_lag = Duration::ZERO;
    f.sqs_delay_max = Duration::ZERO;
    f.sqs_duplicate_rate = 0.0;
    f.sqs_reorder = false;
    f.sqs_loss_rate = 0.0;
    f.missing_access_entries.clear();
    f.unreachable_subnets.clear();
    f.unreachable_security_groups.clear();
    for fault in active {
        match fault {
            DrawnFault::Ec2Throttling { burst, refill_per_second } => {
                let tighter = f.throttling.as_ref().is_none_or(|t| t.describe.refill_per_sec > *refill_per_second);
                if tighter {
                    f.throttling = Some(ThrottleConfig::uniform(*burst, *refill_per_second));
                }
            }
            DrawnFault::Ec2Errors { rate } => f.server_error_rate = f.server_error_rate.max(*rate),
            DrawnFault::DescribeLag { delay } => f.describe_lag = f.describe_lag.max(delay.0),
            DrawnFault::Sqs { delay, duplicate_rate, reorder, loss_rate } => {
                f.sqs_delay_max = f.sqs_delay_max.max(delay.0);
                f.sqs_duplicate_rate = f.sqs_duplicate_rate.max(*duplicate_rate);
                f.sqs_reorder |= *reorder;
                f.sqs_loss_rate = f.sqs_loss_rate.max(*loss_rate);
            }
            DrawnFault::AccessEntryMissing { role } => {
                f.missing_access_entries.insert(role.clone());
            }
            DrawnFault::NodeNetworkBlocked { cause, zones } if cause == "subnet" => {
                let cut = c.subnets().filter(|s| zones.contains(&s.zone)).map(|s| s.id.clone());
                f.unreachable_subnets.extend(cut.collect::<Vec<_>>());
            }
            DrawnFault::NodeNetworkBlocked { .. } => {
                let groups = c.security_groups().map(|g| g.id.clone());
                f.unreachable_security_groups.extend(groups.collect::<Vec<_>>());
            }
            _ => {}
        }
    }
    if &f != c.faults() {
        c.set_faults(f);
    }
}
