//! Dovetail's deterministic simulator.
//!
//! One scenario and one seed become a turmoil world in which the production controller
//! talks real Kubernetes REST to a simulated API server ([`apiserver`]) and real EC2 to a
//! fake cloud, while cluster actors play kube-scheduler, kubelets and workload
//! controllers. Same seed, same build: byte-identical trace ([`world`]).

pub mod actors;
pub use dovetail_apiserver as apiserver;
pub mod controller_host;
pub mod explain;
pub mod faults;
pub mod generate;
pub mod import;
pub mod invariants;
pub mod kube_client;
pub mod oracle;
pub mod regressions;
pub mod run;
pub mod scenario;
pub mod shrink;
pub mod timeline;
pub mod world;
