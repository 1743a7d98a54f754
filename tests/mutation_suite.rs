//! The scenario suite cut to size for mutation testing (issue 19, "oracle strength as a
//! number"): cargo-mutants runs this once per mutant of the controller's disruption,
//! termination, provisioning, lifecycle and interruption modules, so it must be the
//! library's oracles but cheap. It runs the library stories that exercise those modules,
//! at seed 1, two at a time, and fails at the first run with an invariant violated or a
//! step failed. Reports are not compared with their snapshots: a snapshot flags any change in behaviour, which would
//! measure the change detector, not the oracles (see docs/mutation-score.md).
//!
//! `DOVETAIL_MUTATION_SCENARIOS=a,b` picks other stories (names under `scenarios/`);
//! `DOVETAIL_MUTATION_CAP_SECS=N` is the wall-clock cap per run (default
//! [`DEFAULT_CAP_SECS`]) and `DOVETAIL_MUTATION_STALL_SECS=N` how long simulated time may
//! stand still (default [`DEFAULT_STALL_SECS`]): a mutant that makes a run hang past either
//! fails the test (and cargo-mutants' own `--timeout` catches one that hangs the whole
//! process). `DOVETAIL_MUTATION_JOBS=N` runs N stories at once. The exact cargo-mutants
//! command is in `scripts/mutation-score.sh`.
//!
//! The test is `#[ignore]`d: the default `cargo test --workspace` already runs these
//! stories at seed 1 (and more seeds) in `tests/scenarios.rs`, so running them again here
//! was ~100 CPU s of pure duplication (issue 19, "volume by default"). The mutation script
//! runs it with `-- --ignored`; by hand:
//!
//! ```sh
//! cargo test --workspace --test mutation_suite -- --ignored
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use dovetail_sim::regressions;
use dovetail_sim::run::RunOptions;
use dovetail_sim::scenario::Loaded;

/// The stories the mutants are judged by, one or more per mutated module:
/// - `consolidation-scale-down`: provisioning of 60 pods, then consolidation (delete and
///   replace), budgets, PDB-aware drain and NodeClaim termination;
/// - `spot-storm`: the interruption queue (spot interruption warnings) and relaunch;
/// - `pdb-blocked-expiration`: expiration, eviction blocked by a PDB, the drain's
///   termination grace; a value-less NoSchedule pool taint (session 12: kills
///   `termination/node.rs`'s disrupted-taint test widened, through `drainConformance`);
/// - `nodes-never-join`: launch, the registration timeout and liveness of NodeClaims;
/// - `drift-rollout`: drift detection (AMI) and replacement, termination;
/// - `nodepool-drift`: NodePool drift (a template label changes), with a DaemonSet, pods
///   that tolerate every taint and a do-not-disrupt for a duration beside the drained
///   pods. Added for the survivors the first five let through (docs/mutation-score.md;
///   session 12: kills `drain.rs` evicting pods that tolerate the disrupted taint, through
///   `drainConformance`);
/// - `consolidation-on-demand`: on-demand consolidation, where `consolidationLegality`
///   judges each replace's price (session 6: kills `worst_launch_price` -> `Some(-1.0)`);
/// - `pdb-two-workloads`: two PDBs in one namespace on underutilized nodes (session 6:
///   kills the PDB selector mutant of `candidates.rs` through `untakenMoves`);
/// - `host-ports`: pods that bind a host port, one per node (session 11: kills
///   `provisioning/input.rs` `host_ports` ignoring every port, through `strandedPods`);
/// - `gpu-initialization`: a GPU pod, whose NodeClaim is initialized only once the GPU is
///   in allocatable (session 11: kills `lifecycle/initialization.rs`'s extended-resource
///   test inverted, through `stuckNodeClaim`);
/// - `spot-to-spot-few-types`: a lone spot node of a four-type spot pool with
///   SpotToSpotConsolidation on (session 16: kills `consolidation.rs`'s single-node
///   15-cheaper-types rule dropped, through `consolidationLegality`);
/// - `limits-no-room`: two nodes whose pods fit nowhere else under a lowered NodePool limit
///   (session 16: kills `simulation.rs` ignoring the candidates' unschedulable pods, through
///   `consolidationLegality`'s delete fit). Both take ~5 wall seconds at seed 1.
///
/// None has an open finding in `tests/scenarios.rs`'s `KNOWN_FINDINGS`, so any violation
/// here is the mutant's. Unmutated wall seconds at seed 1 (debug build, load 4): 81, 3,
/// 5, 34, 32, 6; the two session-6 stories 14 and 5 (load 7); the two session-11 stories 8 and 5 (load 4). Workers take them in this order ([`DEFAULT_JOBS`] of them), so with two
/// the longest runs alongside the other five, and the test fails as soon as any run
/// fails: a mutant costs about the longest story if it survives, less if caught.
const DEFAULT_SCENARIOS: &[&str] = &[
    "consolidation-scale-down",
    "spot-storm",
    "pdb-blocked-expiration",
    "nodes-never-join",
    "drift-rollout",
    "nodepool-drift",
    "consolidation-on-demand",
    "pdb-two-workloads",
    "host-ports",
    "gpu-initialization",
    "spot-to-spot-few-types",
    "limits-no-room",
];

