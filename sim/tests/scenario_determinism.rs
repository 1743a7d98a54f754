//! Two separate `dovetail run` processes with the same scenario and seed write
//! byte-identical reports and traces, for every scenario in the library.
//!
//! Each scenario runs at one seed (a different one per scenario, so the sample covers
//! more than seed 1, which the snapshot suite already pins), twice, in two processes; the
//! pairs run as many at a time as there are cores. A scenario whose seed violates an
//! invariant still has to reproduce byte for byte (`dovetail run` exits 1 then, with the
//! report and trace written); any other failure to run fails the test.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The library: `scenarios/*.yaml`, sorted.
fn library() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ beside sim/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    out.sort();
    out
}

/// The seed a scenario is sampled at: 2..=11 by its place in the sorted library.
fn sample_seed(index: usize) -> u64 {
    2 + (index % 10) as u64
}

/// What one process wrote: its stdout, report and trace.
struct Written {
    stdout: String,
    report: String,
    trace: String,
}

/// Runs `dovetail run scenario --seed seed` in a new process, writing into `dir/tag.*`.
fn run(scenario: &Path, seed: u64, dir: &Path, tag: &str) -> Result<Written, String> {
    let report = dir.join(format!("{tag}.json"));
    let trace = dir.join(format!("{tag}.trace"));
    let out = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["run", scenario.to_str().expect("utf-8 path"), "--seed", &seed.to_string()])
        .arg("--report")
        .arg(&report)
        .arg("--trace")
        .arg(&trace)
        .output()
        .map_err(|e| format!("dovetail does not start: {e}"))?;
    // Exit 1 is a violated invariant: the run finished and wrote its report and trace.
    if !(out.status.success() || out.status.code() == Some(1)) {
        return Err(format!(
            "dovetail run {} --seed {seed} failed ({}): {}",
            scenario.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    Ok(Written {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        report: read(&report)?,
        trace: read(&trace)?,
    })
}

/// Runs `scenario` twice at `seed`; what differs between the two, if anything.
fn check(scenario: &Path, seed: u64, dir: &Path) -> Result<Written, String> {
    let stem = scenario.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let a = run(scenario, seed, dir, &format!("{stem}-a"))?;
    let b = run(scenario, seed, dir, &format!("{stem}-b"))?;
    let name = scenario.display();
    if a.report != b.report {
        return Err(format!("{name} --seed {seed}: same seed, different reports"));
    }
    if a.trace != b.trace {
        return Err(format!("{name} --seed {seed}: same seed, different traces"));
    }
    if a.trace.is_empty() {
        return Err(format!("{name} --seed {seed}: the trace is empty"));
    }
    Ok(a)
}

#[test]
fn every_scenario_reproduces_byte_for_byte_across_processes() {
    let dir = std::env::temp_dir().join(format!("dovetail-scenario-determinism-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let library = library();
    assert!(library.len() >= 12, "the scenario library has {} stories, expected at least 12", library.len());
    let queue: Mutex<VecDeque<(usize, PathBuf)>> = Mutex::new(library.into_iter().enumerate().collect());
    let results = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some((i, scenario)) = next else { break };
                    let outcome = check(&scenario, sample_seed(i), &dir);
                    results.lock().unwrap_or_else(|e| e.into_inner()).push((scenario, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let failures: Vec<&String> = results.iter().filter_map(|(_, r)| r.as_ref().err()).collect();
    assert!(failures.is_empty(), "{} scenarios do not reproduce:\n{failures:#?}", failures.len());

    // The report carries what a reproduction is checked by, and the run printed its plan.
    let (_, spot_storm) =
        results.iter().find(|(p, _)| p.ends_with("spot-storm.yaml")).expect("spot-storm is in the library");
    let spot_storm = spot_storm.as_ref().expect("checked above");
    assert!(
        spot_storm.stdout.contains("# expanded scenario") && spot_storm.stdout.contains("kind: spotInterruption"),
        "{}",
        spot_storm.stdout
    );
    let report: serde_json::Value = serde_json::from_str(&spot_storm.report).unwrap();
    for field in
        ["traceFingerprint", "invariants", "cost", "pending", "launches", "interruptions", "disruptions", "apiCalls"]
    {
        assert!(report.get(field).is_some(), "{field} missing");
    }
    std::fs::remove_dir_all(&dir).ok();
}
