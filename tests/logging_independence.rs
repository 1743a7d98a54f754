//! What is logged does not change what happens: the same scenario and seed give the same
//! trace with no tracing subscriber, with `info` and with `debug` enabled.
//!
//! This was a real bug, found by `sim/tests/scenario_determinism.rs`: `dovetail run`
//! installs a subscriber (`RUST_LOG`, default `error`) and the library suite does not, and
//! apiserver-brownout seed 1 made 5 launches in the CLI and 8 in the suite. The AWS SDK
//! draws a `sdk_invocation_id` from the thread-local `fastrand` inside a `debug_span!`
//! field, evaluated only when that span is enabled or no subscriber is installed, and the
//! SDK's retry jitter and kube-runtime's watch backoff drew from the same generator. Both now
//! draw from their own seeds (`dovetail_fakecloud::sdk::SdkOptions::thread_rng_seed`,
//! `dovetail_controller::state::watch`), so the span's draws change nothing.
//!
//! Reseeding only the retry jitter was not enough: crash-mid-drain seed 1 still made one more
//! CreateFleet under `aws_sdk_ec2=debug` than under the default filter, since other readers
//! of the generator (the identity cache's expiry jitter, the generators libraries fork from
//! it) saw it advanced by the span's draws. The simulator's SDK clients now also reseed it at
//! the start of every operation, right after that draw
//! (`dovetail_fakecloud::sdk::SdkOptions::thread_rng_seed`).
//!
//! apiserver-brownout and aws-brownout are the scenarios whose faults make the controller
//! retry (API server 429/5xx/410 on watches; EC2 throttling and 5xx); crash-mid-drain
//! restarts the controller, which builds new SDK clients, mid-run. The run without a
//! subscriber comes first: once a subscriber has been set in a process, tracing never takes
//! the no-subscriber path again.

use std::path::Path;

use dovetail_sim::scenario::Loaded;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::prelude::*;

/// The run's `traceFingerprint` (SHA-256 of every trace line) and launch count.
fn run(scenario: &str) -> (String, serde_json::Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{scenario}.yaml"));
    let loaded = Loaded::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let outcome = dovetail_sim::run::run(&loaded, 1).unwrap_or_else(|e| panic!("{scenario}: {e:#}"));
    let report = serde_json::to_value(&outcome.report).expect("report serialises");
    let fingerprint = report["traceFingerprint"].as_str().expect("traceFingerprint").to_owned();
    (fingerprint, report["launches"].clone())
}

/// Runs `scenario` with `filter` enabled in a subscriber that writes nothing (what matters
/// is which callsites are enabled, not where their output goes).
fn run_logged(scenario: &str, filter: &str) -> (String, serde_json::Value) {
    let _logging = tracing_subscriber::registry().with(EnvFilter::new(filter)).set_default();
    run(scenario)
}

#[test]
fn the_log_filter_does_not_change_a_run() {
    let scenarios = ["apiserver-brownout", "aws-brownout", "crash-mid-drain"];
    let unlogged: Vec<_> = scenarios.iter().map(|s| run(s)).collect();
    for (scenario, expected) in scenarios.iter().zip(&unlogged) {
        for filter in ["info", "debug"] {
            let got = run_logged(scenario, filter);
            assert_eq!(
                &got, expected,
                "{scenario} seed 1 with `{filter}` enabled differs from the run with no subscriber \
                 (fingerprint, launches)"
            );
        }
    }
}
