//! Dovetail controller: a Karpenter v1 compatible node autoprovisioner for EKS.
//!
//! The crate is the production controller: it talks to the Kubernetes API server through `kube`
//! and to AWS through the AWS SDK, and takes its clock, random source and clients by injection so
//! the same code runs in the deterministic simulator. Start with [`apis`], the Karpenter resource
//! types (NodePool, NodeClaim, EC2NodeClass) every other module works on.

pub mod apis;
pub mod aws_http;
pub mod cloudprovider;
pub mod disruption;
pub mod garbage_collection;
pub mod interruption;
pub mod lifecycle;
pub mod node_health;
pub mod nodeclass;
pub mod nodeoverlay;
pub mod nodepool;
pub mod operator;
pub mod provisioning;
pub mod runtime;
pub mod scheduling;
pub mod state;
pub mod termination;
