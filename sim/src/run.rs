//! Runs a scenario in a deterministic world and reports what happened.
//!
//! The world for now holds the API server host, a driver that plays the scenario's steps
//! through an unmodified `kube::Client` (discovery, create, server-side apply, delete), and
//! an observer that watches pods and nodes through kube-runtime's watcher. Cluster
//! actors, the fake cloud and the controller join as they land.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use kube::runtime::watcher;
use rand::Rng;
use serde::Serialize;
use serde_json::Value;

use crate::apiserver::{self, ApiServer};
use crate::kube_client::sim_kube_client;
use crate::scenario::{Loaded, ObjectRef, SimDuration, Step};
use crate::world::{Trace, WorldConfig, build_sim, derive_rng};

/// The machine-readable result of one run. Contains nothing that depends on the
/// machine or the wall clock: two runs of the same scenario and seed serialise to the
/// same bytes.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Root seed.
    pub seed: u64,
    /// Simulated time covered.
    pub simulated: SimDuration,
    /// SHA-256 of the trace.
    pub trace_fingerprint: String,
    /// Trace length.
    pub trace_entries: u64,
    /// The API server's final resourceVersion.
    pub resource_version: u64,
    /// Objects at the end, by `resource.group`.
    pub objects: BTreeMap<String, usize>,
    /// Watch events the observer received.
    pub watch_events_observed: u64,
    /// Scenario actions performed (each repetition counts).
    pub actions: u64,
    /// Actions that failed, with the API's answer. An action whose failure the scenario
    /// expects (`expectCode`) is not listed.
    pub failures: Vec<String>,
    /// The one command that reproduces this run.
    pub reproduce: String,
}

/// A finished run.
pub struct Outcome {
    /// The report.
    pub report: Report,
    /// The full trace.
    pub trace: Trace,
}

/// Runs `loaded` with `seed`.
pub fn run(loaded: &Loaded, seed: u64) -> anyhow::Result<Outcome> {
    let s = &loaded.scenario;
    let mut cfg = WorldConfig::new(seed);
    cfg.duration = s.duration.0 + Duration::from_secs(60);
    let mut sim = build_sim(&cfg);
    let trace = Trace::new();
    let server = apiserver::sim_server(seed, trace.clone());
    apiserver::add_host(&mut sim, &server);

    let actions = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let plan = plan(&loaded.scenario.steps, seed);
    {
        let (install, server, actions, failures) =
            (loaded.install.clone(), server.clone(), actions.clone(), failures.clone());
        sim.client("driver", async move {
            let client = sim_kube_client("apiserver", apiserver::API_PORT);
            for obj in &install {
                apply(&client, obj).await.map_err(|e| anyhow::anyhow!("installing {}: {e}", describe(obj)))?;
            }
            // turmoil starts every host's (simulated) tokio clock at the run's start.
            let origin = tokio::time::Instant::now() - turmoil::sim_elapsed().unwrap_or_default();
            for (at, step) in plan {
                tokio::time::sleep_until(origin + at).await;
                let result = perform(&client, &server, &step).await;
                actions.fetch_add(1, Ordering::Relaxed);
                let expected = step.expect_code;
                match (result, expected) {
                    (Ok(()), None) => {}
                    (Err(e), Some(code)) if e.code == Some(code) => {}
                    (Ok(()), Some(code)) => failures.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                        "at {}: {} succeeded, expected HTTP {code}",
                        SimDuration(at),
                        step_name(&step)
                    )),
                    (Err(e), _) => failures.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                        "at {}: {}: {}",
                        SimDuration(at),
                        step_name(&step),
                        e.message
                    )),
                }
            }
            Ok(())
        });
    }
    let observed = Arc::new(AtomicU64::new(0));
    {
        let observed = observed.clone();
        let until = s.duration.0;
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
    sim.run().map_err(|e| anyhow::anyhow!("simulation failed: {e}"))?;

    let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
    let mut objects = BTreeMap::new();
    for t in store.registry().iter() {
        let n = store.count(&t.key());
        if n > 0 {
            objects.insert(t.group_resource(), n);
        }
    }
    let report = Report {
        scenario: s.name.clone(),
        seed,
        simulated: s.duration,
        trace_fingerprint: trace.fingerprint(),
        trace_entries: trace.len(),
        resource_version: store.resource_version(),
        objects,
        watch_events_observed: observed.load(Ordering::Relaxed),
        actions: actions.load(Ordering::Relaxed),
        failures: failures.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        reproduce: format!(
            "cargo run --release -p dovetail-sim --bin dovetail -- run {} --seed {seed}",
            loaded.path.display()
        ),
    };
    drop(store);
    Ok(Outcome { report, trace })
}

