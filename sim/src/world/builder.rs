//! The world builder: one seed in, one turmoil world with its hosts out.
//!
//! Every world of the project (a scenario run, `dovetail serve`, `dovetail bench`, the
//! integration tests) is assembled here, in the spirit of turmoil's `Builder`: the caller
//! names the shape it needs (the API server alone, with the cluster's actors, with the
//! fake cloud, with the production controller) and the builder adds the hosts in one fixed
//! order, hands each component its own named random stream ([`Stream`]) and returns a
//! [`World`] to step. This is the only place that builds a `turmoil::Sim`.

use std::time::Duration;

use dovetail_controller::runtime::Settings;
use dovetail_fakecloud::cloud::{SharedCloud, lock, shared};
use dovetail_fakecloud::wire::{Server, serve_turmoil};
use dovetail_fakecloud::{Catalog, CloudConfig, FakeCloud};

use super::{Stream, Trace, WorldConfig, clock};
use crate::apiserver::{self, ApiServer};
use crate::controller_host::{self, AWS_ENDPOINT, INTERRUPTION_QUEUE, Replicas};
use crate::kube_client::ClientFaults;

/// A built world, ready to step: the simulation and handles on what lives outside its
/// hosts (the API server's store, the fake cloud's state, the controller replicas).
pub struct World<'a> {
    /// The turmoil simulation; the caller adds its own clients and steps it.
    pub sim: turmoil::Sim<'a>,
    /// The simulated API server (its store outlives the `apiserver` host, like etcd).
    pub server: ApiServer,
    /// The run's trace (the API server records into it).
    pub trace: Trace,
    /// The fake cloud served as host `aws`, when the world has one.
    pub cloud: Option<SharedCloud>,
    /// The runner's controller replicas, when the world has them.
    pub replicas: Option<Replicas>,
    /// The settings the world was built with.
    pub config: WorldConfig,
    /// Every named stream the world's components draw from, in the order they were handed
    /// out (printed with the expanded scenario).
    pub streams: Vec<Stream>,
}

impl World<'_> {
    /// A builder for a world whose every random draw follows from `seed`.
    pub fn builder(seed: u64) -> WorldBuilder {
        WorldBuilder::new(seed)
    }
}

/// Which controller host(s) a world runs.
#[derive(Clone, Debug)]
enum ControllerHosts {
    /// One `controller` host whose kube client injects `faults`; a controller error ends
    /// the host (tests see it).
    Single { settings: Settings, faults: ClientFaults },
    /// The runner's replicas (`controller`, `controller-b`, ...), with leader election when
    /// more than one; a replica that exits is listed for the runner to restart.
    Replicas { settings: Settings, count: u8 },
}

/// Builds a [`World`]. Defaults: [`WorldConfig::new`] (10 ms tick, 1–5 ms links, one
/// simulated hour), a fresh recording [`Trace`], the API server alone.
#[derive(Clone, Debug)]
pub struct WorldBuilder {
    config: WorldConfig,
    trace: Option<Trace>,
    actors: bool,
    cloud: Option<(String, Vec<String>)>,
    controller: Option<ControllerHosts>,
    reservations: Vec<dovetail_fakecloud::ReservationSpec>,
}

impl WorldBuilder {
    /// A builder for `seed` with the defaults above.
    pub fn new(seed: u64) -> Self {
        Self {
            config: WorldConfig::new(seed),
            trace: None,
            actors: false,
            cloud: None,
            controller: None,
            reservations: Vec::new(),
        }
    }

    /// How long the simulation may run; turmoil fails a step past it.
    pub fn duration(&mut self, duration: Duration) -> &mut Self {
        self.config.duration = duration;
        self
    }

    /// turmoil's tick: the granularity of simulated time.
    pub fn tick(&mut self, tick: Duration) -> &mut Self {
        self.config.tick = tick;
        self
    }

    /// The range of one-way message latency.
    pub fn latency(&mut self, min: Duration, max: Duration) -> &mut Self {
        self.config.min_latency = min;
        self.config.max_latency = max;
        self
    }

