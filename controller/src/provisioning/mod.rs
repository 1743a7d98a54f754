//! Provisioning (karpenter-behaviour.md §2): which pods need capacity ([`pending`]), when to act
//! ([`batcher`]), the cluster as scheduler input ([`input`]), the NodeClaim objects it creates
//! ([`node_claim_template`]) and the loop itself ([`provisioner`]).

pub mod batcher;
pub mod input;
pub mod node_claim_template;
pub mod pending;
pub mod provisioner;

pub use provisioner::Provisioner;
