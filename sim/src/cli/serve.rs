//! `dovetail serve`: a simulated cluster, live, for kubectl.
//!
//! The world is the same turmoil world a run builds: with a scenario, the runner's own
//! world (API server and actors, fake cloud, controller, faults, workloads) through
//! [`dovetail_sim::run::RunOptions`]' `on_start`/`before_step` hooks; without one, the API
//! server with the cluster's actors, and with `--karpenter` the runner's world for an
//! embedded scenario with Karpenter's general-purpose NodePool and nothing else. It is stepped on this thread and paced at real time × `--speed`. The same
//! `ApiServer` is also served over real TCP on 127.0.0.1 by a second thread, and a
//! kubeconfig is written, so `kubectl get nodes,pods -w` shows the simulated cluster as it
//! evolves and a user can create, delete and describe objects by hand. `--pause-at T`
//! stops stepping at simulated time T: simulated time freezes while kubectl keeps working,
//! so a failing state can be inspected.
//!
//! This mode is interactive and NOT deterministic: requests from kubectl arrive whenever
//! the user sends them, and the pacing reads the wall clock. The simulation itself is
//! still stepped on one thread; the TCP thread only reaches the world through the API
//! server's store, under its lock, and reads simulated time published after every step
//! ([`dovetail_sim::world::clock::mirror_sim_elapsed`]). Deterministic runs are `dovetail
//! run` and `dovetail sweep`.
//!
//! Besides the Kubernetes API, the TCP front end answers one read-only path of its own,
//! [`EXPLAIN_PATH`] (`kubectl get --raw /dovetail/explain`): `dovetail explain` of the live
//! store at the current simulated time, JSON (or `?format=text`, the text `dovetail
//! explain` prints). It only reads the store under its lock, like any GET.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::apiserver::error::ApiError;
use dovetail_sim::apiserver::handler::{Body, error_response};
use dovetail_sim::explain::explain;
use dovetail_sim::scenario::SimDuration;
use dovetail_sim::world::clock::mirror_sim_elapsed;
use dovetail_sim::world::{ScenarioWorld, Trace, World};
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};

use super::failure::Failure;

/// The served explanation: why every NodeClaim is (not) being disrupted and why every
/// pending pod is pending, now (see [`dovetail_sim::explain`]).
pub const EXPLAIN_PATH: &str = "/dovetail/explain";

/// What to serve and how fast.
#[derive(Clone, Debug)]
pub struct ServeArgs {
    /// A scenario to play (its whole world, faults and workloads); none serves an empty
    /// cluster.
    pub scenario: Option<PathBuf>,
    /// Root seed of the world.
    pub seed: u64,
    /// Simulated seconds per real second.
    pub speed: f64,
    /// Freeze simulated time here.
    pub pause_at: Option<SimDuration>,
    /// Port on 127.0.0.1 (0 picks a free one).
    pub port: u16,
    /// Where the kubeconfig goes.
    pub kubeconfig: PathBuf,
    /// Also run the fake cloud and the controller, with Karpenter's CRDs and a default
    /// NodePool and EC2NodeClass installed.
    pub karpenter: bool,
}

/// Serves until interrupted (Ctrl-C ends the process).
pub fn serve(args: &ServeArgs) -> Result<(), Failure> {
    if args.speed.is_nan() || args.speed <= 0.0 {
        return Err(Failure::invalid(anyhow::anyhow!(
            "--speed {}: must be greater than 0 (1 is real time, 50 is 50× faster)",
            args.speed
        )));
    }
    if let Some(path) = &args.scenario {
        let loaded = dovetail_sim::scenario::Loaded::from_file(path).map_err(Failure::invalid)?;
        return serve_scenario(&path.display().to_string(), &loaded, args);
    }
    if args.karpenter {
        return serve_scenario("<serve --karpenter>", &empty_karpenter_cluster().map_err(Failure::invalid)?, args);
    }
    // No client hosts, so turmoil never ends the world on its own: a year is "forever".
    let World { mut sim, server, .. } = World::builder(args.seed)
        .duration(Duration::from_secs(365 * 24 * 3600))
        .trace(Trace::hash_only())
        .cluster_actors()
        .build()
        .map_err(Failure::InvalidInput)?;
    let addr = expose(&server, args.port).map_err(Failure::Crash)?;
    announce(addr, &args.kubeconfig).map_err(Failure::Crash)?;
    let mut pacer = Pacer::new(args.speed, args.pause_at.map(|p| p.0));
    loop {
        pacer.wait(sim.elapsed());
        sim.step()
            .map_err(|e| Failure::crash(anyhow::anyhow!("simulation failed at {}: {e}", SimDuration(sim.elapsed()))))?;
        mirror_sim_elapsed(sim.elapsed());
    }
}

