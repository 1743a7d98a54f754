//! Workload controllers, as kube-controller-manager runs them: Deployments roll
//! ReplicaSets, ReplicaSets keep pods, Jobs run pods to completion, DaemonSets put a pod
//! on every eligible node, StatefulSets keep a named pod and its claims per ordinal.

mod counts_memo;
mod daemonset;
mod deployment;
mod job;
mod pods;
mod replicaset;
mod statefulset;

pub use daemonset::DaemonSetController;
pub use deployment::{DeploymentController, POD_TEMPLATE_HASH, template_hash};
pub use job::{JobController, RUN_DURATION};
pub use replicaset::ReplicaSetController;
pub use statefulset::{POD_INDEX_LABEL, POD_NAME_LABEL, StatefulSetController};

pub(crate) use pods::at;

use super::runtime::Reconciler;

/// Every workload controller, in a fixed order.
pub fn controllers() -> Vec<Box<dyn Reconciler>> {
    vec![
        Box::new(DeploymentController::default()),
        Box::new(ReplicaSetController::default()),
        Box::new(JobController::default()),
        Box::new(DaemonSetController),
        Box::new(StatefulSetController),
    ]
}
