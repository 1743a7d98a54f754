//! `dovetail bench split`: where one scenario run's CPU goes (issue 21's P7: the API server,
//! the actors and the fake cloud together should take at most a fifth of a run).
//!
//! The run is the one `dovetail run` makes (same scenario, seed and report); the meter
//! (`dovetail_world::cpu_meter`) charges each part the thread CPU of its spans: every API
//! server connection, each actor's reconcile, every fake-cloud connection and its clock,
//! the observer's per-second sample (the invariant checker, the timeline). What no part
//! claims is the controller under test with the runtime that steps the world (turmoil's
//! network and the tasks' scheduling). Medians over `samples` runs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use dovetail_sim::scenario::Loaded;
use dovetail_world::cpu_meter;

use super::failure::Failure;

/// One run's CPU by label, and its total.
fn one_run(loaded: &Loaded, seed: u64) -> anyhow::Result<(BTreeMap<cpu_meter::Label, Duration>, Duration, Duration)> {
    cpu_meter::start();
    let before = cpu_meter::thread_cpu();
    let outcome = dovetail_sim::run::run(loaded, seed);
    let total = cpu_meter::thread_cpu().saturating_sub(before);
    let parts = cpu_meter::finish();
    let simulated = outcome?.report.simulated.0;
    Ok((parts, total, simulated))
}

/// Runs `scenario` at `seed` `samples` times and prints the median CPU of each part.
pub fn split(scenario: &Path, seed: u64, samples: usize) -> Result<(), Failure> {
    let loaded = Loaded::from_file(scenario).map_err(Failure::invalid)?;
    let samples = samples.max(1);
    let mut runs = Vec::new();
    for _ in 0..samples {
        runs.push(one_run(&loaded, seed).map_err(Failure::crash)?);
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let total = median(runs.iter().map(|r| r.1).collect());
    let simulated = runs[0].2;
    let labels: std::collections::BTreeSet<cpu_meter::Label> = runs.iter().flat_map(|r| r.0.keys().copied()).collect();
    let mut rows: Vec<(cpu_meter::Label, Duration)> = labels
        .into_iter()
        .map(|l| (l, median(runs.iter().map(|r| r.0.get(&l).copied().unwrap_or_default()).collect())))
        .collect();
    let measured: Duration = rows.iter().map(|(_, d)| *d).sum();
    rows.push((("controller+runtime", "(the rest)"), total.saturating_sub(measured)));
    let pct = |d: Duration| 100.0 * d.as_secs_f64() / total.as_secs_f64().max(1e-9);
    println!(
        "{}: seed {seed}, {} simulated in {:.2} CPU s (median of {samples}), {:.0}x",
        scenario.display(),
        dovetail_world::SimDuration(simulated),
        total.as_secs_f64(),
        simulated.as_secs_f64() / total.as_secs_f64().max(1e-9)
    );
    let mut by_part: BTreeMap<&str, Duration> = BTreeMap::new();
    for ((part, _), d) in &rows {
        *by_part.entry(part).or_default() += *d;
    }
    println!("{:<22} {:>10} {:>7}", "part", "CPU s", "share");
    for (part, d) in &by_part {
        println!("{part:<22} {:>10.2} {:>6.1}%", d.as_secs_f64(), pct(*d));
    }
    let harness: Duration = ["apiserver", "actors", "fakecloud"].iter().filter_map(|p| by_part.get(p)).copied().sum();
    println!("P7 (API server + actors + fake cloud): {:.1}% of the run (target <= 20%)", pct(harness));
    println!("\n{:<34} {:>10} {:>7}", "detail", "CPU s", "share");
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    for ((part, detail), d) in rows.iter().filter(|(_, d)| pct(*d) >= 0.1) {
        println!("{:<34} {:>10.2} {:>6.1}%", format!("{part}/{detail}"), d.as_secs_f64(), pct(*d));
    }
    Ok(())
}
