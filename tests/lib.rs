//! Shared helpers for the integration tests.

use dovetail_sim::apiserver::{self, ApiServer};
use dovetail_sim::world::{Trace, WorldConfig, build_sim};

/// A simulation with an API server host, for `seed`.
pub fn apiserver_world<'a>(seed: u64) -> (turmoil::Sim<'a>, ApiServer, Trace) {
    let cfg = WorldConfig::new(seed);
    let mut sim = build_sim(&cfg);
    let trace = Trace::new();
    let server = apiserver::sim_server(seed, trace.clone());
    apiserver::add_host(&mut sim, &server);
    (sim, server, trace)
}

/// A kube client for the simulated API server; call inside a turmoil host or client.
pub fn client() -> kube::Client {
    dovetail_sim::kube_client::sim_kube_client("apiserver", apiserver::API_PORT)
}

/// A simulation with the API server and the cluster's actors (scheduler, kubelets,
/// workload controllers, PDB status, pod GC).
pub fn cluster_world<'a>(seed: u64) -> (turmoil::Sim<'a>, ApiServer, Trace) {
    let cfg = WorldConfig::new(seed);
    let mut sim = build_sim(&cfg);
    let trace = Trace::new();
    let server = apiserver::sim_server(seed, trace.clone());
    dovetail_sim::actors::add_cluster_host(&mut sim, &server, seed, None);
    (sim, server, trace)
}

/// A Ready node in `zone` with `cpu` cores and `mem_gi` GiB allocatable.
pub fn ready_node(name: &str, zone: &str, cpu: u32, mem_gi: u32) -> k8s_openapi::api::core::v1::Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
            "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}},
        "spec": {"providerID": format!("aws:///{zone}/i-{name}")},
        "status": {
            "capacity": {"cpu": cpu.to_string(), "memory": format!("{mem_gi}Gi"), "pods": "110"},
            "allocatable": {"cpu": cpu.to_string(), "memory": format!("{mem_gi}Gi"), "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    }))
    .expect("a valid node")
}

/// A cluster world whose nodes are the fake cloud's instances (us-east-1), with the
/// cloud also served as the `aws` host.
pub fn cloud_world<'a>(seed: u64) -> (turmoil::Sim<'a>, ApiServer, dovetail_fakecloud::wire::SharedCloud) {
    use dovetail_fakecloud::wire::{Server, TurmoilClock, serve_turmoil, shared};
    use dovetail_fakecloud::{Catalog, CloudConfig, FakeCloud};
    let cfg = WorldConfig::new(seed);
    let mut sim = build_sim(&cfg);
    let server = apiserver::sim_server(seed, Trace::new());
    let config =
        CloudConfig::new(dovetail_sim::world::derive_seed(seed, "cloud"), dovetail_sim::world::clock::sim_epoch());
    let cloud =
        shared(FakeCloud::new(config, Catalog::load("us-east-1").expect("the EC2 catalog in ../shared/data/ec2")));
    dovetail_sim::actors::add_cluster_host(&mut sim, &server, seed, Some(cloud.clone()));
    let served = cloud.clone();
    sim.host("aws", move || {
        let served = served.clone();
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 80)).await?;
            serve_turmoil(listener, Server::new(served, TurmoilClock, "http://aws:80")).await?;
            Ok(())
        }
    });
    (sim, server, cloud)
}