    /// The trace the API server records into (`Trace::hash_only()` for long live worlds).
    pub fn trace(&mut self, trace: Trace) -> &mut Self {
        self.trace = Some(trace);
        self
    }

    /// Runs the cluster's actors (scheduler, kubelets, workload controllers, PDB status,
    /// pod GC) beside the API server, as the control plane and kubelets would.
    pub fn cluster_actors(&mut self) -> &mut Self {
        self.actors = true;
        self
    }

    /// Adds the fake cloud of `region`, served as host `aws`; the cluster's nodes follow
    /// its instances (implies [`Self::cluster_actors`]).
    pub fn cloud(&mut self, region: &str) -> &mut Self {
        self.actors = true;
        self.cloud = Some((region.to_string(), Vec::new()));
        self
    }

    /// The capacity reservations the cloud's account holds from instant zero.
    pub fn capacity_reservations(&mut self, reservations: Vec<dovetail_fakecloud::ReservationSpec>) -> &mut Self {
        self.reservations = reservations;
        self
    }

    /// Keeps the cloud's discoverable subnets to `zones` (none: every zone of the region).
    pub fn zones(&mut self, zones: &[String]) -> &mut Self {
        if let Some((_, z)) = self.cloud.as_mut() {
            *z = zones.to_vec();
        }
        self
    }

    /// Adds the production controller as host `controller` (implies a cloud; us-east-1
    /// unless [`Self::cloud`] chose another region).
    pub fn controller(&mut self, settings: Settings) -> &mut Self {
        self.ensure_cloud(&settings.region);
        self.controller = Some(ControllerHosts::Single { settings, faults: ClientFaults::default() });
        self
    }

    /// Makes the controller's kube client inject `faults` (the world around the controller
    /// misbehaving; the controller itself is unchanged). Call after [`Self::controller`].
    pub fn client_faults(&mut self, faults: ClientFaults) -> &mut Self {
        if let Some(ControllerHosts::Single { faults: f, .. }) = self.controller.as_mut() {
            *f = faults;
        }
        self
    }

    /// Adds `count` controller replicas as the scenario runner runs them (see
    /// [`controller_host::add_controller_replicas`]).
    pub fn controller_replicas(&mut self, settings: Settings, count: u8) -> &mut Self {
        self.ensure_cloud(&settings.region);
        self.controller = Some(ControllerHosts::Replicas { settings, count });
        self
    }

    fn ensure_cloud(&mut self, region: &str) {
        if self.cloud.is_none() {
            self.cloud(region);
        }
    }

    /// Builds the world: seeds `fastrand` and turmoil, then adds the hosts in a fixed
    /// order (`apiserver`, `aws`, the controller replicas).
    ///
    /// # Errors
    /// The cloud's region has no EC2 catalog.
    pub fn build<'a>(&self) -> anyhow::Result<World<'a>> {
        let seed = self.config.seed;
        let mut streams = vec![Stream::Turmoil, Stream::Fastrand, Stream::ApiServer, Stream::ApiServerFaults];
        let mut sim = new_sim(&self.config);
        let trace = self.trace.clone().unwrap_or_default();
        let server = apiserver::sim_server(seed, trace.clone());
        let cloud = match &self.cloud {
            None => None,
            Some((region, zones)) => {
                streams.push(Stream::Cloud);
                let mut config = CloudConfig::new(Stream::Cloud.seed(seed), clock::sim_epoch());
                config.capacity_reservations = self.reservations.clone();
                let cloud = shared(FakeCloud::new(config, Catalog::load(region)?));
                {
                    let mut c = lock(&cloud);
                    if self.controller.is_some() {
                        c.create_interruption_queue(INTERRUPTION_QUEUE);
                    }
                    if !zones.is_empty() {
                        c.restrict_subnets_to_zones(zones);
                    }
                }
                Some(cloud)
            }
        };
        if self.actors {
            streams.extend(crate::actors::STREAMS);
            if cloud.is_some() {
                streams.push(Stream::Nodes);
                streams.push(Stream::CloudControllerManager);
            }
            crate::actors::add_cluster_host(&mut sim, &server, seed, cloud.clone());
        } else {
            apiserver::add_host(&mut sim, &server);
        }
        if let Some(cloud) = &cloud {
            add_cloud_host(&mut sim, cloud);
        }
        let replicas = match self.controller.clone() {
            None => None,
            Some(ControllerHosts::Single { settings, faults }) => {
                streams.push(Stream::Controller(0));
                controller_host::add_controller_host(&mut sim, seed, settings, faults);
                None
            }
            Some(ControllerHosts::Replicas { settings, count }) => {
                streams.extend((0..count.max(1)).map(Stream::Controller));
                Some(controller_host::add_controller_replicas(&mut sim, seed, settings, count))
            }
        };
        Ok(World { sim, server, trace, cloud, replicas, config: self.config.clone(), streams })
    }
}

