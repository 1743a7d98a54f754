//! `dovetail run`: one scenario, one seed.

use std::io::{IsTerminal, Write};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use dovetail_sim::run::{self, RunOptions};
use dovetail_sim::scenario::{Loaded, SimDuration};
use dovetail_sim::timeline::html;
use dovetail_sim::world::ScenarioWorld;

use super::failure::{Failure, panic_message};

/// The files a run writes besides its summary on stdout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outputs<'a> {
    /// The JSON report (`--report`).
    pub report: Option<&'a Path>,
    /// The trace, one line per entry (`--trace`).
    pub trace: Option<&'a Path>,
    /// The HTML timeline (`--html`, see [`dovetail_sim::timeline`]).
    pub html: Option<&'a Path>,
}

/// Prints the expanded scenario (the world's settings and every value the seed drew, from
/// the very plan that then runs), runs it with a progress bar on stderr, prints the
/// summary, writes the report, trace and timeline if asked, and fails with
/// [`Failure::Invariant`] (after the reproduce line) when the report does.
pub fn run(path: &Path, seed: u64, outputs: &Outputs<'_>) -> Result<(), Failure> {
    let loaded = Loaded::from_file(path).map_err(Failure::invalid)?;
    let world = ScenarioWorld::build(&loaded, seed).map_err(Failure::InvalidInput)?;
    let reproduce = world.reproduce();
    println!("# expanded scenario: {} --seed {seed}", path.display());
    print!("{}", world.expanded());
    println!();
    let _ = std::io::stdout().flush();
    // Wall time is reported to the user only, never into the report.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let mut options =
        RunOptions { progress: Some(progress_bar()), timeline: outputs.html.is_some(), ..RunOptions::default() };
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run::run_world(world, &mut options)))
        .map_err(|panic| Failure::crash(anyhow::anyhow!("the simulation panicked: {}", panic_message(panic.as_ref()))))?
        .map_err(Failure::Crash);
    let wall = started.elapsed();
    eprintln!();
    let outcome = outcome.inspect_err(|_| eprintln!("reproduce with: {reproduce}"))?;
    let report = &outcome.report;
    print!("{}", report.summary());
    println!("  reproduce    {}", report.reproduce);
    if let Some(p) = outputs.report {
        let json = serde_json::to_string_pretty(report).map_err(Failure::crash)?;
        std::fs::write(p, format!("{json}\n"))
            .with_context(|| format!("writing {}", p.display()))
            .map_err(Failure::Crash)?;
    }
    if let Some(p) = outputs.trace {
        std::fs::write(p, outcome.trace.render())
            .with_context(|| format!("writing {}", p.display()))
            .map_err(Failure::Crash)?;
    }
    if let (Some(p), Some(timeline)) = (outputs.html, &outcome.timeline) {
        let page = html::render(timeline);
        std::fs::write(p, &page).with_context(|| format!("writing {}", p.display())).map_err(Failure::Crash)?;
        println!("  timeline     {} ({} KiB)", p.display(), page.len().div_ceil(1024));
    }
    let speedup = loaded.scenario.duration.0.as_secs_f64() / wall.as_secs_f64().max(1e-9);
    eprintln!("wall {:.2}s, {speedup:.1}x simulated time", wall.as_secs_f64());
    if report.failed() {
        eprintln!("FAILED; reproduce with: {}", report.reproduce);
        Err(Failure::Invariant)
    } else {
        Ok(())
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
