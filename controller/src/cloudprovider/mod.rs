//! The cloud provider as the rest of the controller sees it (core's `cloudprovider.CloudProvider`):
//! instance types with priced offerings ([`types`]), launching a NodeClaim's instance, reading and
//! deleting instances, and the unavailable-offerings (ICE) cache ([`unavailable`]). The AWS
//! implementation on `aws-sdk-ec2` lives in [`aws`].

pub mod aws;
pub mod drift;
pub mod error;
pub mod fake;
pub mod overlay;
pub mod repair;
pub mod types;
pub mod unavailable;

use std::sync::Arc;

use futures::future::BoxFuture;

pub use drift::DriftReason;
pub use error::CloudError;
pub use repair::RepairPolicy;
pub use types::{InstanceType, InstanceTypeFacts, KubeletOverrides, Offering, Overhead};
pub use unavailable::UnavailableOfferings;

use crate::apis::{EC2NodeClass, NodeClaim, NodePool};

/// What the core controllers need from a cloud (karpenter core `cloudprovider.CloudProvider`).
///
/// Methods return boxed futures so the trait is object-safe: the operator holds an
/// `Arc<dyn CloudProvider>` and unit tests substitute a fake.
pub trait CloudProvider: Send + Sync + 'static {
    /// Launches an instance for `claim` from the given (already filtered, cheapest-first)
    /// instance types and returns the claim with `status.providerID`, `imageID`, `capacity`,
    /// `allocatable` and the resolved single-value labels (instance type, zone, capacity type)
    /// filled in. All-ICE failures return [`CloudError::InsufficientCapacity`].
    fn create<'a>(
        &'a self,
        claim: &'a NodeClaim,
        node_class: &'a EC2NodeClass,
        instance_types: &'a [Arc<InstanceType>],
    ) -> BoxFuture<'a, Result<NodeClaim, CloudError>>;

    /// The instance behind `provider_id`, as a NodeClaim (labels, providerID, and a
    /// deletionTimestamp when the instance is shutting down). [`CloudError::NotFound`] when gone.
    fn get<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<NodeClaim, CloudError>>;

    /// Every instance this cluster's controller launched (tagged), as NodeClaims carrying
    /// providerID and `metadata.creationTimestamp` = launch time.
    fn list(&self) -> BoxFuture<'_, Result<Vec<NodeClaim>, CloudError>>;

    /// Terminates the instance behind `claim`. [`CloudError::NotFound`] once it is gone.
    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>>;

    /// The instance types `node_pool` may launch through `node_class`, with offerings whose
    /// `available` reflects prices, subnets and the ICE cache.
    fn instance_types<'a>(
        &'a self,
        node_pool: &'a NodePool,
        node_class: &'a EC2NodeClass,
    ) -> BoxFuture<'a, Result<Vec<Arc<InstanceType>>, CloudError>>;

    /// The shared ICE cache (interruption marks spot offerings unavailable through it).
    fn unavailable_offerings(&self) -> &UnavailableOfferings;

    /// Whether the launched `claim` has drifted from what `node_class` would launch today, and
    /// why (core `CloudProvider.IsDrifted`; on AWS: node class hash, AMI, security groups,
    /// subnet). `None` when it has not. The default is a provider with no drift of its own.
    fn is_drifted<'a>(
        &'a self,
        claim: &'a NodeClaim,
        node_pool: &'a NodePool,
        node_class: &'a EC2NodeClass,
    ) -> BoxFuture<'a, Result<Option<DriftReason>, CloudError>> {
        let _ = (claim, node_pool, node_class);
        Box::pin(async { Ok(None) })
    }

    /// The Node conditions that make a node unhealthy and how long each is tolerated (core
    /// `CloudProvider.RepairPolicies`). NodeRepair runs only when this is non-empty and the
    /// `NodeRepair` gate is on (core `pkg/controllers/controllers.go` l. 178). The default is
    /// a provider with none.
    fn repair_policies(&self) -> Vec<RepairPolicy> {
        Vec::new()
    }
}