/// Stories run at once (`DOVETAIL_MUTATION_JOBS`): each run is its own single-threaded
/// world, as in `tests/scenarios.rs`, so running two at once changes no outcome, only the
/// wall clock.
const DEFAULT_JOBS: usize = 2;

/// The seed every story runs at: the library's snapshot seed, green on an unmutated tree.
const SEED: u64 = 1;

/// Wall-clock seconds one run may take before the mutant counts as caught: about 3× the
/// slowest story unmutated (consolidation-scale-down, 203 s in a debug build on a 2-core
/// machine at load average 20).
const DEFAULT_CAP_SECS: u64 = 600;

/// Wall-clock seconds a run may go without simulating one more second before the mutant
/// counts as caught: a controller that spins at one simulated instant (a zero-length
/// requeue loop) keeps turmoil from ever advancing time, so the run would otherwise hang
/// until [`DEFAULT_CAP_SECS`]. Unmutated, every story simulates tens of seconds per wall
/// second, so a minute without one is a hang even on a loaded machine.
const DEFAULT_STALL_SECS: u64 = 60;

fn scenarios() -> Vec<String> {
    match std::env::var("DOVETAIL_MUTATION_SCENARIOS") {
        Ok(list) => list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect(),
        Err(_) => DEFAULT_SCENARIOS.iter().map(|s| s.to_string()).collect(),
    }
}

fn jobs() -> usize {
    match std::env::var("DOVETAIL_MUTATION_JOBS") {
        Ok(n) => n
            .trim()
            .parse()
            .ok()
            .filter(|&n: &usize| n > 0)
            .unwrap_or_else(|| panic!("DOVETAIL_MUTATION_JOBS={n:?} is not a positive count of runs")),
        Err(_) => DEFAULT_JOBS,
    }
}

fn stall() -> Duration {
    let secs = match std::env::var("DOVETAIL_MUTATION_STALL_SECS") {
        Ok(n) => {
            n.trim().parse().unwrap_or_else(|_| panic!("DOVETAIL_MUTATION_STALL_SECS={n:?} is not a count of seconds"))
        }
        Err(_) => DEFAULT_STALL_SECS,
    };
    Duration::from_secs(secs)
}

fn cap() -> Duration {
    let secs = match std::env::var("DOVETAIL_MUTATION_CAP_SECS") {
        Ok(n) => {
            n.trim().parse().unwrap_or_else(|_| panic!("DOVETAIL_MUTATION_CAP_SECS={n:?} is not a count of seconds"))
        }
        Err(_) => DEFAULT_CAP_SECS,
    };
    Duration::from_secs(secs)
}