/// Every repetition of every step at its (jittered) time, in a stable order.
fn plan(steps: &[Step], seed: u64) -> Vec<(Duration, Step)> {
    let mut rng = derive_rng(seed, "scenario-steps");
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

/// An API failure during a step.
struct StepError {
    code: Option<u16>,
    message: String,
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<kube::Error> for StepError {
    fn from(e: kube::Error) -> Self {
        match &e {
            kube::Error::Api(s) => StepError { code: Some(s.code), message: format!("{} ({})", s.message, s.code) },
            other => StepError { code: None, message: other.to_string() },
        }
    }
}

async fn perform(client: &kube::Client, server: &ApiServer, step: &Step) -> Result<(), StepError> {
    if let Some(obj) = &step.apply {
        return apply(client, obj).await;
    }
    if let Some(r) = &step.delete {
        return delete(client, r).await;
    }
    server.store.lock().unwrap_or_else(|e| e.into_inner()).expire_watches();
    Ok(())
}

fn step_name(step: &Step) -> String {
    if let Some(obj) = &step.apply {
        format!("apply {}", describe(obj))
    } else if let Some(r) = &step.delete {
        format!("delete {} {}", r.kind, r.name)
    } else {
        "expireWatches".into()
    }
}

fn describe(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("?");
    let name = obj["metadata"]["name"].as_str().or(obj["metadata"]["generateName"].as_str()).unwrap_or("?");
    format!("{kind} {name}")
}

async fn resource(client: &kube::Client, api_version: &str, kind: &str) -> Result<(ApiResource, bool), StepError> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk).await?;
    Ok((ar, caps.scope == kube::discovery::Scope::Namespaced))
}

fn api_for(client: &kube::Client, ar: &ApiResource, namespaced: bool, ns: Option<&str>) -> Api<DynamicObject> {
    if namespaced {
        Api::namespaced_with(client.clone(), ns.unwrap_or("default"), ar)
    } else {
        Api::all_with(client.clone(), ar)
    }
}

/// Creates the object, or server-side applies it when it has a name (create or update).
async fn apply(client: &kube::Client, obj: &Value) -> Result<(), StepError> {
    let bad = |m: &str| StepError { code: None, message: m.to_string() };
    let api_version = obj["apiVersion"].as_str().ok_or_else(|| bad("apiVersion missing"))?;
    let kind = obj["kind"].as_str().ok_or_else(|| bad("kind missing"))?;
    let (ar, namespaced) = resource(client, api_version, kind).await?;
    let api = api_for(client, &ar, namespaced, obj["metadata"]["namespace"].as_str());
    let dynamic: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| bad(&e.to_string()))?;
    match obj["metadata"]["name"].as_str() {
        Some(name) => {
            api.patch(name, &PatchParams::apply("dovetail-scenario").force(), &Patch::Apply(&dynamic)).await?;
        }
        None => {
            api.create(&PostParams::default(), &dynamic).await?;
        }
    }
    Ok(())
}

async fn delete(client: &kube::Client, r: &ObjectRef) -> Result<(), StepError> {
    let (ar, namespaced) = resource(client, &r.api_version, &r.kind).await?;
    let api = api_for(client, &ar, namespaced, r.namespace.as_deref());
    api.delete(&r.name, &DeleteParams::default()).await?;
    Ok(())
}
