//! `FakeCloud`: the whole deterministic state machine and its clock.
//!
//! Time only moves when the caller says so ([`FakeCloud::advance_to`]), and the cloud does
//! work only at the deadlines it has scheduled ([`FakeCloud::next_deadline`]), so an idle
//! simulated hour with a thousand instances costs a handful of events, not a tick loop.
//! The EC2 and SQS operations live in child modules (`ops_ec2`, `ops_sqs`, `fleet`,
//! `launch`) as further `impl FakeCloud` blocks. Here: construction, time and inspection;
//! `lifecycle` runs scheduled events (launch completion, interruptions, outages) and
//! `scenario` holds fault switches and scenario controls.
//!
//! [`SharedCloud`] is the handle the served cloud, the simulated world and fault injectors
//! share; it owns the cloud's time ([`CloudClock`]), so nobody else moves it.

mod clock;
pub(crate) mod fleet;
pub(crate) mod launch;
pub(crate) mod launch_template;
mod lifecycle;
pub(crate) mod ops_ec2;
mod ops_sqs;
mod reservations;
mod scenario;
mod shared;

pub use clock::{CloudClock, TokioClock, TurmoilClock};
pub use shared::{SharedCloud, lock, shared};

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use crate::capacity::{CapacityType, Pools};
use crate::catalog::Catalog;
use crate::config::CloudConfig;
use crate::events::EventQueue;
use crate::faults::Faults;
use crate::ids::IdGen;
use crate::images::Images;
use crate::instance::Instance;
use crate::ledger::{CostReport, Ledger};
use crate::network::{Network, SecurityGroup, Subnet};
use crate::node_auth::NodeAuth;
use crate::spot::SpotMarket;
use crate::sqs::Sqs;
use crate::tags::Tags;
use crate::throttle::Throttle;
use dovetail_world::Stream;
use fleet::CreateFleetOutput;
use launch::RunInstancesOutput;
use launch_template::LaunchTemplate;

/// The first AMI release every fake cloud starts with.
pub const INITIAL_AMI_VERSION: &str = "v20260101";

/// A fake EC2 + SQS account in one region.
///
/// # Guarantees
/// The same config, catalog and sequence of calls (with the same times) produce the same
/// ids, prices, capacity outcomes, interruptions and ledger, in any process.
///
/// # Caveats
/// Times passed in must not go backwards; an earlier time is treated as "now".
#[derive(Debug)]
pub struct FakeCloud {
    pub(crate) config: CloudConfig,
    pub(crate) catalog: Catalog,
    pub(crate) now: Duration,
    pub(crate) ids: IdGen,
    pub(crate) message_ids: IdGen,
    pub(crate) rng_launch: ChaCha8Rng,
    pub(crate) rng_spot: ChaCha8Rng,
    pub(crate) rng_fleet: ChaCha8Rng,
    pub(crate) rng_faults: ChaCha8Rng,
    pub(crate) rng_sqs: ChaCha8Rng,
    pub(crate) pools: Pools,
    pub(crate) market: SpotMarket,
    pub(crate) network: Network,
    pub(crate) images: Images,
    pub(crate) launch_templates: BTreeMap<String, LaunchTemplate>,
    pub(crate) instances: BTreeMap<String, Instance>,
    pub(crate) events: EventQueue,
    pub(crate) sqs: Sqs,
    pub(crate) interruption_queue: Option<String>,
    pub(crate) ledger: Ledger,
    pub(crate) faults: Faults,
    pub(crate) node_auth: NodeAuth,
    pub(crate) throttle: Option<Throttle>,
    pub(crate) zone_outages: BTreeSet<String>,
    pub(crate) fleet_tokens: BTreeMap<String, (String, CreateFleetOutput)>,
    pub(crate) run_tokens: BTreeMap<String, (String, RunInstancesOutput)>,
    pub(crate) vcpu_in_use: BTreeMap<CapacityType, u32>,
    pub(crate) fleet_count: u64,
    /// Every instant fleet's requested total target capacity, by fleet id.
    pub(crate) fleet_targets: BTreeMap<String, u32>,
    /// Every event published to the interruption queue, in order.
    pub(crate) published: Vec<crate::published::Published>,
    /// Capacity reservations by id.
    pub(crate) reservations: BTreeMap<String, crate::reservations::CapacityReservation>,
}

