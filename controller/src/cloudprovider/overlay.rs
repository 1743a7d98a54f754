//! The overlay cloud provider (core `pkg/cloudprovider/overlay/cloudprovider.go`): every call
//! goes to the wrapped provider; `instance_types` then applies the NodeOverlay store when the
//! `NodeOverlay` gate is on. A pool the store has not evaluated yet is an error
//! ([`CloudError::UnevaluatedNodePool`]), which provisioning and disruption skip (core
//! `provisioner.go` l. 297-301, `disruption/helpers.go` l. 236-240).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{CloudError, CloudProvider, DriftReason, InstanceType, RepairPolicy, UnavailableOfferings};
use crate::apis::{EC2NodeClass, NodeClaim, NodePool};
use crate::nodeoverlay::InstanceTypeStore;

/// Decorates a provider with the NodeOverlay store (`overlay.Decorate`).
pub struct OverlayCloudProvider {
    inner: Arc<dyn CloudProvider>,
    store: Arc<InstanceTypeStore>,
    enabled: bool,
}

impl OverlayCloudProvider {
    /// `inner` with `store` applied when `enabled` (the gate).
    pub fn new(inner: Arc<dyn CloudProvider>, store: Arc<InstanceTypeStore>, enabled: bool) -> Self {
        Self { inner, store, enabled }
    }
}

impl CloudProvider for OverlayCloudProvider {
    fn create<'a>(
        &'a self,
        claim: &'a NodeClaim,
        node_class: &'a EC2NodeClass,
        instance_types: &'a [Arc<InstanceType>],
    ) -> BoxFuture<'a, Result<NodeClaim, CloudError>> {
        self.inner.create(claim, node_class, instance_types)
    }

    fn get<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<NodeClaim, CloudError>> {
        self.inner.get(provider_id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<NodeClaim>, CloudError>> {
        self.inner.list()
    }

    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
        self.inner.delete(claim)
    }

    /// cloudprovider.go l. 43-55.
    fn instance_types<'a>(
        &'a self,
        node_pool: &'a NodePool,
        node_class: &'a EC2NodeClass,
    ) -> BoxFuture<'a, Result<Vec<Arc<InstanceType>>, CloudError>> {
        Box::pin(async move {
            let types = self.inner.instance_types(node_pool, node_class).await?;
            if !self.enabled {
                return Ok(types);
            }
            self.store.apply_all(node_pool.metadata.name.as_deref().unwrap_or_default(), types)
        })
    }

    fn unavailable_offerings(&self) -> &UnavailableOfferings {
        self.inner.unavailable_offerings()
    }

    fn is_drifted<'a>(
        &'a self,
        claim: &'a NodeClaim,
        node_pool: &'a NodePool,
        node_class: &'a EC2NodeClass,
    ) -> BoxFuture<'a, Result<Option<DriftReason>, CloudError>> {
        self.inner.is_drifted(claim, node_pool, node_class)
    }

    fn repair_policies(&self) -> Vec<RepairPolicy> {
        self.inner.repair_policies()
    }
}
