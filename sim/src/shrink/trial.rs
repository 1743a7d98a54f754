//! One trial: run a candidate scenario with the held seed, and say how it failed.
//!
//! A failure's [`Signature`] is what the shrinker keeps fixed: the invariant that fired (by
//! name), a failed step, or a crash of the run. A candidate is kept only if its run fails
//! with the same signature.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::Duration;

use crate::generate::to_yaml;
use crate::scenario::{LoadError, Loaded, Scenario};

/// How a run failed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signature {
    /// This invariant was violated (by name, e.g. `stuckNodeClaim`).
    Invariant(String),
    /// A scenario step did not do what it expected.
    StepFailed,
    /// The run did not finish: it returned an error or panicked.
    Crashed,
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signature::Invariant(name) => write!(f, "invariant {name}"),
            Signature::StepFailed => f.write_str("a failed step"),
            Signature::Crashed => f.write_str("a crashed run"),
        }
    }
}

/// What one run showed.
#[derive(Clone, Debug, Default)]
pub struct Trial {
    /// Every way it failed, with the earliest simulated time each was seen (if known) and
    /// its first message.
    pub failures: Vec<(Signature, Option<Duration>, String)>,
    /// Trace entries the run recorded (0 for a crashed run).
    pub events: u64,
}

impl Trial {
    /// Whether the run failed with `signature`.
    pub fn fails_like(&self, signature: &Signature) -> bool {
        self.failures.iter().any(|(s, _, _)| s == signature)
    }

    /// When `signature` was first seen, if the run says.
    pub fn first_seen(&self, signature: &Signature) -> Option<Duration> {
        self.failures.iter().find(|(s, _, _)| s == signature).and_then(|(_, at, _)| *at)
    }

    /// The first failure's signature (the violation seen first, else a failed step, else a crash).
    pub fn first_signature(&self) -> Option<&Signature> {
        self.failures.first().map(|(s, _, _)| s)
    }

    /// The first message recorded for `signature`.
    pub fn message(&self, signature: &Signature) -> Option<&str> {
        self.failures.iter().find(|(s, _, _)| s == signature).map(|(_, _, m)| m.as_str())
    }
}

/// Loads `scenario` as the file at `path` would (through its YAML, so what the shrinker
/// keeps is exactly what its output file replays).
pub fn load(path: &Path, scenario: &Scenario) -> Result<Loaded, LoadError> {
    Loaded::from_str(path, &to_yaml(scenario))
}

/// Runs `loaded` with `seed` and classifies the outcome.
pub fn run(loaded: &Loaded, seed: u64) -> Trial {
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| crate::run::run(loaded, seed)));
    let outcome = match outcome {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => return crashed(format!("{e:#}")),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_default();
            return crashed(format!("the run panicked: {message}"));
        }
    };
    let report = &outcome.report;
    let mut violations: Vec<_> = report.invariants.violations.iter().collect();
    violations.sort_by_key(|v| v.at);
    let mut failures: Vec<(Signature, Option<Duration>, String)> = Vec::new();
    for v in violations {
        let signature = Signature::Invariant(v.invariant.clone());
        if !failures.iter().any(|(s, _, _)| *s == signature) {
            failures.push((signature, Some(v.at.0), format!("{} at {}: {}", v.invariant, v.at, v.message)));
        }
    }
    if let Some(step) = report.failures.first() {
        failures.push((Signature::StepFailed, None, step.clone()));
    }
    Trial { failures, events: report.trace_entries }
}

fn crashed(message: String) -> Trial {
    Trial { failures: vec![(Signature::Crashed, None, message)], events: 0 }
}