impl FakeCloud {
    /// A cloud with one VPC, one subnet and the security group per zone (tagged
    /// `karpenter.sh/discovery=<cluster_name>`), and AL2023 AMIs of [`INITIAL_AMI_VERSION`].
    pub fn new(config: CloudConfig, catalog: Catalog) -> Self {
        let seed = config.seed;
        let mut ids = IdGen::new(seed);
        let mut network = Network { vpc_id: ids.long("vpc"), ..Network::default() };
        let discovery: Tags = [("karpenter.sh/discovery".to_string(), config.cluster_name.clone())].into();
        for (i, zone) in catalog.zones().iter().enumerate() {
            let id = ids.long("subnet");
            let mut tags = discovery.clone();
            tags.insert("Name".into(), format!("{}-private-{}", config.cluster_name, zone.name));
            network.subnets.insert(
                id.clone(),
                Subnet {
                    id,
                    vpc_id: network.vpc_id.clone(),
                    zone: zone.name.clone(),
                    zone_id: zone.id.clone(),
                    cidr: format!("10.0.{}.0/20", i * 16),
                    free_ips: config.default_subnet_free_ips,
                    tags,
                    next_host: 4,
                },
            );
        }
        let sg = ids.long("sg");
        network.security_groups.insert(
            sg.clone(),
            SecurityGroup {
                id: sg,
                name: format!("{}-node", config.cluster_name),
                description: "Karpenter node security group".into(),
                vpc_id: network.vpc_id.clone(),
                tags: discovery,
            },
        );
        let mut images = Images::new(&config.kubernetes_version);
        images.release(&mut ids, INITIAL_AMI_VERSION, Duration::ZERO);
        let mut cloud = Self {
            pools: Pools::new(&config),
            market: SpotMarket::new(&config),
            message_ids: IdGen::new(seed ^ 0x5135),
            rng_launch: Stream::CloudLaunch.rng(seed),
            rng_spot: Stream::CloudSpot.rng(seed),
            rng_fleet: Stream::CloudFleet.rng(seed),
            rng_faults: Stream::CloudFaults.rng(seed),
            rng_sqs: Stream::CloudSqs.rng(seed),
            now: Duration::ZERO,
            ids,
            network,
            images,
            launch_templates: BTreeMap::new(),
            instances: BTreeMap::new(),
            events: EventQueue::default(),
            sqs: Sqs::default(),
            interruption_queue: None,
            ledger: Ledger::default(),
            faults: Faults::default(),
            node_auth: NodeAuth::default(),
            throttle: None,
            zone_outages: BTreeSet::new(),
            fleet_tokens: BTreeMap::new(),
            run_tokens: BTreeMap::new(),
            vcpu_in_use: BTreeMap::new(),
            fleet_count: 0,
            fleet_targets: BTreeMap::new(),
            published: Vec::new(),
            reservations: BTreeMap::new(),
            catalog,
            config,
        };
        cloud.seed_reservations();
        cloud
    }

    /// Every event published to the interruption queue so far, in order, with when each
    /// became receivable (the cloud's record, for oracles).
    pub fn published(&self) -> &[crate::published::Published] {
        &self.published
    }

