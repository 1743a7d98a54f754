//! The scenario library under `cargo test`: every `scenarios/*.yaml` over seeds
//! 1..=[`SWEEP_SEEDS`] (fewer for the costliest, [`FEWER_SEEDS`]), with no invariant violation and no failed step, and each fixed
//! seed's report snapshot-tested with insta so any behaviour change shows up in review
//! (`cargo insta review`, or `INSTA_UPDATE=always` to accept).
//!
//! A failing seed is appended to `scenarios/regressions/<scenario>.seeds` and replayed
//! first on every later run (commit the file). The failure message carries the line that
//! reproduces it. The default suite is sized for a debug build on 2 cores (minutes);
//! the long sweep is `#[ignore]`d:
//!
//! ```sh
//! cargo test -p dovetail-tests --test scenarios -- --ignored    # 20 seeds per scenario
//! cargo run --release -p dovetail-sim --bin dovetail -- sweep scenarios/ --seeds 1..200
//! ```

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use dovetail_sim::regressions;
use dovetail_sim::scenario::Loaded;
use serde_json::Value;

/// Seeds whose reports are snapshot-tested for every scenario.
const FIXED_SEEDS: &[u64] = &[1];

/// How many seeds (1..=N) a scenario runs in the default suite unless [`FEWER_SEEDS`] lists
/// it, each checked against every invariant (issue 19 asks for at least 10 per scenario).
/// `DOVETAIL_LIBRARY_SEEDS=N` runs 1..=N for every scenario instead.
const SWEEP_SEEDS: u64 = 10;

/// Scenarios whose seed costs too much for [`SWEEP_SEEDS`] in a ~15-minute default
/// `cargo test --workspace` on 2 cores, with the seed count they run: CPU seconds of one
/// seed (dev profile, `dovetail run`, docs/benchmarks-measured.md) in each comment. The
/// long sweep below runs them over 20 seeds like every other scenario.
const FEWER_SEEDS: &[(&str, u64)] = &[
    // 2,000 Jobs: ~230-310 CPU s a seed, as much as the rest of the library together.
    ("batch-burst", 1),
    // 17-26 CPU s a seed.
    ("burst-watch-lag", 3),
    ("crash-mid-drain", 3),
    ("drift-rollout", 3),
    ("nodes-never-join-network", 3),
    ("web-diurnal", 3),
    // 5-10 CPU s a seed.
    ("apiserver-brownout", 5),
    ("instance-status", 5),
    ("price-list", 5),
    ("consolidation-scale-down", 5),
    ("node-repair", 5),
    ("steady-web", 5),
];

/// The seeds 1..=N `scenario` runs: `DOVETAIL_LIBRARY_SEEDS`, else [`FEWER_SEEDS`]' count,
/// else [`SWEEP_SEEDS`].
fn sweep_seeds(scenario: &str) -> u64 {
    match std::env::var("DOVETAIL_LIBRARY_SEEDS") {
        Ok(n) => n.trim().parse().unwrap_or_else(|_| panic!("DOVETAIL_LIBRARY_SEEDS={n:?} is not a seed count")),
        Err(_) => FEWER_SEEDS.iter().find(|(s, _)| *s == scenario).map_or(SWEEP_SEEDS, |(_, n)| *n),
    }
}

/// Snapshot-tested seeds: extra ones for scenarios whose every seed is cheap to review.
fn fixed_seeds(scenario: &str) -> Vec<u64> {
    match scenario {
        "apiserver-smoke" | "chaos-never-fits" => vec![1, 2, 3],
        _ => FIXED_SEEDS.to_vec(),
    }
}

/// Every seed a scenario runs in the default suite: the sweep and its snapshot seeds.
fn default_seeds(scenario: &str) -> Vec<u64> {
    let mut seeds: Vec<u64> = (1..=sweep_seeds(scenario)).collect();
    seeds.extend(fixed_seeds(scenario));
    seeds.sort_unstable();
    seeds.dedup();
    seeds
}

/// Scenario paths relative to this package (cargo runs tests from `tests/`), so reports
/// and snapshots name the same paths on every machine.
fn scenarios_dir() -> &'static Path {
    Path::new("../scenarios")
}

fn regressions_dir() -> PathBuf {
    scenarios_dir().join("regressions")
}

/// The library: `scenarios/*.yaml`, sorted.
fn library() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ beside tests/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| (p.file_stem().unwrap_or_default().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    out
}

/// A scenario's estimated cost per seed: its seed-1 snapshot's `traceEntries` (every store
/// write is one), 0 without a snapshot. Only orders the runs.
fn weight(scenario: &str) -> u64 {
    let path = Path::new("snapshots").join(format!("scenarios__{scenario}-seed-1.snap"));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("\"traceEntries\": "))
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or(0)
}

/// One finished run: its report as JSON, or why it could not run.
struct Finished {
    scenario: String,
    path: PathBuf,
    seed: u64,
    report: Result<Value, String>,
}

/// Runs one scenario and seed in this thread (each run is its own single-threaded world).
fn run_one(path: &Path, seed: u64) -> Result<Value, String> {
    let loaded = Loaded::from_file(path).map_err(|e| e.to_string())?;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dovetail_sim::run::run(&loaded, seed)))
        .map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
        .map_err(|m| format!("the run panicked: {m}"))?
        .map_err(|e| format!("{e:#}"))?;
    serde_json::to_value(&outcome.report).map_err(|e| e.to_string())
}

