//! Repair policies (core `cloudprovider.RepairPolicy`, kubernetes-sigs/karpenter
//! `pkg/cloudprovider/types.go` l. 62–70): which Node conditions mean a node is broken, and how
//! long the cloud provider tolerates each before the NodeRepair controller
//! (`crate::node_health`) replaces the node. The list belongs to the cloud provider, not to the
//! user: on AWS it is [`aws_repair_policies`].

use std::time::Duration;

/// One unhealthy Node condition and its toleration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairPolicy {
    /// The condition's `type` (`Ready`, `KernelReady`, ...).
    pub condition_type: String,
    /// The condition's `status` that means unhealthy (`False`, `Unknown`, `True`).
    pub condition_status: String,
    /// How long the condition must have held (since its `lastTransitionTime`) before the node
    /// is forcefully replaced.
    pub toleration: Duration,
}

impl RepairPolicy {
    /// A policy for `condition_type` = `condition_status`, tolerated for `toleration`.
    pub fn new(condition_type: &str, condition_status: &str, toleration: Duration) -> Self {
        Self { condition_type: condition_type.to_owned(), condition_status: condition_status.to_owned(), toleration }
    }
}

const MINUTE: Duration = Duration::from_secs(60);

/// The AWS provider's policies, as aws/karpenter-provider-aws v1.14.1 returns them
/// (`pkg/cloudprovider/cloudprovider.go` l. 305–346, `RepairPolicies`): the kubelet's `Ready`
/// False or Unknown for 30 minutes, and the EKS node monitoring agent's conditions
/// (`AcceleratedHardwareReady` 10 minutes, the others 30).
pub fn aws_repair_policies() -> Vec<RepairPolicy> {
    vec![
        RepairPolicy::new("Ready", "False", 30 * MINUTE),
        RepairPolicy::new("Ready", "Unknown", 30 * MINUTE),
        RepairPolicy::new("AcceleratedHardwareReady", "False", 10 * MINUTE),
        RepairPolicy::new("StorageReady", "False", 30 * MINUTE),
        RepairPolicy::new("NetworkingReady", "False", 30 * MINUTE),
        RepairPolicy::new("KernelReady", "False", 30 * MINUTE),
        RepairPolicy::new("ContainerRuntimeReady", "False", 30 * MINUTE),
    ]
}

/// Core's fake cloud provider policy (`pkg/cloudprovider/fake/cloudprovider.go` l. 104–110):
/// `BadNode` False for 30 minutes. The ported upstream unit cases run against it.
pub fn fake_repair_policies() -> Vec<RepairPolicy> {
    vec![RepairPolicy::new("BadNode", "False", 30 * MINUTE)]
}
