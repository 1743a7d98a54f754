//! Karpenter's disruption (karpenter-behaviour.md §5): the `Consolidatable` condition
//! ([`consolidatable`]), the `Drifted` condition ([`drift::controller`]), forceful expiration
//! ([`expiration`], outside the budgets), and the singleton disruption loop ([`controller`]) that
//! tries, in order, Emptiness → Drift → multi-node → single-node consolidation and runs at most
//! one command per loop through the orchestration queue ([`execution`]).
//!
//! Every decision is a pure function of an in-memory [`input::DisruptionInput`] (cluster
//! state, instance types with prices, pools, the time) so it can be unit tested and benchmarked
//! without an API server: [`candidates`] (who may be disrupted, at what cost), [`budgets`] (how
//! many per pool and reason), [`simulation`] (re-running the provisioning scheduler without
//! the candidates), [`consolidation`] (delete vs cheaper replace, spot-to-spot), the methods
//! [`emptiness`], [`drift`], [`multi_node`], [`single_node`], and [`validation`].

#![warn(missing_docs)]

pub mod balanced;
pub mod blocker;
pub mod budgets;
pub mod candidates;
pub mod command;
pub mod consolidatable;
pub mod consolidation;
pub mod controller;
pub mod drift;
pub mod emptiness;
pub mod execution;
pub mod expiration;
pub mod input;
pub mod multi_node;
pub mod report;
pub mod simulation;
pub mod single_node;
pub mod synthetic;
pub mod validation;

#[cfg(test)]
mod budget_events_tests;
#[cfg(test)]
mod in_flight_tests;
#[cfg(test)]
mod loop_tests;
#[cfg(test)]
mod price_tests;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use command::{Command, Decision, Method};
pub use controller::Disruption;
pub use input::DisruptionInput;

/// Poll interval when a loop found nothing to do (core disruption controller).
pub const POLL_IDLE: Duration = Duration::from_secs(10);
/// Delay before a consolidation or emptiness command is re-validated (`commandValidationDelay`).
pub const VALIDATION_DELAY: Duration = Duration::from_secs(15);
/// Candidates a multi-node consolidation considers at most (`maxParallel`).
pub const MULTI_NODE_MAX_CANDIDATES: usize = 100;
/// Multi-node consolidation gives up (keeping its best command so far) after this long.
pub const MULTI_NODE_TIMEOUT: Duration = Duration::from_secs(60);
/// Single-node consolidation stops after this long and remembers the pools it did not reach.
pub const SINGLE_NODE_TIMEOUT: Duration = Duration::from_secs(180);
/// Single-node spot-to-spot needs at least this many cheaper spot types, and launches from
/// the cheapest this many, so the next round cannot race to the bottom.
pub const SPOT_TO_SPOT_MIN_TYPES: usize = 15;
/// Consolidation re-evaluates an unchanged cluster at least this often.
pub const CONSOLIDATION_REFRESH: Duration = Duration::from_secs(300);
/// A replacement that is not Initialized within this long aborts its command
/// (`clamp(80ms × commands, 10m, 1h)` with one command at a time).
pub const REPLACEMENT_TIMEOUT: Duration = Duration::from_secs(600);
/// How often the queue checks a replacement's readiness.
pub const QUEUE_POLL: Duration = Duration::from_secs(1);
