//! An in-memory `CloudProvider` for the termination and interruption tests, which run before the
//! AWS provider exists: instances keyed by providerID, terminated on `delete` after a fixed
//! shutdown delay of simulated time, and a real ICE cache.

// Each test crate that includes this module uses a different subset of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dovetail_controller::apis::{EC2NodeClass, NodeClaim, NodePool};
use dovetail_controller::cloudprovider::{CloudError, CloudProvider, InstanceType, UnavailableOfferings};
use dovetail_controller::runtime::SharedClock;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

#[derive(Debug)]
struct Instance {
    claim: NodeClaim,
    /// When TerminateInstances was called.
    terminating_since: Option<Time>,
}

/// Instances by providerID.
pub struct MemoryCloud {
    clock: SharedClock,
    shutdown: Duration,
    instances: Mutex<BTreeMap<String, Instance>>,
    deletes: Mutex<Vec<String>>,
    unavailable: UnavailableOfferings,
}

impl MemoryCloud {
    /// A cloud whose instances take `shutdown` to disappear once terminated.
    pub fn new(clock: SharedClock, shutdown: Duration) -> Arc<Self> {
        Arc::new(Self {
            unavailable: UnavailableOfferings::new(clock.clone()),
            clock,
            shutdown,
            instances: Mutex::default(),
            deletes: Mutex::default(),
        })
    }

    /// Adds a running instance.
    pub fn add(&self, provider_id: &str) {
        let claim: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": ""},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"providerID": provider_id}
        }))
        .expect("a claim");
        self.instances
            .lock()
            .expect("instances")
            .insert(provider_id.to_string(), Instance { claim, terminating_since: None });
    }

    /// Every providerID `delete` was called with, in order.
    pub fn deletes(&self) -> Vec<String> {
        self.deletes.lock().expect("deletes").clone()
    }

    fn live(&self, provider_id: &str) -> Option<NodeClaim> {
        let now = self.clock.now();
        let mut instances = self.instances.lock().expect("instances");
        let gone = instances
            .get(provider_id)
            .and_then(|i| i.terminating_since.as_ref())
            .is_some_and(|since| dovetail_controller::runtime::clock::elapsed(since.0, now) >= self.shutdown);
        if gone {
            instances.remove(provider_id);
        }
        instances.get(provider_id).map(|i| i.claim.clone())
    }
}

impl CloudProvider for MemoryCloud {
    fn create<'a>(
        &'a self,
        _claim: &'a NodeClaim,
        _node_class: &'a EC2NodeClass,
        _instance_types: &'a [Arc<InstanceType>],
    ) -> BoxFuture<'a, Result<NodeClaim, CloudError>> {
        Box::pin(async { Err(CloudError::other("Unsupported", "the memory cloud does not launch")) })
    }

    fn get<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<NodeClaim, CloudError>> {
        Box::pin(async move { self.live(provider_id).ok_or_else(|| CloudError::NotFound(provider_id.to_string())) })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<NodeClaim>, CloudError>> {
        Box::pin(async move {
            let ids: Vec<String> = self.instances.lock().expect("instances").keys().cloned().collect();
            Ok(ids.iter().filter_map(|id| self.live(id)).collect())
        })
    }

    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(async move {
            let provider_id = claim.provider_id().unwrap_or_default().to_string();
            self.deletes.lock().expect("deletes").push(provider_id.clone());
            if self.live(&provider_id).is_none() {
                return Err(CloudError::NotFound(provider_id));
            }
            let now = self.clock.now();
            let mut instances = self.instances.lock().expect("instances");
            if let Some(instance) = instances.get_mut(&provider_id) {
                instance.terminating_since.get_or_insert(Time(now));
            }
            Ok(())
        })
    }

    fn instance_types<'a>(
        &'a self,
        _node_pool: &'a NodePool,
        _node_class: &'a EC2NodeClass,
    ) -> BoxFuture<'a, Result<Vec<Arc<InstanceType>>, CloudError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn unavailable_offerings(&self) -> &UnavailableOfferings {
        &self.unavailable
    }
}
