//! `dovetail bench`: how fast the simulated world runs, in wall time.
//!
//! Benchmarks are measurements, not tests: they read the wall clock (here only) and
//! report medians over samples. Build with `--release` for meaningful numbers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dovetail_sim::apiserver::{self, store::WriteOptions};
use dovetail_sim::kube_client::sim_kube_client;
use dovetail_sim::world::{Trace, World};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

/// What to measure.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Target {
    /// API server: list, watch-event delivery, patch, and an idle simulated hour.
    Apiserver,
    /// The cluster's actors: an idle simulated hour of a 1,000-node world.
    Cluster,
    /// Where one scenario run's CPU goes (`--scenario`, `--seed`): API server, actors,
    /// fake cloud, invariant checker, and the controller with the runtime (issue 21's P7).
    Split,
}

/// Runs the benchmark and prints medians (`split`: runs `scenario` at `seed`).
pub fn bench(
    what: Target,
    samples: usize,
    scenario: &std::path::Path,
    seed: u64,
) -> Result<(), super::failure::Failure> {
    match what {
        Target::Apiserver => {
            let samples = samples.max(1);
            report("list 100 pods (requests/s)", samples, || list_rate(100, 200));
            report("list 1000 pods (requests/s)", samples, || list_rate(1000, 20));
            report("merge patch (requests/s)", samples, || patch_rate(500));
            report("watch events delivered (events/s)", samples, || watch_rate(2000));
            report("idle simulated hour, 1 watcher (wall ms)", samples, idle_hour_ms);
        }
        Target::Cluster => {
            let samples = samples.max(1);
            report("idle simulated hour, 1000 nodes + actors (wall ms)", samples, || idle_cluster_hour_ms(1000, 0));
            report("idle simulated hour, 1000 nodes, 10000 pods (wall ms)", samples, || idle_cluster_hour_ms(1000, 10));
        }
        Target::Split => return super::bench_split::split(scenario, seed, samples),
    }
    Ok(())
}

fn report(name: &str, samples: usize, f: impl Fn() -> f64) {
    let mut v: Vec<f64> = (0..samples).map(|_| f()).collect();
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    println!("{name:<45} median {median:>12.1}   (min {:.1}, max {:.1}, n={samples})", v[0], v[v.len() - 1]);
}

#[allow(clippy::disallowed_methods)]
fn timed(f: impl FnOnce()) -> f64 {
    let t = std::time::Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// The API server alone, for two simulated hours, seed 1.
fn world<'a>() -> (turmoil::Sim<'a>, apiserver::ApiServer) {
    let world = World::builder(1)
        .duration(Duration::from_secs(7200))
        .trace(Trace::hash_only())
        .build()
        .expect("an API-server world has no catalog to load");
    (world.sim, world.server)
}

fn seed_pods(server: &apiserver::ApiServer, n: usize) {
    let mut s = server.store.lock().unwrap();
    let pods = s.registry().get("", "pods").unwrap();
    for i in 0..n {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}"), "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}});
        s.create(&pods, "default", pod, WriteOptions::default()).unwrap();
    }
}

fn list_rate(pods: usize, requests: usize) -> f64 {
    let (mut sim, server) = world();
    seed_pods(&server, pods);
    sim.client("bench", async move {
        let api: Api<Pod> = Api::default_namespaced(sim_kube_client("apiserver", apiserver::API_PORT));
        for _ in 0..requests {
            api.list(&ListParams::default()).await?;
        }
        Ok(())
    });
    requests as f64 / timed(|| sim.run().unwrap())
}

fn patch_rate(requests: usize) -> f64 {
    let (mut sim, server) = world();
    seed_pods(&server, 1);
    sim.client("bench", async move {
        let api: Api<Pod> = Api::default_namespaced(sim_kube_client("apiserver", apiserver::API_PORT));
        for i in 0..requests {
            let p = json!({"metadata": {"annotations": {"n": i.to_string()}}});
            api.patch("p0", &PatchParams::default(), &Patch::Merge(&p)).await?;
        }
        Ok(())
    });
    requests as f64 / timed(|| sim.run().unwrap())
}

