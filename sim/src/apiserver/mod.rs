//! The simulated Kubernetes API server.

pub mod schema;