/// CPU time this thread has used so far (Linux: `/proc/thread-self/schedstat`), printed per
/// run (`-- --nocapture`) to size the suite: on a loaded machine wall time says little.
fn thread_cpu() -> Option<std::time::Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(std::time::Duration::from_nanos(nanos))
}

/// Runs every (scenario, seed) on as many threads as there are cores.
fn run_all(jobs: Vec<(String, PathBuf, u64)>) -> Vec<Finished> {
    let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
    let done = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some((scenario, path, seed)) = next else { break };
                    let cpu = thread_cpu();
                    let report = run_one(&path, seed);
                    if let (Some(before), Some(after)) = (cpu, thread_cpu()) {
                        eprintln!("{scenario} seed {seed}: {:.1} CPU s", (after - before).as_secs_f64());
                    }
                    done.lock().unwrap_or_else(|e| e.into_inner()).push(Finished { scenario, path, seed, report });
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by(|a, b| (&a.scenario, a.seed).cmp(&(&b.scenario, b.seed)));
    done
}

/// The reproduce line, from the repository root (paths here are relative to `tests/`).
fn reproduce(path: &Path, seed: u64) -> String {
    regressions::reproduce_command(path.strip_prefix("..").unwrap_or(path), seed)
}

/// An open controller finding an oracle reports today, tracked by an issue.
struct KnownFinding {
    scenario: &'static str,
    seed: u64,
    invariant: &'static str,
    /// What the finding is and where it is tracked.
    why: &'static str,
}

/// Open findings: a run whose every problem is a listed (scenario, seed, invariant) does
/// not fail the suite, and a listed finding that no longer reproduces does, so an entry is
/// removed when the controller is fixed. The oracle is not widened: the violation stays in
/// the run's report and in its snapshot, where review sees it.
const KNOWN_FINDINGS: &[KnownFinding] = &[];

/// Whether `problem` (a line of [`regressions::problems`]) is a known finding of this run.
fn known(scenario: &str, seed: u64, problem: &str) -> bool {
    KNOWN_FINDINGS
        .iter()
        .any(|k| k.scenario == scenario && k.seed == seed && problem.starts_with(&format!("{} at ", k.invariant)))
}

/// Known findings among `finished` runs that did not reproduce.
fn stale_findings(finished: &[Finished]) -> Vec<String> {
    KNOWN_FINDINGS
        .iter()
        .filter(|k| {
            finished.iter().any(|f| {
                f.scenario == k.scenario
                    && f.seed == k.seed
                    && f.report.as_ref().is_ok_and(|r| {
                        !regressions::problems(r).iter().any(|p| p.starts_with(&format!("{} at ", k.invariant)))
                    })
            })
        })
        .map(|k| {
            format!(
                "{} seed {}: the known finding `{}` ({}) no longer reproduces: remove it from KNOWN_FINDINGS",
                k.scenario, k.seed, k.invariant, k.why
            )
        })
        .collect()
}

/// Records failures as regression seeds and returns one message per failing run.
fn failures(finished: &[Finished]) -> Vec<String> {
    let mut out = stale_findings(finished);
    for f in finished {
        let problems: Vec<String> = match &f.report {
            Ok(report) => regressions::problems(report),
            Err(e) => vec![e.clone()],
        };
        let problems: Vec<String> = problems.into_iter().filter(|p| !known(&f.scenario, f.seed, p)).collect();
        if problems.is_empty() {
            continue;
        }
        let message = format!(
            "{} seed {}:\n    {}\n    reproduce: {}",
            f.scenario,
            f.seed,
            problems.join("\n    "),
            reproduce(&f.path, f.seed)
        );
        let note = problems.first().cloned().unwrap_or_default();
        if let Err(e) = regressions::record(&regressions_dir(), &f.scenario, f.seed, &note) {
            eprintln!("could not record seed {} of {}: {e}", f.seed, f.scenario);
        }
        out.push(message);
    }
    out
}

#[test]
fn library_scenarios_hold_every_invariant_and_match_their_snapshots() {
    let library = library();
    assert!(library.len() >= 12, "the scenario library has {} stories, expected at least 12", library.len());
    let mut jobs = Vec::new();
    for (name, path) in &library {
        let seeds =
            regressions::seeds_to_run(&regressions_dir(), name, &default_seeds(name)).unwrap_or_else(|e| panic!("{e}"));
        jobs.extend(seeds.into_iter().map(|seed| (name.clone(), path.clone(), seed)));
    }
    // Costliest scenarios first, so the last runs on each thread are short ones.
    jobs.sort_by_cached_key(|(name, _, seed)| (std::cmp::Reverse(weight(name)), name.clone(), *seed));
    let finished = run_all(jobs);
    let failed = failures(&finished);
    assert!(failed.is_empty(), "{} failing runs:\n{}", failed.len(), failed.join("\n"));
    for f in &finished {
        if !fixed_seeds(&f.scenario).contains(&f.seed) {
            continue;
        }
        let Ok(report) = &f.report else { continue };
        insta::assert_json_snapshot!(format!("{}-seed-{}", f.scenario, f.seed), report);
    }
}

/// The long sweep: 20 seeds per scenario (about an hour in a debug build on 2 cores).
#[test]
#[ignore = "long: cargo test -p dovetail-tests --test scenarios -- --ignored"]
fn library_scenarios_over_twenty_seeds() {
    let jobs = library()
        .into_iter()
        .flat_map(|(name, path)| (1..=20).map(move |seed| (name.clone(), path.clone(), seed)))
        .collect();
    let failed = failures(&run_all(jobs));
    assert!(failed.is_empty(), "{} failing runs:\n{}", failed.len(), failed.join("\n"));
}
