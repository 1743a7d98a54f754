//! Drift (karpenter-behaviour.md §5.11), both halves:
//!
//! - [`controller`] sets the `Drifted` condition on launched NodeClaims, with Karpenter's reasons
//!   (`NodePoolDrifted`, `RequirementsDrifted`, `InstanceTypeNotFound` from core's [`rules`],
//!   and the provider's `NodeClassDrift`, `AMIDrift`, `SecurityGroupDrift`, `SubnetDrift`);
//!   [`hash_version`] keeps the NodePool and EC2NodeClass hash annotations and re-stamps claims
//!   stamped under an older hash version instead of drifting them.
//! - [`method`] is the disruption method: the disruption loop replaces drifted nodes within
//!   budgets.

pub mod controller;
pub mod hash_version;
pub mod method;
pub mod rules;

pub use controller::DriftController;
pub use method::drift;
