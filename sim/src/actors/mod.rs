//! The simulated cluster's actors.

pub mod runtime;
pub mod workloads;
