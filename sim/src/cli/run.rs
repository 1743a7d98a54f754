//! `dovetail run`: one scenario, one seed.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use dovetail_sim::run;
use dovetail_sim::scenario::Loaded;

/// Runs the scenario, prints the report, and exits non-zero if an action failed.
pub fn run(path: &Path, seed: u64, report_path: Option<&Path>, trace_path: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = Loaded::from_file(path)?;
    eprintln!(
        "scenario {} seed {seed}: {} simulated, {} steps, {} installed manifests",
        loaded.scenario.name,
        loaded.scenario.duration,
        loaded.scenario.steps.len(),
        loaded.install.len()
    );
    // Wall time is reported to the user only, never into the report.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let outcome = run::run(&loaded, seed)?;
    let wall = started.elapsed();
    let json = serde_json::to_string_pretty(&outcome.report)?;
    println!("{json}");
    if let Some(p) = report_path {
        std::fs::write(p, format!("{json}\n")).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = trace_path {
        std::fs::write(p, outcome.trace.render()).with_context(|| format!("writing {}", p.display()))?;
    }
    let speedup = loaded.scenario.duration.0.as_secs_f64() / wall.as_secs_f64().max(1e-9);
    eprintln!("wall {:.2}s, {speedup:.0}x simulated time", wall.as_secs_f64());
    if outcome.report.failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for f in &outcome.report.failures {
            eprintln!("FAILED {f}");
        }
        eprintln!("reproduce with: {}", outcome.report.reproduce);
        Ok(ExitCode::from(1))
    }
}
