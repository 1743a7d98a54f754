//! A scenario's world: the plan its seed drew, drawn once, and the world built for it.
//!
//! `dovetail run` prints [`ScenarioWorld::expanded`] and then runs the very same world, so
//! what is printed is what runs. The world is the API server with the cluster's actors, the
//! fake cloud and the controller replicas, or the API server alone for `controller: none`;
//! a `driver` client installs the manifests and plays the workloads' timeline, and an API
//! server alone also gets an `observer` client counting watch events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::runtime::watcher;
use serde::Serialize;

use super::{SimDuration, Stream, World, WorldConfig, reproduce_command};
use crate::apiserver;
use crate::controller_host::default_settings;
use crate::kube_client::sim_kube_client;
use crate::run::driver::{self, DriverLog};
use crate::scenario::plan::Plan;
use crate::scenario::{ControllerSpec, Loaded};

/// Simulated time a run may overrun its scenario's duration before turmoil fails it (the
/// runner stops at the duration; the margin covers the last step's in-flight work).
const DURATION_MARGIN: Duration = Duration::from_secs(60);

/// A scenario's world, built and not yet stepped.
pub struct ScenarioWorld<'a> {
    /// The world: simulation, API server, cloud, controller replicas.
    pub world: World<'a>,
    /// The scenario.
    pub loaded: Loaded,
    /// What the seed drew (drawn once, here).
    pub plan: Plan,
    /// What the driver did, filled in as the world runs.
    pub driver: Arc<DriverLog>,
    /// Pod and node watch events the observer counted (API-only scenarios; 0 otherwise).
    pub observed: Arc<AtomicU64>,
}

/// The world's settings as the expanded scenario prints them (TigerBeetle's simulator
/// prints every option a seed chose before the first tick).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorldSettings {
    /// The root seed.
    pub seed: u64,
    /// turmoil's tick.
    pub tick: SimDuration,
    /// Shortest one-way message latency.
    pub latency_min: SimDuration,
    /// Longest one-way message latency.
    pub latency_max: SimDuration,
    /// How long turmoil lets the simulation run.
    pub duration: SimDuration,
    /// Every named random stream, by the name it is derived from.
    pub streams: Vec<String>,
}

