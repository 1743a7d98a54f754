//! The simulated cluster's actors, and the store-independent cores they run on.
//!
//! [`runtime`] runs event-driven reconcilers against the API server's store;
//! [`workloads`] are kube-controller-manager's workload controllers.
//!
//! Each module is a pure computation over k8s-openapi types: no I/O, no store, time passed in,
//! randomness from a caller-supplied seeded `ChaCha8Rng`. The store-driven actors (scheduler,
//! kubelet, disruption controller) call these and write the results.
//!
//! - [`scheduler`]: an independent kube-scheduler model (filters, scores, FitError messages)
//!   and its scheduling queue.
//! - [`pdb_status`]: the disruption controller's PodDisruptionBudget status computation.
//! - [`node_shape`]: the Node an EKS AL2023 instance registers (capacity, allocatable, labels).
//! - [`quantity`]: exact parsing of resource quantities.

pub mod node_shape;
pub mod pdb_status;
pub mod quantity;
pub mod runtime;
pub mod scheduler;
pub mod workloads;