/// Plays a scenario's world through the runner, paced, with its API server exposed; when
/// the scenario's duration is over the world stays frozen at its end for inspection.
fn serve_scenario(name: &str, loaded: &dovetail_sim::scenario::Loaded, args: &ServeArgs) -> Result<(), Failure> {
    let world = ScenarioWorld::build(loaded, args.seed).map_err(Failure::InvalidInput)?;
    eprint!("# expanded scenario: {name} --seed {}\n{}", args.seed, world.expanded());
    let (port, kubeconfig) = (args.port, args.kubeconfig.clone());
    let mut pacer = Pacer::new(args.speed, args.pause_at.map(|p| p.0));
    let mut options = dovetail_sim::run::RunOptions {
        on_start: Some(Box::new(move |server: &ApiServer| {
            if let Err(e) = expose(server, port).and_then(|addr| announce(addr, &kubeconfig)) {
                eprintln!("error: {e:#}");
                std::process::exit(i32::from(Failure::CRASH));
            }
        })),
        before_step: Some(Box::new(move |now| {
            mirror_sim_elapsed(now);
            pacer.wait(now);
        })),
        ..dovetail_sim::run::RunOptions::default()
    };
    let outcome = dovetail_sim::run::run_world(world, &mut options).map_err(Failure::Crash)?;
    eprint!("{}", outcome.report.summary());
    eprintln!(
        "the scenario is over at simulated {}: the world is frozen, kubectl still works; Ctrl-C to stop",
        loaded.scenario.duration
    );
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Serves `server` on 127.0.0.1:`port` from a second thread with its own tokio runtime;
/// Ctrl-C there ends the process.
pub fn expose(server: &ApiServer, port: u16) -> anyhow::Result<SocketAddr> {
    let (tx, rx) = std::sync::mpsc::channel::<anyhow::Result<SocketAddr>>();
    let server = server.clone();
    std::thread::Builder::new().name("dovetail-serve-tcp".into()).spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = tx.send(Err(e.into()));
                return;
            }
        };
        rt.block_on(async move {
            let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
                Ok(l) => l,
                Err(e) => {
                    let _ = tx.send(Err(anyhow::Error::new(e).context(format!("binding 127.0.0.1:{port}"))));
                    return;
                }
            };
            let _ = tx.send(listener.local_addr().map_err(Into::into));
            tokio::select! {
                biased;
                _ = tokio::signal::ctrl_c() => {}
                r = serve_with_explain(server, listener) => {
                    if let Err(e) = r {
                        eprintln!("error: serving: {e}");
                    }
                }
            }
            std::process::exit(0);
        });
    })?;
    rx.recv().context("the serving thread ended before binding")?
}

/// The API server's connections, with [`EXPLAIN_PATH`] answered here and every other
/// request passed to the API server as `ApiServer::serve_tcp` would.
async fn serve_with_explain(server: ApiServer, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    loop {
        let (stream, addr) = listener.accept().await?;
        let (server, peer): (ApiServer, Arc<str>) = (server.clone(), Arc::from(addr.ip().to_string()));
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                let (server, peer) = (server.clone(), peer.clone());
                async move {
                    if req.uri().path() == EXPLAIN_PATH {
                        return Ok::<_, std::convert::Infallible>(explain_response(&server, &req));
                    }
                    Ok(server.handle_from(&peer, req).await)
                }
            });
            // A client going away ends only its connection.
            let _ = http1::Builder::new().timer(TokioTimer::new()).serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

/// `GET /dovetail/explain[?format=json|text]`: the explanation of the live store at the
/// simulated time it has reached. Anything else is a Kubernetes `Status` error.
pub fn explain_response<B>(server: &ApiServer, req: &Request<B>) -> Response<Body> {
    if req.method() != Method::GET {
        return error_response(&ApiError::method_not_allowed(format!(
            "{} {EXPLAIN_PATH}: the explanation is read-only; GET it",
            req.method()
        )));
    }
    let mut text = false;
    for (key, value) in req.uri().query().unwrap_or_default().split('&').filter_map(|kv| kv.split_once('=')) {
        match (key, value) {
            ("format", "json") => text = false,
            ("format", "text") => text = true,
            ("format", other) => {
                return error_response(&ApiError::bad_request(format!(
                    "{EXPLAIN_PATH}: format={other}: expected json or text"
                )));
            }
            _ => {}
        }
    }
    let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
    let explanation = explain(&store, store.elapsed());
    drop(store);
    let (content_type, body) = if text {
        ("text/plain; charset=utf-8", explanation.to_string().into_bytes())
    } else {
        match serde_json::to_vec(&explanation) {
            Ok(json) => ("application/json", json),
            Err(e) => return error_response(&ApiError::internal(format!("{EXPLAIN_PATH}: {e}"))),
        }
    };
    let mut resp = Response::new(UnsyncBoxBody::new(Full::new(Bytes::from(body))));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    resp
}