    /// The configuration the cloud was built with.
    pub fn config(&self) -> &CloudConfig {
        &self.config
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The region.
    pub fn region(&self) -> &str {
        self.catalog.region()
    }

    // ---------------------------------------------------------------- time

    /// Current simulated time (the latest time passed to [`Self::advance_to`]).
    pub fn now(&self) -> Duration {
        self.now
    }

    /// The earliest time at which the cloud will change on its own, if any: a launch
    /// completing, a reclaim, a purge, a scripted fault or a delayed SQS message becoming
    /// visible. Pools refill and prices move lazily and need no deadline.
    pub fn next_deadline(&self) -> Option<Duration> {
        let event = self.events.next_deadline();
        let sqs = self.sqs.next_visible(self.now);
        match (event, sqs) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Processes every event due by `now`, in time order, and moves the clock to `now`.
    /// In a world, [`SharedCloud::advance`] is the one caller: it reads the world's clock.
    pub fn advance_to(&mut self, now: Duration) {
        while !self.events.is_empty()
            && let Some((at, event)) = self.events.pop_due(now)
        {
            self.now = self.now.max(at);
            self.handle(event);
        }
        self.now = self.now.max(now);
    }
}

impl FakeCloud {
    // ---------------------------------------------------------------- inspection

    /// Every instance not yet purged, by id.
    pub fn instances(&self) -> impl Iterator<Item = &Instance> {
        self.instances.values()
    }

    /// The total target capacity CreateFleet `fleet_id` asked for: an outside observer
    /// compares it with the instances that carry the fleet id to see a double launch.
    pub fn fleet_target(&self, fleet_id: &str) -> Option<u32> {
        self.fleet_targets.get(fleet_id).copied()
    }

    /// One instance.
    pub fn instance(&self, id: &str) -> Option<&Instance> {
        self.instances.get(id)
    }

    /// Subnets by id.
    pub fn subnets(&self) -> impl Iterator<Item = &Subnet> {
        self.network.subnets.values()
    }

    /// Security groups by id.
    pub fn security_groups(&self) -> impl Iterator<Item = &SecurityGroup> {
        self.network.security_groups.values()
    }

    /// The AMI registry and SSM parameters.
    pub fn images(&self) -> &Images {
        &self.images
    }

    /// Launch templates by id.
    pub fn launch_templates(&self) -> impl Iterator<Item = &LaunchTemplate> {
        self.launch_templates.values()
    }

    /// SQS state.
    pub fn sqs(&self) -> &Sqs {
        &self.sqs
    }

    /// Billing records and the call log.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Totals and rates at the current time.
    pub fn cost_report(&self) -> CostReport {
        self.ledger.report(self.now, &self.catalog, &self.market)
    }

    /// USD billed so far for one instance (0 for an instance never billed).
    pub fn cost_of_instance(&self, instance_id: &str) -> f64 {
        self.ledger
            .records
            .get(instance_id)
            .map_or(0.0, |r| self.ledger.cost_of(r, self.now, &self.catalog, &self.market))
    }

    /// Number of scheduled events (for benchmarks and tests of idleness).
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// A SHA-256 over everything observable: instances, ledger, costs, queues and the call
    /// log. Two runs with the same seed and inputs must produce the same digest.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        for i in self.instances.values() {
            h.update(format!(
                "{}|{}|{}|{}|{}|{:?}|{:?}|{:?}|{}|{:?}|{:?}\n",
                i.id,
                i.instance_type,
                i.zone,
                i.capacity_type.as_str(),
                i.state.name(),
                i.launch_time,
                i.running_at,
                i.billing_end,
                i.private_ip,
                i.tags,
                i.reclaim_at
            ));
        }
        for r in self.ledger.records.values() {
            h.update(format!("{r:?}\n"));
        }
        h.update(serde_json::to_string(&self.cost_report()).unwrap_or_default());
        for call in &self.ledger.calls {
            h.update(format!("{:?}|{}|{}\n", call.at, call.action, call.outcome));
        }
        for q in self.sqs.queues.values() {
            for m in q.messages.values() {
                h.update(format!("{}|{:?}|{}\n", m.message_id, m.sent_at, m.body));
            }
        }
        hex::encode(h.finalize())
    }
}

/// A uniform duration in `[lo, hi]`, at millisecond resolution.
pub(crate) fn draw_between(rng: &mut ChaCha8Rng, lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    let span = (hi - lo).as_millis() as u64;
    lo + Duration::from_millis(rng.random_range(0..=span))
}

#[cfg(test)]
mod tests;
