//! `dovetail run`: one scenario, one seed.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use dovetail_sim::run::{self, RunOptions};
use dovetail_sim::scenario::{Loaded, SimDuration};

/// Prints the expanded scenario, runs it with a progress bar on stderr, prints the summary,
/// writes the report and trace if asked, and exits 1 (with the reproduce line) on failure.
pub fn run(path: &Path, seed: u64, report_path: Option<&Path>, trace_path: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = Loaded::from_file(path)?;
    println!("# expanded scenario: {} --seed {seed}", path.display());
    print!("{}", loaded.expanded(seed));
    println!();
    let _ = std::io::stdout().flush();
    // Wall time is reported to the user only, never into the report.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let mut options = RunOptions { progress: Some(progress_bar()), ..RunOptions::default() };
    let outcome = run::run_with(&loaded, seed, &mut options)?;
    let wall = started.elapsed();
    eprintln!();
    let report = &outcome.report;
    print!("{}", report.summary());
    if let Some(p) = report_path {
        let json = serde_json::to_string_pretty(report)?;
        std::fs::write(p, format!("{json}\n")).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = trace_path {
        std::fs::write(p, outcome.trace.render()).with_context(|| format!("writing {}", p.display()))?;
    }
    let speedup = loaded.scenario.duration.0.as_secs_f64() / wall.as_secs_f64().max(1e-9);
    eprintln!("wall {:.2}s, {speedup:.1}x simulated time", wall.as_secs_f64());
    if report.failed() {
        eprintln!("FAILED; reproduce with: {}", report.reproduce);
        Ok(ExitCode::from(1))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

/// A one-line bar over simulated time: redrawn in place on a terminal, every 10% otherwise.
fn progress_bar() -> Box<dyn FnMut(Duration, Duration)> {
    let tty = std::io::stderr().is_terminal();
    let mut last_decile = None;
    Box::new(move |now, total| {
        let frac = if total.is_zero() { 1.0 } else { now.as_secs_f64() / total.as_secs_f64() };
        let width = 30;
        let filled = ((frac * width as f64) as usize).min(width);
        let line = format!(
            "[{}{}] {} / {}",
            "#".repeat(filled),
            ".".repeat(width - filled),
            SimDuration(Duration::from_secs(now.as_secs())),
            SimDuration(total)
        );
        if tty {
            eprint!("\r{line}");
        } else {
            let decile = (frac * 10.0) as u32;
            if last_decile != Some(decile) {
                last_decile = Some(decile);
                eprintln!("{line}");
            }
        }
    })
}
