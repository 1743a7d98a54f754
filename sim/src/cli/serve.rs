//! `dovetail serve`: the simulated API server on 127.0.0.1, for kubectl.
//!
//! Time here is real time from the simulated epoch (the world is interactive), and the
//! cluster's actors (scheduler, kubelets, workload controllers) run beside the server. The
//! server speaks plain HTTP on loopback only; the kubeconfig it writes points there.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use dovetail_sim::apiserver::{ApiFaults, ApiServer, ServerConfig, Store, store::StoreConfig};
use dovetail_sim::world::{Clock, Trace, derive_rng};

/// Serves until interrupted.
pub fn serve(port: u16, kubeconfig: &Path) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("binding 127.0.0.1:{port}"))?;
        let addr = listener.local_addr()?;
        let clock = Clock::RealTime { start: tokio::time::Instant::now() };
        let store = Store::new(clock, derive_rng(0, "apiserver"), Trace::hash_only(), StoreConfig::default());
        let server = ApiServer::new(store, ApiFaults::none(derive_rng(0, "apiserver-faults")), ServerConfig::default());
        // The cluster's actors run beside the server, so a pod created with kubectl is
        // scheduled (or marked Unschedulable) and run, as in a real cluster.
        tokio::spawn(dovetail_sim::actors::runtime::run(server.clone(), dovetail_sim::actors::cluster_actors(0, None)));
        std::fs::write(kubeconfig, kubeconfig_yaml(&format!("http://{addr}")))
            .with_context(|| format!("writing {}", kubeconfig.display()))?;
        // A closed stdout (a test harness that read what it needed) must not stop the server.
        use std::io::Write as _;
        let mut out = std::io::stdout();
        let _ = writeln!(out, "serving on http://{addr}");
        let _ = writeln!(out, "kubeconfig: {}   (export KUBECONFIG={})", kubeconfig.display(), kubeconfig.display());
        let _ = out.flush();
        tokio::select! {
            biased;
            _ = tokio::signal::ctrl_c() => {}
            r = server.serve_tcp(listener) => r?,
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn kubeconfig_yaml(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: dovetail\n  cluster:\n    server: {server}\ncontexts:\n- name: dovetail\n  context:\n    cluster: dovetail\n    user: dovetail\n    namespace: default\ncurrent-context: dovetail\nusers:\n- name: dovetail\n  user: {{}}\n"
    )
}
