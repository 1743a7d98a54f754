//! Scenario faults wired to the layers that own them: the fake cloud ([`cloud`]), the API
//! server ([`apiserver`]) and turmoil's network and hosts ([`network`]).
//!
//! A [`DrawnFault`] is one occurrence with every parameter drawn (the plan prints it). The
//! runner calls [`Faults::start`] and [`Faults::stop`] between turmoil steps; layers whose
//! knobs several faults may share (error rates, delays) are recomputed from the set of
//! active faults, so overlapping occurrences compose (strongest wins) and healing one
//! never heals another.

pub mod apiserver;
pub mod cloud;
pub mod network;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::apiserver::ApiServer;
use crate::scenario::SimDuration;
use crate::scenario::dist::Dist;
use crate::scenario::faults::FaultSpec;
use crate::world::{SimRng, Trace, TraceEntry};
use dovetail_fakecloud::cloud::SharedCloud;
use rand::Rng;

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
    /// SQS delay, duplicates, reordering.
    #[serde(rename_all = "camelCase")]
    Sqs {
        /// Extra delay up to this.
        delay: SimDuration,
        /// P(duplicate).
        duplicate_rate: f64,
        /// Shuffle.
        reorder: bool,
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
    /// No packets between two endpoints.
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
        if let Some(s) = &spec.partition {
            return DrawnFault::Partition { between: s.between.clone() };
        }
        if let Some(s) = &spec.latency {
            return DrawnFault::Latency { between: s.between.clone(), latency: s.latency.draw(rng) };
        }
        if let Some(s) = &spec.controller_crash {
            return DrawnFault::ControllerCrash { target: s.target.clone().unwrap_or_else(|| "leader".into()) };
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

/// What the fault machinery needs from the world.
pub struct Layers {
    /// The API server.
    pub server: ApiServer,
    /// The fake cloud, when the world has one.
    pub cloud: Option<SharedCloud>,
    /// The controller replicas' host names.
    pub controllers: Vec<String>,
    /// The run's trace (faults are recorded in it).
    pub trace: Trace,
}

/// The active faults and what healing them restores.
pub struct Faults {
    layers: Layers,
    active: BTreeMap<usize, DrawnFault>,
    cloud: cloud::CloudState,
    network: network::NetworkState,
    /// Occurrences started, by kind.
    pub started: BTreeMap<String, u64>,
}

impl Faults {
    /// Nothing active yet.
    pub fn new(layers: Layers, rng: SimRng) -> Self {
        Self {
            layers,
            active: BTreeMap::new(),
            cloud: cloud::CloudState::new(rng),
            network: network::NetworkState::default(),
            started: BTreeMap::new(),
        }
    }

    /// Starts occurrence `id` now.
    pub fn start(&mut self, sim: &mut turmoil::Sim<'_>, id: usize, fault: &DrawnFault, now: Duration) {
        self.record(now, "start", fault);
        let kind = serde_json::to_value(fault).ok().and_then(|v| v["kind"].as_str().map(str::to_string));
        *self.started.entry(kind.unwrap_or_default()).or_default() += 1;
        match fault {
            DrawnFault::InsufficientCapacity { .. }
            | DrawnFault::SpotInterruption { .. }
            | DrawnFault::ZoneOutage { .. }
            | DrawnFault::AmiRelease { .. } => {
                if let Some(c) = &self.layers.cloud {
                    self.cloud.start(c, id, fault, now);
                }
            }
            DrawnFault::WatchExpiry => apiserver::expire_watches(&self.layers.server),
            DrawnFault::Partition { .. }
            | DrawnFault::Latency { .. }
            | DrawnFault::ControllerCrash { .. }
            | DrawnFault::LeaderFailover => {
                self.network.start(sim, &self.layers, id, fault);
            }
            _ => {}
        }
        if !matches!(
            fault,
            DrawnFault::SpotInterruption { .. } | DrawnFault::WatchExpiry | DrawnFault::AmiRelease { .. }
        ) {
            self.active.insert(id, fault.clone());
        }
        self.recompute();
    }

    /// Heals occurrence `id` now.
    pub fn stop(&mut self, sim: &mut turmoil::Sim<'_>, id: usize, now: Duration) {
        let Some(fault) = self.active.remove(&id) else { return };
        self.record(now, "heal", &fault);
        match &fault {
            DrawnFault::InsufficientCapacity { .. } | DrawnFault::ZoneOutage { .. } => {
                if let Some(c) = &self.layers.cloud {
                    self.cloud.stop(c, id, &fault, now);
                }
            }
            DrawnFault::Partition { .. }
            | DrawnFault::Latency { .. }
            | DrawnFault::ControllerCrash { .. }
            | DrawnFault::LeaderFailover => self.network.stop(sim, &self.layers, id),
            _ => {}
        }
        self.recompute();
    }

    /// Heals everything still active (the end of the fault phase).
    pub fn heal_all(&mut self, sim: &mut turmoil::Sim<'_>, now: Duration) {
        let ids: Vec<usize> = self.active.keys().copied().collect();
        for id in ids {
            self.stop(sim, id, now);
        }
    }

    /// Whether any fault is active.
    pub fn any_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// Restarts every controller replica, one at a time (a rolling upgrade's restarts).
    pub fn bounce_controller(&mut self, sim: &mut turmoil::Sim<'_>, host: &str, now: Duration) {
        self.layers.trace.record(TraceEntry {
            at: now,
            source: "fault",
            verb: "upgrade".into(),
            subject: format!("restart {host}"),
        });
        sim.bounce(host);
    }

    fn recompute(&mut self) {
        let active: Vec<&DrawnFault> = self.active.values().collect();
        apiserver::apply(&self.layers.server, &active);
        if let Some(c) = &self.layers.cloud {
            cloud::apply_knobs(c, &active);
        }
    }

    fn record(&self, now: Duration, verb: &str, fault: &DrawnFault) {
        self.layers.trace.record(TraceEntry { at: now, source: "fault", verb: verb.into(), subject: fault.describe() });
    }
}
