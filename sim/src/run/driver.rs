//! The driver: a client host that installs the scenario's manifests and then plays its
//! timeline (workload objects and low-level steps) through an unmodified `kube::Client`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde_json::Value;

use super::steps::{Applier, describe, step_name};
use crate::apiserver::{self, ApiServer};
use crate::kube_client::sim_kube_client;
use crate::scenario::render::Timed;
use crate::scenario::{Loaded, SimDuration, Step};
use dovetail_world::Stream;

/// What the driver did, shared with the runner.
#[derive(Default)]
pub struct DriverLog {
    /// Actions performed (each repetition counts).
    pub actions: AtomicU64,
    /// Actions that failed, with the API's answer (expected failures are not listed).
    pub failures: Mutex<Vec<String>>,
}

impl DriverLog {
    fn fail(&self, message: String) {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).push(message);
    }
}

enum Item {
    Step(Step),
    Object(Value),
}

/// Adds the `driver` client host.
pub fn add_driver(
    sim: &mut turmoil::Sim<'_>,
    loaded: &Loaded,
    objects: Vec<Timed>,
    server: &ApiServer,
    seed: u64,
) -> Arc<DriverLog> {
    let log = Arc::new(DriverLog::default());
    let install = loaded.install.clone();
    let manifests = loaded.scenario.manifests.clone();
    let mut timeline: Vec<(Duration, Item)> = step_plan(&loaded.scenario.steps, seed)
        .into_iter()
        .map(|(at, s)| (at, Item::Step(s)))
        .chain(objects.into_iter().map(|t| (t.at, Item::Object(t.object))))
        .collect();
    // Stable: equal times keep steps before workload objects, each in file order.
    timeline.sort_by_key(|(at, _)| *at);
    let (server, shared) = (server.clone(), log.clone());
    sim.client("driver", async move {
        let mut applier = Applier::new(sim_kube_client("apiserver", apiserver::API_PORT));
        let mut crds = false;
        for obj in &install {
            applier.apply_retrying(obj, 30).await.map_err(|e| anyhow::anyhow!("installing {}: {e}", describe(obj)))?;
            crds |= obj["kind"] == "CustomResourceDefinition";
        }
        if crds && !manifests.is_empty() {
            // Let the CRDs register before their first objects.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        for obj in &manifests {
            if let Err(e) = applier.apply_retrying(obj, 30).await {
                shared.fail(format!("at 0s: apply {}: {e}", describe(obj)));
            }
        }
        // turmoil starts every host's (simulated) tokio clock at the run's start.
        let origin = tokio::time::Instant::now() - turmoil::sim_elapsed().unwrap_or_default();
        for (at, item) in timeline {
            tokio::time::sleep_until(origin + at).await;
            shared.actions.fetch_add(1, Ordering::Relaxed);
            match item {
                Item::Object(obj) => {
                    if let Err(e) = applier.apply_retrying(&obj, 30).await {
                        shared.fail(format!("at {}: apply {}: {e}", SimDuration(at), describe(&obj)));
                    }
                }
                Item::Step(step) => match (applier.perform(&server, &step).await, step.expect_code) {
                    (Ok(()), None) => {}
                    (Err(e), Some(code)) if e.code == Some(code) => {}
                    (Ok(()), Some(code)) => shared.fail(format!(
                        "at {}: {} succeeded, expected HTTP {code}",
                        SimDuration(at),
                        step_name(&step)
                    )),
                    (Err(e), _) => shared.fail(format!("at {}: {}: {}", SimDuration(at), step_name(&step), e.message)),
                },
            }
        }
        Ok(())
    });
    log
}

/// Every repetition of every step at its (jittered) time, in a stable order.
pub fn step_plan(steps: &[Step], seed: u64) -> Vec<(Duration, Step)> {
    let mut rng = Stream::ScenarioSteps.rng(seed);
    let mut out = Vec::new();
    for step in steps {
        for _ in 0..step.count {
            let jitter = step.jitter.map_or(Duration::ZERO, |j| j.0.mul_f64(rng.random::<f64>()));
            out.push((step.at.0 + jitter, step.clone()));
        }
    }
    // Stable: equal times keep file order.
    out.sort_by_key(|(at, _)| *at);
    out
}
