//! Command validation (karpenter-behaviour.md §5.9), run [`super::VALIDATION_DELAY`] after an
//! Emptiness or consolidation decision on a fresh snapshot: every candidate must still be a
//! candidate that passes the method's filter and fits the budget, and a consolidation must
//! still simulate to the same decision with the command's replacement types a subset of the
//! fresh options. Anything else means the cluster changed meanwhile and the command is dropped.

use std::collections::BTreeSet;

use super::budgets::{allowed_disruptions, take};
use super::candidates::{Candidate, DisruptionClass, get_candidates};
use super::command::{Command, Method};
use super::consolidation::{compute, consolidation_blocker};
use super::emptiness::is_empty_candidate;
use super::input::DisruptionInput;

/// The command to execute against `fresh` state, or why it is no longer valid.
///
/// Emptiness keeps the candidates that are still empty (core does the same); consolidation is
/// all or nothing.
///
/// # Errors
/// Why the command was rejected (the `DisruptionBlocked`/log message).
pub fn validate(fresh: &DisruptionInput, command: &Command) -> Result<Command, String> {
    let (candidates, _) = get_candidates(fresh, DisruptionClass::Graceful);
    let mut budgets = allowed_disruptions(fresh, command.reason());
    let mut kept: Vec<Candidate> = Vec::new();
    for old in &command.candidates {
        let Some(candidate) = candidates.iter().find(|c| c.name == old.name) else {
            if command.method == Method::Emptiness {
                continue;
            }
            return Err(format!("candidate {} is no longer a disruption candidate", old.name));
        };
        let filter_error = match command.method {
            Method::Emptiness => (!is_empty_candidate(candidate)).then_some("node is no longer empty"),
            Method::MultiNode | Method::SingleNode => consolidation_blocker(candidate),
            Method::Drift => None,
        };
        if let Some(error) = filter_error {
            if command.method == Method::Emptiness {
                continue;
            }
            return Err(format!("candidate {} changed: {error}", old.name));
        }
        if !take(&mut budgets, &candidate.pool) {
            if command.method == Method::Emptiness {
                continue;
            }
            return Err(format!("disruption budget of NodePool {:?} no longer allows {}", candidate.pool, old.name));
        }
        kept.push(candidate.clone());
    }
    if command.method == Method::Emptiness {
        if kept.is_empty() {
            return Err("no candidate is still empty".into());
        }
        return Ok(Command { method: command.method, candidates: kept, replacements: Vec::new() });
    }
    let fresh_command = compute(fresh, command.method, &kept)?;
    if fresh_command.replacements.len() != command.replacements.len() {
        return Err(format!(
            "the simulation now needs {} replacement(s) instead of {}",
            fresh_command.replacements.len(),
            command.replacements.len()
        ));
    }
    for (old, new) in command.replacements.iter().zip(&fresh_command.replacements) {
        let options: BTreeSet<&str> = new.instance_type_options.iter().map(|it| it.name.as_str()).collect();
        if let Some(missing) = old.instance_type_options.iter().find(|it| !options.contains(it.name.as_str())) {
            return Err(format!("replacement instance type {} is no longer an option", missing.name));
        }
    }
    Ok(Command { method: command.method, candidates: kept, replacements: command.replacements.clone() })
}
