//! Drift reasons (core `cloudprovider.DriftReason` and the reasons core and the AWS provider
//! define). The reason becomes the `Drifted` condition's reason and message on a NodeClaim, and
//! the `type` label of `karpenter_nodeclaims_drifted_total`.

use std::fmt;

/// Why a NodeClaim no longer matches what its NodePool and node class would launch today.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriftReason(&'static str);

impl DriftReason {
    /// Core: the NodePool template hash differs from the claim's (same hash version).
    pub const NODE_POOL_DRIFTED: Self = Self("NodePoolDrifted");
    /// Core: the claim's labels no longer satisfy the NodePool's requirements.
    pub const REQUIREMENTS_DRIFTED: Self = Self("RequirementsDrifted");
    /// Core: the claim's instance type is gone, or has no offering compatible with the claim.
    pub const INSTANCE_TYPE_NOT_FOUND: Self = Self("InstanceTypeNotFound");
    /// AWS: the EC2NodeClass hash differs from the claim's (same hash version).
    pub const NODE_CLASS_DRIFT: Self = Self("NodeClassDrift");
    /// AWS: the instance's image is not the one the node class resolves for its type today.
    pub const AMI_DRIFT: Self = Self("AMIDrift");
    /// AWS: the instance's security groups differ from the node class's resolved ones.
    pub const SECURITY_GROUP_DRIFT: Self = Self("SecurityGroupDrift");
    /// AWS: the instance's subnet is not among the node class's resolved subnets.
    pub const SUBNET_DRIFT: Self = Self("SubnetDrift");

    /// The API spelling (`AMIDrift`).
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for DriftReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