fn watch_rate(events: u64) -> f64 {
    let (mut sim, server) = world();
    seed_pods(&server, 1);
    let seen = Arc::new(AtomicU64::new(0));
    let seen2 = seen.clone();
    sim.client("watcher", async move {
        let api: Api<Pod> = Api::default_namespaced(sim_kube_client("apiserver", apiserver::API_PORT));
        let mut w = watcher(api, watcher::Config::default()).boxed();
        while let Some(e) = w.next().await {
            if let Ok(watcher::Event::Apply(_)) = e
                && seen2.fetch_add(1, Ordering::Relaxed) + 1 >= events
            {
                return Ok(());
            }
        }
        Ok(())
    });
    // Writes go straight to the store so the figure is delivery cost alone.
    let pods = server.store.lock().unwrap().registry().get("", "pods").unwrap();
    let mut written = 0;
    let wall = timed(|| {
        while !sim.step().unwrap() {
            if written < events && sim.elapsed() > Duration::from_secs(1) {
                let mut s = server.store.lock().unwrap();
                for _ in 0..50 {
                    let mut p = (*s.get(&pods, "default", "p0").unwrap()).clone();
                    p["metadata"]["annotations"] = json!({"n": written.to_string()});
                    s.update(&pods, "default", "p0", p, apiserver::store::Part::Main, WriteOptions::default()).unwrap();
                    written += 1;
                }
            }
        }
    });
    seen.load(Ordering::Relaxed) as f64 / wall
}

fn idle_hour_ms() -> f64 {
    let (mut sim, _server) = world();
    sim.client("watcher", async move {
        let api: Api<Pod> = Api::all(sim_kube_client("apiserver", apiserver::API_PORT));
        let w = watcher(api, watcher::Config::default()).for_each(|_| async {});
        let _ = tokio::time::timeout(Duration::from_secs(3600), w).await;
        Ok(())
    });
    timed(|| sim.run().unwrap()) * 1000.0
}

/// One quiet simulated hour of a cluster of `nodes` Ready nodes with `pods_per_node`
/// running pods each, with every actor running.
fn idle_cluster_hour_ms(nodes: usize, pods_per_node: usize) -> f64 {
    let World { mut sim, server, .. } = World::builder(1)
        .duration(Duration::from_secs(7200))
        .trace(Trace::hash_only())
        .cluster_actors()
        .build()
        .expect("a cluster world without a cloud has no catalog to load");
    // The actors' host has not run yet: the nodes and pods below are in the store before
    // the actors' first reconcile, as before the builder added them.
    {
        let mut s = server.store.lock().unwrap();
        let nodes_t = s.registry().get("", "nodes").unwrap();
        let pods_t = s.registry().get("", "pods").unwrap();
        for i in 0..nodes {
            let name = format!("node-{i}");
            let zone = ["us-east-1a", "us-east-1b", "us-east-1c"][i % 3];
            let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
                "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                           "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}});
            let created = s.create(&nodes_t, "", node.clone(), WriteOptions::default()).unwrap();
            let mut with_status = (*created).clone();
            with_status["status"] = node["status"].clone();
            s.update(&nodes_t, "", &name, with_status, apiserver::store::Part::Status, WriteOptions::default())
                .unwrap();
            for j in 0..pods_per_node {
                let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p-{i}-{j}")},
                    "spec": {"nodeName": name, "containers": [{"name": "app", "image": "x",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
                    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
                let created = s.create(&pods_t, "default", pod.clone(), WriteOptions::default()).unwrap();
                let mut with_status = (*created).clone();
                with_status["status"] = pod["status"].clone();
                s.update(
                    &pods_t,
                    "default",
                    &format!("p-{i}-{j}"),
                    with_status,
                    apiserver::store::Part::Status,
                    WriteOptions::default(),
                )
                .unwrap();
            }
        }
    }
    sim.client("clock", async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(())
    });
    timed(|| sim.run().unwrap()) * 1000.0
}
