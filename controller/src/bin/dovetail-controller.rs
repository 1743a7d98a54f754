//! The `dovetail-controller` binary: the production entry point. It parses Karpenter's flags
//! and environment variables, builds the Kubernetes and AWS clients, serves `/metrics`,
//! `/healthz` and `/readyz`, waits for the leader Lease, and then runs the same
//! `dovetail_controller::operator::run` the simulator runs, with the system clock and an
//! OS-seeded random stream. This file is the one place that reads real time and OS entropy.
//!
//! Exit codes: 0 after SIGTERM/SIGINT, 1 when startup fails, the leader Lease is lost or a
//! controller fails, 2 for bad flags.

use std::convert::Infallible;
use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use bytes::Bytes;
use clap::Parser;
use dovetail_controller::aws_http::{self, AwsConnection};
use dovetail_controller::operator::{self, Clients, Environment};
use dovetail_controller::runtime::flags::{LogLevel, ProcessOptions};
use dovetail_controller::runtime::leader::{LeaderElection, LeaderElectionConfig, Leadership};
use dovetail_controller::runtime::metrics::{self, Metrics};
use dovetail_controller::runtime::{EventRecorder, Flags, Settings, SharedClock, SharedRng, SystemClock};
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};

/// Exit code for flags that do not parse or validate (clap uses it too).
const EXIT_BAD_FLAGS: u8 = 2;

fn main() -> ExitCode {
    // clap prints its own errors (naming the flag, value and choices) and exits 2.
    let flags = Flags::parse();
    let (settings, process) = match flags.resolve() {
        Ok(resolved) => resolved,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_FLAGS);
        }
    };
    init_tracing(process.log_level);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(settings, process)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `RUST_LOG` when set (a full `tracing` filter), else `LOG_LEVEL` for Dovetail and at most
/// `info` for the libraries, whose debug output would drown ours.
fn init_tracing(level: LogLevel) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => tracing_subscriber::EnvFilter::new(directives),
        _ => match level {
            LogLevel::Debug | LogLevel::Trace => {
                tracing_subscriber::EnvFilter::new(format!("info,dovetail_controller={}", level.as_str()))
            }
            _ => tracing_subscriber::EnvFilter::new(level.as_str()),
        },
    };
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

async fn run(settings: Settings, process: ProcessOptions) -> anyhow::Result<()> {
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        tls = cfg!(feature = "tls"),
        cluster = %settings.cluster_name,
        region = %settings.region,
        "starting dovetail-controller{}",
        if cfg!(feature = "tls") { "" } else { " (built without `tls`: plain HTTP endpoints only)" }
    );
    let endpoints = &process.aws_endpoints;
    aws_http::check_endpoint("ec2", endpoints.ec2.as_deref())?;
    aws_http::check_endpoint("sqs", endpoints.sqs.as_deref())?;
    aws_http::check_endpoint("ssm", endpoints.ssm.as_deref())?;
    if !settings.isolated_vpc {
        aws_http::check_endpoint("pricing", endpoints.pricing.as_deref())?;
    }

    let mut kube_config = kube::Config::infer()
        .await
        .context("no Kubernetes configuration: set KUBECONFIG, or run in a pod with a service account")?;
    check_kube_url(&kube_config.cluster_url)?;
    // Retries as client-go (and so Karpenter) does, not kube-rs' default policy
    // (runtime::api_retry explains the difference); the simulator's client does the same.
    kube_config.default_retry = false;
    let kube = kube::client::ClientBuilder::try_from(kube_config)
        .context("building the Kubernetes client")?
        .with_layer(&dovetail_controller::runtime::api_timeout::api_timeout_layer())
        // The retry layer needs a `Clone` service; kube's boxed stack is not one.
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&dovetail_controller::runtime::api_retry::api_retry_layer())
        .build();

    let aws = aws_connection(&settings.region).await?;
    let clients = Clients {
        kube: kube.clone(),
        ec2: aws_http::ec2_client(endpoints.ec2.as_deref(), &aws),
        sqs: aws_http::sqs_client(endpoints.sqs.as_deref(), &aws),
        ssm: aws_http::ssm_client(endpoints.ssm.as_deref(), &aws),
        pricing: aws_http::pricing_client(endpoints.pricing.as_deref(), &aws),
    };

    let metrics = Metrics::new();
    let ready = Arc::new(AtomicBool::new(false));
    let metrics_listener = bind(process.metrics_port, "METRICS_PORT").await?;
    let health_listener = bind(process.health_probe_port, "HEALTH_PROBE_PORT").await?;
    tokio::spawn(serve(metrics_listener, Port::Metrics, metrics.clone(), ready.clone()));
    tokio::spawn(serve(health_listener, Port::Health, metrics.clone(), ready.clone()));
    // Ready once the process is configured: followers must pass readiness too, or a rolling
    // update would stall behind the leader.
    ready.store(true, Ordering::Release);

    let clock: SharedClock = Arc::new(SystemClock);
    let identity = identity(process.leader_election.identity.as_deref())?;
    let mut leadership: Option<Leadership> = None;
    if process.leader_election.enabled {
        let mut config = LeaderElectionConfig::new(process.leader_election.namespace.clone(), identity.clone());
        config.name = process.leader_election.name.clone();
        let election = LeaderElection::new(kube.clone(), clock.clone(), config);
        tokio::select! {
            biased;
            signal = shutdown_signal() => {
                tracing::info!("{signal} before becoming leader; exiting");
                return Ok(());
            }
            held = election.acquire() => leadership = Some(held),
        }
    } else {
        tracing::warn!("leader election disabled: run a single replica only");
    }

    let events = EventRecorder::new();
    let env = Environment {
        clock,
        rng: SharedRng::from_seed(os_seed()?),
        events,
        metrics: metrics.clone(),
        instance: identity,
    };
    let lost = async {
        match leadership.as_mut() {
            Some(held) => held.lost().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        biased;
        signal = shutdown_signal() => {
            tracing::info!("{signal}: shutting down");
            Ok(())
        }
        reason = lost => Err(anyhow::anyhow!("leader election lost: {reason}")),
        result = operator::run(clients, settings, env) => result.context("controller failed"),
    };
    if outcome.is_ok()
        && let Some(held) = leadership
    {
        held.release().await;
    }
    outcome
}