/// Writes the kubeconfig and prints where the server is (first stdout line:
/// `serving on http://...`, which tests read).
fn announce(addr: SocketAddr, kubeconfig: &Path) -> anyhow::Result<()> {
    std::fs::write(kubeconfig, kubeconfig_yaml(&format!("http://{addr}")))
        .with_context(|| format!("writing {}", kubeconfig.display()))?;
    // A closed stdout (a test harness that read what it needed) must not stop the server.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "serving on http://{addr}");
    let _ = writeln!(out, "kubeconfig: {}   (export KUBECONFIG={})", kubeconfig.display(), kubeconfig.display());
    let _ = out.flush();
    Ok(())
}

/// Keeps simulated time at real time × speed, and holds it at the pause point.
pub struct Pacer {
    speed: f64,
    pause_at: Option<Duration>,
    /// Real time at which simulated time was zero (moved forward while lagging, so a
    /// slow stretch is not followed by a burst).
    origin: std::time::Instant,
    paused: bool,
    last_status: Duration,
}

impl Pacer {
    /// A pacer starting now.
    pub fn new(speed: f64, pause_at: Option<Duration>) -> Self {
        // Pacing an interactive world is what the wall clock is for; no run reads it.
        #[allow(clippy::disallowed_methods)]
        let origin = std::time::Instant::now();
        Self { speed, pause_at, origin, paused: false, last_status: Duration::ZERO }
    }

    /// Blocks until simulated time `now` may advance by one more step.
    pub fn wait(&mut self, now: Duration) {
        if let Some(at) = self.pause_at
            && now >= at
        {
            if !self.paused {
                self.paused = true;
                eprintln!(
                    "paused at simulated {}: the world is frozen, kubectl still works; Ctrl-C to stop",
                    SimDuration(now)
                );
            }
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        if now >= self.last_status + Duration::from_secs(60) {
            self.last_status = now;
            eprintln!("simulated {}", SimDuration(Duration::from_secs(now.as_secs())));
        }
        if self.speed.is_infinite() {
            return;
        }
        let due = self.origin + now.div_f64(self.speed);
        #[allow(clippy::disallowed_methods)]
        let real = std::time::Instant::now();
        if due > real {
            std::thread::sleep(due - real);
        } else if real - due > Duration::from_secs(1) {
            // Lagging by more than a second: forget the debt rather than sprint later.
            self.origin += real - due - Duration::from_secs(1);
        }
    }
}

/// `dovetail serve --karpenter` without a scenario: the runner's world (fake cloud,
/// production controller, Karpenter's CRDs) with Karpenter's general-purpose NodePool and
/// its EC2NodeClass, no workloads and no faults, for a year of simulated time. Built by the
/// same runner as every scenario, so the two worlds cannot drift apart.
const EMPTY_KARPENTER_CLUSTER: &str = r#"
name: empty-cluster
description: dovetail serve --karpenter without a scenario
duration: 8760h
manifests:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: {name: default}
    spec:
      role: KarpenterNodeRole-dovetail
      subnetSelectorTerms: [{tags: {karpenter.sh/discovery: dovetail}}]
      securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: dovetail}}]
      amiSelectorTerms: [{alias: al2023@latest}]
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: general-purpose}
    spec:
      template:
        spec:
          requirements:
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
            - {key: kubernetes.io/os, operator: In, values: [linux]}
            - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
            - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
            - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      limits: {cpu: "1000"}
"#;

/// The embedded empty Karpenter cluster as a scenario.
fn empty_karpenter_cluster() -> anyhow::Result<dovetail_sim::scenario::Loaded> {
    Ok(dovetail_sim::scenario::Loaded::from_str(Path::new("<serve --karpenter>"), EMPTY_KARPENTER_CLUSTER)?)
}

fn kubeconfig_yaml(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: dovetail\n  cluster:\n    server: {server}\ncontexts:\n- name: dovetail\n  context:\n    cluster: dovetail\n    user: dovetail\n    namespace: default\ncurrent-context: dovetail\nusers:\n- name: dovetail\n  user: {{}}\n"
    )
}