/// A turmoil simulation that is a pure function of the seed: its RNG and the thread-local
/// `fastrand` (which the AWS SDK draws idempotency tokens and invocation ids from; turmoil
/// runs every host on this thread) come from the seed's streams,
/// its epoch is fixed, and every setting is passed explicitly.
fn new_sim<'a>(cfg: &WorldConfig) -> turmoil::Sim<'a> {
    fastrand::seed(Stream::Fastrand.seed(cfg.seed));
    turmoil::Builder::new()
        .rng_seed(Stream::Turmoil.seed(cfg.seed))
        .epoch(clock::sim_epoch())
        .simulation_duration(cfg.duration)
        .tick_duration(cfg.tick)
        .min_message_latency(cfg.min_latency)
        .max_message_latency(cfg.max_latency)
        .tcp_capacity(TCP_CAPACITY)
        .build()
}

/// Segments a TCP stream may have in flight each way, and SYNs a listener holds before
/// `accept`: Linux's default listen backlog as tokio's `TcpListener::bind` asks for it
/// (1024). turmoil's default, 64, panics the run when more SYNs wait ("server socket buffer
/// full", turmoil `host.rs`), which a partition does on purpose: it holds the controller's
/// connection attempts (a minute of connect timeouts and retries is over 64 of them) and
/// delivers them together when it heals. A real listener's backlog is that deep, and a real
/// send buffer holds far more than 64 writes.
pub const TCP_CAPACITY: usize = 1024;

/// Serves the fake cloud as host `aws` (port 80), the endpoint the controller dials.
fn add_cloud_host(sim: &mut turmoil::Sim<'_>, cloud: &SharedCloud) {
    let served = cloud.clone();
    sim.host("aws", move || {
        let served = served.clone();
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 80)).await?;
            serve_turmoil(listener, Server::new(served, AWS_ENDPOINT)).await?;
            Ok(())
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_world_names_the_streams_of_the_components_it_adds() {
        let api = World::builder(1).build().unwrap();
        assert_eq!(api.streams, vec![Stream::Turmoil, Stream::Fastrand, Stream::ApiServer, Stream::ApiServerFaults]);
        assert!(api.cloud.is_none() && api.replicas.is_none());

        let full =
            World::builder(1).controller_replicas(controller_host::default_settings("us-east-1"), 2).build().unwrap();
        for s in [Stream::Cloud, Stream::Kubelet, Stream::Nodes, Stream::Controller(0), Stream::Controller(1)] {
            assert!(full.streams.contains(&s), "{s} missing from {:?}", full.streams);
        }
        assert_eq!(full.replicas.as_ref().map(|r| r.hosts.len()), Some(2));
    }

    #[test]
    fn settings_reach_the_world() {
        let world = World::builder(7)
            .duration(Duration::from_secs(90))
            .tick(Duration::from_millis(5))
            .latency(Duration::from_millis(2), Duration::from_millis(3))
            .build()
            .unwrap();
        assert_eq!(world.config.seed, 7);
        assert_eq!(world.config.duration, Duration::from_secs(90));
        assert_eq!(world.config.tick, Duration::from_millis(5));
        assert_eq!(
            (world.config.min_latency, world.config.max_latency),
            (Duration::from_millis(2), Duration::from_millis(3))
        );
    }
}
