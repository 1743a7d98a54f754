//! The simulated Kubernetes API server (`dovetail-apiserver`).
//!
//! It knows nothing of the simulator around it: it needs only the world's clock, random
//! streams and trace (`dovetail-world`). The simulator re-exports it as
//! `dovetail_sim::apiserver`.
//!
//! Real REST and watch over HTTP/1, so the production controller's unmodified
//! `kube::Client` (and kubectl, through `dovetail serve`) cannot tell it from
//! kube-apiserver. It serves inside a turmoil host for simulations and on 127.0.0.1 for
//! people. Module map: [`store`] (objects, resourceVersions, finalizers, GC, watch fan-out),
//! [`handler`] (paths and verbs), [`admission`] (decoding, defaults, CRD registration,
//! schema validation), [`eviction`] (PDB-guarded deletes), [`resources`] (served types and
//! discovery), [`selector`] and [`patch`] (apimachinery semantics), [`table`] (kubectl
//! printing), [`faults`] (injected API errors).

pub mod admission;
pub mod audit;
pub mod binding;
pub mod error;
pub mod eviction;
pub mod faults;
pub mod handler;
pub mod patch;
pub mod protobuf;
pub mod resources;
pub mod schema;
pub mod selector;
pub mod store;
pub mod table;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dovetail_world::{Clock, SimRng, Stream, Trace};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;

pub use error::{ApiError, ApiResult};
pub use faults::ApiFaults;
pub use store::Store;

/// The port the API server listens on inside the simulation.
pub const API_PORT: u16 = 6443;

/// Tunables of the server's HTTP layer.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Extra delay before each watch event is delivered (a fault hook: slow watches).
    pub watch_delay: Duration,
    /// How often a watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self { watch_delay: Duration::ZERO, bookmark_interval: Duration::from_secs(60) }
    }
}

/// The API server: a store plus its HTTP front end. Cloning shares the same server.
#[derive(Clone)]
pub struct ApiServer {
    /// The objects. Actors in the same host read and write it directly; remote clients go
    /// through HTTP.
    pub store: Arc<Mutex<Store>>,
    /// Injected API errors.
    pub faults: Arc<Mutex<ApiFaults>>,
    /// Who sent which mutating request (invariant checkers observe it).
    pub audit: Arc<Mutex<audit::Audit>>,
    config: ServerConfig,
}

impl ApiServer {
    /// A server over `store`.
    pub fn new(store: Store, faults: ApiFaults, config: ServerConfig) -> Self {
        Self {
            store: Arc::new(Mutex::new(store)),
            faults: Arc::new(Mutex::new(faults)),
            audit: Arc::new(Mutex::new(audit::Audit::default())),
            config,
        }
    }

    /// Serves HTTP/1 connections from a turmoil listener until the host stops.
    pub async fn serve_turmoil(self, port: u16) -> std::io::Result<()> {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
        loop {
            let (stream, addr) = listener.accept().await?;
            let peer = turmoil::reverse_lookup(addr.ip()).unwrap_or_else(|| addr.ip().to_string());
            self.spawn_connection(TokioIo::new(stream), Arc::from(peer));
        }
    }

    /// Serves HTTP/1 connections from a real TCP listener (`dovetail serve`).
    pub async fn serve_tcp(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        loop {
            let (stream, addr) = listener.accept().await?;
            self.spawn_connection(TokioIo::new(stream), Arc::from(addr.ip().to_string()));
        }
    }

    fn spawn_connection<I>(&self, io: I, peer: Arc<str>)
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let server = self.clone();
        // Its CPU is the API server's in `dovetail bench split` (the watch events a write
        // fans out included).
        tokio::spawn(dovetail_world::cpu_meter::metered(("apiserver", "apiserver"), async move {
            let svc = service_fn(move |req| {
                let server = server.clone();
                let peer = peer.clone();
                async move { Ok::<_, std::convert::Infallible>(server.handle_from(&peer, req).await) }
            });
            // Connection errors (a client going away, a partition) end only this
            // connection, as on a real server.
            let _ = http1::Builder::new().timer(TokioTimer::new()).serve_connection(io, svc).await;
        }));
    }
}

/// The labels of an object as a sorted map.
pub fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect())
        .unwrap_or_default()
}

/// The API server's random streams. They are kept apart so that raising fault rates never
/// shifts the generated names and uids, and named so the two cannot be swapped by accident.
pub struct ApiServerStreams {
    /// generateName suffixes and uids (the store's stream).
    pub store: SimRng,
    /// Injected API errors ([`ApiFaults`]).
    pub faults: SimRng,
}

impl ApiServerStreams {
    /// The streams a run with `seed` gives the API server: `apiserver` and `apiserver-faults`.
    pub fn derive(seed: u64) -> Self {
        Self { store: Stream::ApiServer.rng(seed), faults: Stream::ApiServerFaults.rng(seed) }
    }
}

impl ApiServer {
    /// A server whose store reads simulated time and draws from ready random streams, with
    /// no faults and the default configuration.
    pub fn simulated(streams: ApiServerStreams, trace: Trace) -> ApiServer {
        let store = Store::new(Clock::Simulated, streams.store, trace, store::StoreConfig::default());
        ApiServer::new(store, ApiFaults::none(streams.faults), ServerConfig::default())
    }
}

/// Builds a server whose store reads simulated time and draws from the run's seed
/// ([`ApiServer::simulated`] over [`ApiServerStreams::derive`]).
pub fn sim_server(seed: u64, trace: Trace) -> ApiServer {
    ApiServer::simulated(ApiServerStreams::derive(seed), trace)
}

/// Adds the API server as the turmoil host `apiserver`. The store lives outside the
/// host, like etcd, so it survives a crash or bounce of the server process.
pub fn add_host(sim: &mut turmoil::Sim<'_>, server: &ApiServer) {
    let server = server.clone();
    sim.host("apiserver", move || {
        let server = server.clone();
        async move {
            server.serve_turmoil(API_PORT).await?;
            Ok(())
        }
    });
}