/// Scenario paths relative to this package (cargo runs tests from `tests/`).
fn scenario_path(name: &str) -> PathBuf {
    Path::new("../scenarios").join(format!("{name}.yaml"))
}

/// The problems of one run (invariant violations, failed steps, a panic or load error),
/// or a note that it hung: simulated time stood still for `stall` of wall clock, or the
/// run took longer than `cap`.
fn judge(name: &str, cap: Duration, stall: Duration) -> Vec<String> {
    let path = scenario_path(name);
    let loaded = match Loaded::from_file(&path) {
        Ok(l) => l,
        Err(e) => return vec![format!("cannot load {}: {e}", path.display())],
    };
    let (tx, rx) = mpsc::channel();
    // Simulated seconds so far, as the runner reports them (about every simulated second).
    let simulated = Arc::new(AtomicU64::new(0));
    let progress = simulated.clone();
    // A detached thread: if the run hangs the test fails and the process exits with it,
    // taking the thread along.
    std::thread::spawn(move || {
        let mut options = RunOptions {
            progress: Some(Box::new(move |now: Duration, _| progress.store(now.as_secs(), Ordering::Relaxed))),
            ..RunOptions::default()
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            dovetail_sim::run::run_with(&loaded, SEED, &mut options)
        }));
        let problems = match outcome {
            Err(p) => {
                let m = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                vec![format!("the run panicked: {m}")]
            }
            Ok(Err(e)) => vec![format!("the run failed: {e:#}")],
            Ok(Ok(outcome)) => match serde_json::to_value(&outcome.report) {
                Ok(report) => regressions::problems(&report),
                Err(e) => vec![format!("the report does not serialize: {e}")],
            },
        };
        let _ = tx.send(problems);
    });
    // Wall clock outside any simulation: the watchdog of a hung run.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let (mut last_second, mut last_moved) = (0, started);
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(problems) => return problems,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return vec!["the run's thread ended without a verdict".into()];
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let second = simulated.load(Ordering::Relaxed);
        if second != last_second {
            #[allow(clippy::disallowed_methods)]
            let now = std::time::Instant::now();
            (last_second, last_moved) = (second, now);
        }
        if last_moved.elapsed() >= stall {
            return vec![format!(
                "the run hung: simulated time stood at {second}s for {}s of wall clock",
                stall.as_secs()
            )];
        }
        if started.elapsed() >= cap {
            return vec![format!("the run took longer than {}s of wall clock", cap.as_secs())];
        }
    }
}

#[test]
#[ignore = "mutation testing only (scripts/mutation-score.sh runs it with --ignored); tests/scenarios.rs runs these \
            stories in the default suite"]
fn controller_modules_hold_the_library_oracles() {
    let (cap, stall) = (cap(), stall());
    let names = scenarios();
    assert!(!names.is_empty(), "DOVETAIL_MUTATION_SCENARIOS names no scenario");
    let queue = Arc::new(std::sync::Mutex::new(names.clone().into_iter()));
    let (tx, rx) = mpsc::channel();
    // Detached workers: when a run fails the test fails at once and the process exits
    // with the other runs (one caught run decides a mutant; the rest would only cost CPU).
    for _ in 0..jobs().min(names.len()) {
        let (queue, tx) = (queue.clone(), tx.clone());
        std::thread::spawn(move || {
            loop {
                let Some(name) = queue.lock().expect("story queue").next() else { break };
                // Wall clock outside any simulation: how long the harness waited for the
                // story, printed so the mutation run's logs show where its time goes.
                #[allow(clippy::disallowed_methods)]
                let started = std::time::Instant::now();
                let problems = judge(&name, cap, stall);
                eprintln!(
                    "mutation suite: {name} seed {SEED}: {} problems in {:.1}s",
                    problems.len(),
                    started.elapsed().as_secs_f64()
                );
                if tx.send((name, problems)).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    for (name, problems) in rx.iter().take(names.len()) {
        assert!(problems.is_empty(), "{name} seed {SEED} fails:\n    {}", problems.join("\n    "));
    }
}
