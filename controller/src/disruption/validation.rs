//! Command validation (karpenter-behaviour.md §5.9), run [`super::VALIDATION_DELAY`] after an
//! Emptiness or consolidation decision on a fresh snapshot: every candidate must still be a
//! candidate that passes the method's filter and fits the budget, and a consolidation must
//! still simulate to the same decision with the command's replacement types a subset of the
//! fresh options. Anything else means the cluster changed meanwhile and the command is dropped.

use std::collections::BTreeSet;

use super::budgets::{allowed_disruptions, take};
use super::candidates::{Candidate, DisruptionClass, get_candidates};
use super::command::{Command, Method};
use super::consolidation::{ConsolidationBlocker, Unconsolidatable, compute, consolidation_blocker};
use super::emptiness::is_empty_candidate;
use super::input::DisruptionInput;

/// Why a command decided earlier no longer holds on fresh state (the `DisruptionBlocked`
/// message "Disruption command rejected by validation: ...").
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// A candidate is no longer a disruption candidate (deleted, blocked, nominated...).
    #[error("candidate {0} is no longer a disruption candidate")]
    NoLongerCandidate(String),
    /// A candidate no longer passes the method's filter.
    #[error("candidate {name} changed: {why}")]
    Changed {
        /// The candidate's NodeClaim.
        name: String,
        /// What changed.
        why: Changed,
    },
    /// The pool's disruption budget for this reason is used up.
    #[error("disruption budget of NodePool {pool:?} no longer allows {name}")]
    BudgetExhausted {
        /// The NodePool.
        pool: String,
        /// The candidate's NodeClaim.
        name: String,
    },
    /// Emptiness: every candidate has pods again.
    #[error("no candidate is still empty")]
    NoneStillEmpty,
    /// Consolidation no longer works out on fresh state.
    #[error(transparent)]
    Unconsolidatable(#[from] Unconsolidatable),
    /// The simulation now needs a different number of replacements.
    #[error("the simulation now needs {now} replacement(s) instead of {before}")]
    ReplacementCountChanged {
        /// Replacements needed now.
        now: usize,
        /// Replacements the command has.
        before: usize,
    },
    /// An instance type the replacement may launch is no longer an option.
    #[error("replacement instance type {0} is no longer an option")]
    ReplacementTypeGone(String),
}

/// What made a candidate fail its method's filter on fresh state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Changed {
    /// Emptiness: pods arrived.
    #[error("node is no longer empty")]
    NoLongerEmpty,
    /// Consolidation: the candidate is now filtered out.
    #[error(transparent)]
    Consolidation(#[from] ConsolidationBlocker),
}

/// The command to execute against `fresh` state, or why it is no longer valid.
///
/// Emptiness keeps the candidates that are still empty (core does the same); consolidation is
/// all or nothing.
///
/// # Errors
/// Why the command was rejected (the `DisruptionBlocked`/log message).
pub fn validate(fresh: &DisruptionInput, command: &Command) -> Result<Command, Invalid> {
    let (candidates, _) = get_candidates(fresh, DisruptionClass::Graceful);
    let mut budgets = allowed_disruptions(fresh, command.reason());
    let mut kept: Vec<Candidate> = Vec::new();
    for old in &command.candidates {
        let Some(candidate) = candidates.iter().find(|c| c.name == old.name) else {
            if command.method == Method::Emptiness {
                continue;
            }
            return Err(Invalid::NoLongerCandidate(old.name.clone()));
        };
        let filter_error = match command.method {
            Method::Emptiness => (!is_empty_candidate(candidate)).then_some(Changed::NoLongerEmpty),
            Method::MultiNode | Method::SingleNode => consolidation_blocker(candidate).map(Changed::Consolidation),
            Method::Drift => None,
        };
        if let Some(why) = filter_error {
            if command.method == Method::Emptiness {
                continue;
            }
            return Err(Invalid::Changed { name: old.name.clone(), why });
        }
        if !take(&mut budgets, &candidate.pool) {
            if command.method == Method::Emptiness {
                continue;
            }
            return Err(Invalid::BudgetExhausted { pool: candidate.pool.clone(), name: old.name.clone() });
        }
        kept.push(candidate.clone());
    }
    if command.method == Method::Emptiness {
        if kept.is_empty() {
            return Err(Invalid::NoneStillEmpty);
        }
        return Ok(Command { method: command.method, candidates: kept, replacements: Vec::new() });
    }
    let fresh_command = compute(fresh, command.method, &kept)?;
    if fresh_command.replacements.len() != command.replacements.len() {
        return Err(Invalid::ReplacementCountChanged {
            now: fresh_command.replacements.len(),
            before: command.replacements.len(),
        });
    }
    for (old, new) in command.replacements.iter().zip(&fresh_command.replacements) {
        let options: BTreeSet<&str> = new.instance_type_options.iter().map(|it| it.name.as_str()).collect();
        if let Some(missing) = old.instance_type_options.iter().find(|it| !options.contains(it.name.as_str())) {
            return Err(Invalid::ReplacementTypeGone(missing.name.clone()));
        }
    }
    Ok(Command { method: command.method, candidates: kept, replacements: command.replacements.clone() })
}