impl ScenarioWorld<'_> {
    /// Draws `loaded`'s plan for `seed` and builds its world.
    ///
    /// # Errors
    /// The scenario's region has no EC2 catalog.
    pub fn build(loaded: &Loaded, seed: u64) -> anyhow::Result<Self> {
        let plan = loaded.plan(seed);
        let defaults = WorldConfig::new(seed);
        let mut builder = World::builder(seed);
        builder
            .duration(plan.duration.0 + DURATION_MARGIN)
            .tick(defaults.tick)
            .latency(defaults.min_latency, defaults.max_latency);
        if let ControllerSpec::Run(config) = &loaded.scenario.controller {
            let mut settings = default_settings(&loaded.scenario.region);
            config.apply_to(&mut settings);
            let zones: &[String] = if loaded.scenario.zones.is_empty() { &[] } else { &loaded.zones };
            builder.cloud(&loaded.scenario.region).zones(zones).controller_replicas(settings, config.replicas);
            builder.capacity_reservations(
                loaded
                    .scenario
                    .capacity_reservations
                    .iter()
                    .map(crate::scenario::reservations::Reservation::spec)
                    .collect(),
            );
        }
        let mut world = builder.build()?;
        if let Some(cloud) = &world.cloud {
            let mut cloud = dovetail_fakecloud::cloud::lock(cloud);
            for (instance_type, price) in &loaded.scenario.on_demand_prices {
                cloud
                    .set_on_demand_price(instance_type, *price)
                    .map_err(|e| anyhow::anyhow!("onDemandPrices.{instance_type}: {e}"))?;
            }
        }
        world.streams.extend([Stream::FaultWiring, Stream::ScenarioSteps]);
        world.streams.extend((0..loaded.scenario.workloads.len()).map(Stream::Workload));
        world.streams.extend((0..loaded.scenario.faults.len()).map(Stream::Fault));

        let objects = crate::scenario::render::workload_objects(&loaded.scenario.workloads, &plan);
        let driver = driver::add_driver(&mut world.sim, loaded, objects, &world.server, seed);
        let observed = Arc::new(AtomicU64::new(0));
        if world.cloud.is_none() {
            add_watch_observer(&mut world.sim, observed.clone(), plan.duration.0);
        }
        Ok(ScenarioWorld { world, loaded: loaded.clone(), plan, driver, observed })
    }

    /// The run's root seed.
    pub fn seed(&self) -> u64 {
        self.world.config.seed
    }

    /// The world's settings, as printed.
    pub fn settings(&self) -> WorldSettings {
        let c = &self.world.config;
        WorldSettings {
            seed: c.seed,
            tick: SimDuration(c.tick),
            latency_min: SimDuration(c.min_latency),
            latency_max: SimDuration(c.max_latency),
            duration: SimDuration(c.duration),
            streams: self.world.streams.iter().map(|s| s.name().into_owned()).collect(),
        }
    }

    /// The expanded scenario: the world's settings, then every value the seed drew, as YAML.
    pub fn expanded(&self) -> String {
        #[derive(Serialize)]
        struct Expanded<'s> {
            world: &'s WorldSettings,
        }
        let settings = self.settings();
        let world = serde_saphyr::to_string(&Expanded { world: &settings });
        let plan = serde_saphyr::to_string(&self.plan);
        match (world, plan) {
            (Ok(world), Ok(plan)) => format!("{world}{plan}"),
            (Err(e), _) | (_, Err(e)) => format!("# cannot print the expanded scenario: {e}\n"),
        }
    }

    /// The command that replays this run.
    pub fn reproduce(&self) -> String {
        reproduce_command(&self.loaded.path, self.seed())
    }

    /// Watch events the observer has counted so far.
    pub fn watch_events(&self) -> u64 {
        self.observed.load(Ordering::Relaxed)
    }
}

/// Counts pod and node watch events through kube-runtime's watcher (API-only scenarios).
fn add_watch_observer(sim: &mut turmoil::Sim<'_>, observed: Arc<AtomicU64>, until: Duration) {
    sim.client("observer", async move {
        let client = sim_kube_client("apiserver", apiserver::API_PORT);
        let pods = watcher(Api::<k8s_openapi::api::core::v1::Pod>::all(client.clone()), watcher::Config::default());
        let nodes = watcher(Api::<k8s_openapi::api::core::v1::Node>::all(client), watcher::Config::default());
        let events = futures::stream::select(pods.map(|e| e.is_ok()), nodes.map(|e| e.is_ok()));
        let count = events.for_each(|ok| {
            if ok {
                observed.fetch_add(1, Ordering::Relaxed);
            }
            async {}
        });
        let _ = tokio::time::timeout(until, count).await;
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const API_ONLY: &str = "name: tiny\nduration: 1m\ncontroller: none\n";

    #[test]
    fn the_expanded_scenario_prints_the_world_and_the_plan_it_runs() {
        let loaded = Loaded::from_str(Path::new("scenarios/tiny.yaml"), API_ONLY).unwrap();
        let world = ScenarioWorld::build(&loaded, 3).unwrap();
        let text = world.expanded();
        assert!(text.starts_with("world:\n  seed: 3\n  tick: 10ms\n"), "{text}");
        assert!(text.contains("latencyMin: 1ms") && text.contains("latencyMax: 5ms"), "{text}");
        assert!(text.contains("duration: 2m"), "the turmoil limit is the scenario's plus a minute: {text}");
        assert!(text.contains("- scenario-steps"), "{text}");
        assert!(text.contains("scenario: tiny"), "the plan follows: {text}");
        assert_eq!(world.reproduce(), "dovetail run scenarios/tiny.yaml --seed 3");
    }
}
