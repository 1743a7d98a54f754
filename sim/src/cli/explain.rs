//! `dovetail explain`: one scenario, one seed, explained at a simulated time or at the end.

use std::path::Path;
use std::time::Duration;

use dovetail_sim::explain::capture::explain_run;
use dovetail_sim::scenario::Loaded;
use dovetail_sim::world::ScenarioWorld;

use super::failure::Failure;

/// Runs `path` with `seed` and prints why every node is (not) disrupted, why every pending
/// pod is pending, and the disruption decisions up to `at` (the end by default).
pub fn explain(path: &Path, seed: u64, at: Option<Duration>) -> Result<(), Failure> {
    let loaded = Loaded::from_file(path).map_err(Failure::invalid)?;
    let world = ScenarioWorld::build(&loaded, seed).map_err(Failure::InvalidInput)?;
    let reproduce = world.reproduce();
    let (explanation, outcome) = explain_run(world, at, |_, _, _| {}).map_err(Failure::Crash)?;
    print!("{explanation}");
    println!("  run: {} invariant violation(s); reproduce: {reproduce}", outcome.report.invariants.violations.len());
    Ok(())
}
