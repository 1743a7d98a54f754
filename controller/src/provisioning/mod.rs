//! Provisioning (karpenter-behaviour.md §2): which pods need capacity ([`pending`]), when to act
//! ([`batcher`]), the cluster as scheduler input ([`input`]), the NodeClaim objects it creates
//! ([`node_claim_template`]), one pass ([`provisioner`]) and the controller that runs passes
//! ([`controller`]).

pub mod batcher;
pub mod controller;
pub mod input;
pub mod node_claim_template;
pub mod pending;
pub mod provisioner;
pub mod reschedulable;
pub mod volume_topology;

pub use controller::ProvisioningController;
pub use provisioner::Provisioner;

#[cfg(test)]
mod in_flight_tests;
