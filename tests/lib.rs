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
