//! Scenario faults wired to the layers that own them: the fake cloud ([`cloud`], and EC2's
//! status checks in [`instance_status`]), the API server ([`apiserver`], and the kubelets'
//! conditions in [`node_conditions`]) and turmoil's network and hosts ([`network`]).
//!
//! A [`DrawnFault`] is one occurrence with every parameter drawn (the scenario's plan
//! draws and prints it). The runner calls [`Faults::start`] and [`Faults::stop`] between turmoil steps; layers whose
//! knobs several faults may share (error rates, delays) are recomputed from the set of
//! active faults, so overlapping occurrences compose (strongest wins) and healing one
//! never heals another.

pub mod apiserver;
pub mod cloud;
pub mod instance_status;
pub mod network;
pub mod node_conditions;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::apiserver::ApiServer;
use crate::scenario::drawn_fault::DrawnFault;
use dovetail_fakecloud::cloud::SharedCloud;
use dovetail_world::{SimRng, Trace, TraceEntry};

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
    node_conditions: node_conditions::NodeConditionsState,
    instance_status: instance_status::InstanceStatusState,
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
            node_conditions: node_conditions::NodeConditionsState::default(),
            instance_status: instance_status::InstanceStatusState::default(),
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
            DrawnFault::NodeConditions { .. } => {
                let sick = self.node_conditions.start(&self.layers.server, id, fault, now);
                self.layers.trace.record(TraceEntry {
                    at: now,
                    source: "fault",
                    verb: "sick-kubelets".into(),
                    subject: sick.join(","),
                });
            }
            DrawnFault::InstanceStatus { .. } => {
                if let Some(c) = &self.layers.cloud {
                    let unhealthy = self.instance_status.start(c, id, fault, now);
                    self.layers.trace.record(TraceEntry {
                        at: now,
                        source: "fault",
                        verb: "unhealthy-instances".into(),
                        subject: unhealthy.join(","),
                    });
                }
            }
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
            DrawnFault::NodeConditions { .. } => self.node_conditions.stop(&self.layers.server, id, &fault, now),
            DrawnFault::InstanceStatus { .. } => {
                if let Some(c) = &self.layers.cloud {
                    self.instance_status.stop(c, id, &fault);
                }
            }
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
