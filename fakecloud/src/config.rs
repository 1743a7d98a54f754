//! The knobs of a fake cloud, with EC2-like defaults. Faults are separate ([`crate::Faults`])
//! because scenarios switch them at runtime; these are fixed when the cloud is built.

use std::time::{Duration, SystemTime};

/// How a fake cloud behaves when nothing goes wrong.
///
/// Defaults (all overridable; each field documents its source):
/// launch delay 8–25 s, shutdown 5–20 s, terminated instances visible for 1 h,
/// 5,000 vCPU on-demand and spot quotas, spot prices change hourly within ±15%,
/// on-demand pools of 500–2,000 and spot pools of 40–400 two-vCPU instances refilling one
/// instance a minute, rebalance recommendations before half of the interruptions.
#[derive(Debug, Clone)]
pub struct CloudConfig {
    /// Root seed. Every random choice derives from it.
    pub seed: u64,
    /// Wall-clock time of simulated instant zero, used only to render timestamps.
    pub epoch: SystemTime,
    /// The account id in ARNs, owner ids and queue URLs.
    pub account_id: String,
    /// Name used in default subnet/security-group discovery tags
    /// (`karpenter.sh/discovery=<cluster_name>`).
    pub cluster_name: String,
    /// Kubernetes minor version in the EKS-optimised AMI SSM paths, e.g. `1.34`.
    pub kubernetes_version: String,
    /// Seeded pending → running delay range (EC2 typically takes 10–30 s).
    pub launch_delay: (Duration, Duration),
    /// Seeded shutting-down → terminated delay range.
    pub shutdown_delay: (Duration, Duration),
    /// Seeded stopping → stopped delay range.
    pub stop_delay: (Duration, Duration),
    /// How long a terminated instance stays visible to DescribeInstances (EC2: about an hour).
    pub terminated_visible_for: Duration,
    /// Account quota of running on-demand vCPUs (`VcpuLimitExceeded` beyond it).
    pub vcpu_quota_on_demand: u32,
    /// Account quota of spot vCPUs (`MaxSpotInstanceCountExceeded` beyond it).
    pub vcpu_quota_spot: u32,
    /// How often each pool's spot price may change.
    pub spot_price_period: Duration,
    /// Maximum relative deviation of the spot price from its reference, e.g. 0.15 = ±15%.
    pub spot_price_amplitude: f64,
    /// Multiplies the interruption hazard derived from the catalog's Spot Advisor bucket.
    /// 1.0 is the real rate (a few percent a month); scenarios raise it to see interruptions
    /// within hours.
    pub spot_hazard_multiplier: f64,
    /// Probability that an interruption is preceded by a rebalance recommendation.
    pub rebalance_probability: f64,
    /// Seeded lead time of the rebalance recommendation before the interruption warning.
    pub rebalance_lead: (Duration, Duration),
    /// Notice between the spot interruption warning and the reclaim. EC2: exactly 2 minutes.
    pub spot_notice: Duration,
    /// On-demand pool size range, in two-vCPU instance equivalents.
    pub on_demand_pool: (u32, u32),
    /// Spot pool size range, in two-vCPU instance equivalents.
    pub spot_pool: (u32, u32),
    /// A pool regains one free instance slot per this period, up to its size.
    pub pool_refill_period: Duration,
    /// Publish EC2 instance state-change notifications to the interruption queue.
    pub publish_state_changes: bool,
    /// Free IPv4 addresses in each default subnet (a /20 has 4,091).
    pub default_subnet_free_ips: u32,
    /// Capacity reservations (ODCRs and capacity blocks) the account holds from instant
    /// zero; none by default, and with none the cloud behaves exactly as before them.
    pub capacity_reservations: Vec<crate::reservations::ReservationSpec>,
}

/// The instant 2026-01-01T00:00:00Z, a convenient fixed epoch for tests.
pub const EPOCH_2026: Duration = Duration::from_secs(1_767_225_600);

impl CloudConfig {
    /// Defaults with the given seed and epoch. Both are required: a reproducible world
    /// must not read the OS clock or OS entropy.
    pub fn new(seed: u64, epoch: SystemTime) -> Self {
        Self {
            seed,
            epoch,
            account_id: "123456789012".into(),
            cluster_name: "dovetail".into(),
            kubernetes_version: "1.34".into(),
            launch_delay: (Duration::from_secs(8), Duration::from_secs(25)),
            shutdown_delay: (Duration::from_secs(5), Duration::from_secs(20)),
            stop_delay: (Duration::from_secs(10), Duration::from_secs(40)),
            terminated_visible_for: Duration::from_secs(3600),
            vcpu_quota_on_demand: 5_000,
            vcpu_quota_spot: 5_000,
            spot_price_period: Duration::from_secs(3600),
            spot_price_amplitude: 0.15,
            spot_hazard_multiplier: 1.0,
            rebalance_probability: 0.5,
            rebalance_lead: (Duration::from_secs(60), Duration::from_secs(600)),
            spot_notice: Duration::from_secs(120),
            on_demand_pool: (500, 2_000),
            spot_pool: (40, 400),
            pool_refill_period: Duration::from_secs(60),
            publish_state_changes: true,
            default_subnet_free_ips: 4_091,
            capacity_reservations: Vec::new(),
        }
    }
}
