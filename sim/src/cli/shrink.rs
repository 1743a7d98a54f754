//! `dovetail shrink`: a failing run made small, seed held fixed (see `dovetail_sim::shrink`).
//!
//! Writes the minimal scenario beside the original (`<stem>.shrunk.yaml`, so `install:`
//! paths still resolve) or to `--out`, prints what it kept and the reproduce line, and
//! exits 1 (the shrunk scenario still fails, as it must).

use std::path::{Path, PathBuf};

use dovetail_sim::scenario::Loaded;
use dovetail_sim::shrink::{self, Options, ShrinkError, Signature, Trial};
use dovetail_sim::world::reproduce_command;

use super::failure::Failure;

/// What `dovetail shrink` was asked.
pub struct ShrinkArgs {
    /// The failing scenario.
    pub scenario: PathBuf,
    /// The seed it fails with (held fixed).
    pub seed: u64,
    /// Keep this invariant failing (default: the first failure of the run).
    pub invariant: Option<String>,
    /// Where to write the shrunk scenario.
    pub out: Option<PathBuf>,
    /// Most candidate runs.
    pub max_runs: usize,
}

/// Shrinks, writes and prints; `Failure::Invariant` when done (the shrunk file fails).
pub fn shrink(args: &ShrinkArgs) -> Result<(), Failure> {
    let loaded = Loaded::from_file(&args.scenario).map_err(Failure::invalid)?;
    let out = args.out.clone().unwrap_or_else(|| beside(&args.scenario));
    let on_kept = Box::new(|what: &str, trial: &Trial| {
        eprintln!("kept: {what} ({} events)", trial.events);
    });
    let options = Options { max_runs: args.max_runs, on_kept: Some(on_kept) };
    let target = args.invariant.clone().map(Signature::Invariant);
    let shrunk = shrink::shrink(&loaded, args.seed, target, options).map_err(|e| match e {
        ShrinkError::Load(e) => Failure::invalid(e),
        other => Failure::invalid(other),
    })?;
    std::fs::write(&out, shrunk.file_text(&args.scenario.display().to_string(), &out))
        .map_err(|e| Failure::crash(anyhow::anyhow!("writing {}: {e}", out.display())))?;
    let ratio = shrunk.shrunk_events as f64 / shrunk.original_events.max(1) as f64;
    println!("still fails: {}", shrunk.message);
    println!(
        "events: {} -> {} ({:.1}%), {} runs, {} moves kept",
        shrunk.original_events,
        shrunk.shrunk_events,
        ratio * 100.0,
        shrunk.runs,
        shrunk.kept.len()
    );
    println!("wrote {}", out.display());
    println!("reproduce: {}", reproduce_command(&out, args.seed));
    Err(Failure::Invariant)
}

/// `dir/stem.yaml` -> `dir/stem.shrunk.yaml`.
fn beside(path: &Path) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!("{stem}.shrunk.yaml"))
}