/// Refuses an `https://` API server in a build that cannot speak TLS, saying what to do.
fn check_kube_url(url: &http::Uri) -> anyhow::Result<()> {
    if url.scheme_str() == Some("https") && !cfg!(feature = "tls") {
        anyhow::bail!(
            "the Kubernetes API server {url} needs HTTPS, but this dovetail-controller was built without the \
             `tls` feature; point KUBECONFIG at an http:// server (for example `kubectl proxy`, \
             http://127.0.0.1:8001) or rebuild with `cargo build --release --features tls`"
        );
    }
    Ok(())
}

#[cfg(feature = "tls")]
async fn aws_connection(region: &str) -> anyhow::Result<AwsConnection> {
    Ok(AwsConnection::default_chain(region).await)
}

#[cfg(not(feature = "tls"))]
async fn aws_connection(region: &str) -> anyhow::Result<AwsConnection> {
    let credentials = aws_http::credentials_from_env(|name| std::env::var(name).ok())?;
    Ok(AwsConnection::plain_http(region, credentials))
}

/// Eight bytes from the OS: the seed of the controller's random stream and the leader
/// identity's suffix. The binary is the one place allowed OS entropy (the library takes a
/// seeded [`SharedRng`] so the simulator can replay it).
fn os_seed() -> anyhow::Result<u64> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading a random seed from /dev/urandom")?;
    Ok(u64::from_le_bytes(bytes))
}

/// `<pod name or hostname>_<random hex>`, unique per process like controller-runtime's
/// `<hostname>_<uuid>`.
fn identity(configured: Option<&str>) -> anyhow::Result<String> {
    let base = match configured.filter(|s| !s.is_empty()) {
        Some(name) => name.to_string(),
        None => std::env::var("HOSTNAME")
            .ok()
            .filter(|s| !s.is_empty())
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|s| s.trim().to_string()))
            .unwrap_or_else(|| "dovetail-controller".into()),
    };
    Ok(format!("{base}_{:016x}", os_seed()?))
}

async fn shutdown_signal() -> &'static str {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        biased;
        () = terminate => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    }
}

/// Which endpoints a listener serves: Karpenter keeps metrics and probes on separate ports.
#[derive(Clone, Copy, Debug)]
enum Port {
    Metrics,
    Health,
}

async fn bind(port: u16, variable: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(("0.0.0.0", port)).await.with_context(|| format!("binding {variable} {port}"))
}

fn respond(port: Port, path: &str, metrics: &Metrics, ready: &AtomicBool) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (port, path) {
        (Port::Metrics, "/metrics") => (StatusCode::OK, metrics::CONTENT_TYPE, metrics.encode()),
        (Port::Health, "/healthz") => (StatusCode::OK, "text/plain", "ok".to_string()),
        (Port::Health, "/readyz") if ready.load(Ordering::Acquire) => (StatusCode::OK, "text/plain", "ok".to_string()),
        (Port::Health, "/readyz") => (StatusCode::SERVICE_UNAVAILABLE, "text/plain", "not ready".to_string()),
        _ => (StatusCode::NOT_FOUND, "text/plain", "not found".to_string()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    response
}

async fn serve(listener: tokio::net::TcpListener, port: Port, metrics: Metrics, ready: Arc<AtomicBool>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                tracing::warn!("{port:?} listener: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        let ready = ready.clone();
        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
            let response = respond(port, request.uri().path(), &metrics, &ready);
            async move { Ok::<_, Infallible>(response) }
        });
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!("{port:?} connection: {e}");
            }
        });
    }
}
