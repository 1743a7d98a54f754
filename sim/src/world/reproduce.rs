//! The one line that replays a run.
//!
//! A run is a pure function of its scenario file and seed, so the `dovetail` command line
//! naming both reproduces it byte for byte. The report's `reproduce` field, `dovetail
//! run`'s failure line, `dovetail sweep`'s FAIL lines and the test suites all print this
//! line, in this one format.

use std::path::Path;

/// `dovetail run <scenario> --seed N`: the command that replays the run of `scenario` with
/// `seed` (no other flag changes what a run does).
pub fn reproduce_command(scenario: &Path, seed: u64) -> String {
    format!("dovetail run {} --seed {seed}", scenario.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduce_names_the_scenario_and_the_seed() {
        assert_eq!(
            reproduce_command(Path::new("scenarios/spot-storm.yaml"), 42),
            "dovetail run scenarios/spot-storm.yaml --seed 42"
        );
    }
}
