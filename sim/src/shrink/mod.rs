//! The shrinker: a failing run made small, with the seed held fixed.
//!
//! proptest-style shrinking that rewrites the seed rewrites the whole world at every step
//! (every draw changes), so the "minimal" story it finds is an accident of one seed. Here
//! the run seed never changes: the shrinker only edits the scenario ([`candidates`]: end
//! it at the failure, drop workloads, faults, steps and NodePools, lower counts, rates and
//! durations, make distributions constants) and keeps a candidate only if its run still
//! fails with the same [`Signature`] — the same invariant, a failed step, or a crash
//! ([`trial`]). It repeats, greedily and biggest cut first, until no move keeps the failure
//! or the run budget is spent. It works for any failing run: a library scenario, a
//! generated story, a user's file.
//!
//! `dovetail shrink scenario.yaml --seed N` writes the minimal file and its reproduce line.

pub mod candidates;
pub mod ending;
pub mod trial;
pub mod unneeded_invariants;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::generate::to_yaml;
use crate::scenario::{LoadError, Loaded, Scenario};
use crate::world::reproduce_command;
pub use trial::{Signature, Trial};

/// Told about each kept move and the run that kept it.
pub type OnKept = Box<dyn FnMut(&str, &Trial)>;

/// Limits and hooks of one shrink.
pub struct Options {
    /// Most candidate runs (each a whole simulated run).
    pub max_runs: usize,
    /// Told about each kept move (for progress output).
    pub on_kept: Option<OnKept>,
}

impl Default for Options {
    fn default() -> Self {
        Self { max_runs: 200, on_kept: None }
    }
}

/// A shrunk failure.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal scenario found.
    pub scenario: Scenario,
    /// The failure it keeps.
    pub signature: Signature,
    /// The failure's first message in the shrunk run.
    pub message: String,
    /// Trace entries of the original run.
    pub original_events: u64,
    /// Trace entries of the shrunk run.
    pub shrunk_events: u64,
    /// Candidate runs made.
    pub runs: usize,
    /// The moves kept, in order.
    pub kept: Vec<String>,
    /// The seed (held fixed).
    pub seed: u64,
}

/// Why a shrink could not start.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    /// The scenario does not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The run does not fail, so there is nothing to keep.
    #[error("{path} --seed {seed} does not fail; nothing to shrink")]
    Passes {
        /// The scenario.
        path: PathBuf,
        /// The seed.
        seed: u64,
    },
    /// The run fails, but not with the asked-for signature.
    #[error("{path} --seed {seed} does not fail with {wanted}; it fails with {found}")]
    OtherFailure {
        /// The scenario.
        path: PathBuf,
        /// The seed.
        seed: u64,
        /// What was asked for.
        wanted: Signature,
        /// What the run shows.
        found: String,
    },
}

/// Shrinks the failure of `loaded` run with `seed`: the first failure the run shows, or
/// `target` if given.
pub fn shrink(
    loaded: &Loaded,
    seed: u64,
    target: Option<Signature>,
    mut options: Options,
) -> Result<Shrunk, ShrinkError> {
    let path = loaded.path.clone();
    let original = trial::run(loaded, seed);
    let signature = match target {
        Some(t) if original.fails_like(&t) => t,
        Some(wanted) => {
            let found: Vec<String> = original.failures.iter().map(|(s, _, _)| s.to_string()).collect();
            if found.is_empty() {
                return Err(ShrinkError::Passes { path, seed });
            }
            return Err(ShrinkError::OtherFailure { path, seed, wanted, found: found.join(", ") });
        }
        None => original.first_signature().cloned().ok_or(ShrinkError::Passes { path: path.clone(), seed })?,
    };
    let mut current = loaded.scenario.clone();
    let mut best = original.clone();
    let mut runs = 0;
    let mut kept = Vec::new();
    let mut rejected: BTreeSet<String> = BTreeSet::new();
    'search: while runs < options.max_runs {
        for (what, candidate) in candidates::all(&current, best.first_seen(&signature), &signature) {
            let text = to_yaml(&candidate);
            if rejected.contains(&text) {
                continue;
            }
            let Ok(candidate_loaded) = trial::load(&path, &candidate) else {
                rejected.insert(text);
                continue;
            };
            if runs >= options.max_runs {
                break 'search;
            }
            runs += 1;
            let outcome = trial::run(&candidate_loaded, seed);
            if outcome.fails_like(&signature) {
                if let Some(f) = options.on_kept.as_mut() {
                    f(&what, &outcome);
                }
                kept.push(what);
                current = candidate_loaded.scenario;
                best = outcome;
                continue 'search;
            }
            rejected.insert(text);
        }
        break;
    }
    Ok(Shrunk {
        message: best.message(&signature).unwrap_or_default().to_string(),
        scenario: current,
        signature,
        original_events: original.events,
        shrunk_events: best.events,
        runs,
        kept,
        seed,
    })
}

impl Shrunk {
    /// The shrunk scenario as a file: a header saying where it came from (`source`), what
    /// still fails and how to replay it, then the scenario.
    pub fn file_text(&self, source: &str, written_to: &Path) -> String {
        format!(
            "# Shrunk from {} with seed {} held fixed ({} runs, {} moves kept).\n\
             # seed: {}\n\
             # failure: {}\n\
             # events: {} in the original run, {} shrunk\n\
             # reproduce: {}\n{}",
            source,
            self.seed,
            self.runs,
            self.kept.len(),
            self.seed,
            self.message.replace('\n', " "),
            self.original_events,
            self.shrunk_events,
            reproduce_command(written_to, self.seed),
            to_yaml(&self.scenario)
        )
    }
}

#[cfg(test)]
mod tests;
