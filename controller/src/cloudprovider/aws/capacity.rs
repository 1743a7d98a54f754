//! The `providers.instancetype.capacity` controller (aws
//! `pkg/controllers/providers/instancetype/capacity/controller.go`): when a managed Node
//! registers, it records the memory capacity the Node reports for its instance type in the AWS
//! provider's discovered-capacity cache ([`super::discovered_capacity`]), so new nodes of that
//! type are planned with what the kubelet really offers rather than the
//! `VM_MEMORY_OVERHEAD_PERCENT` estimate.
//!
//! Upstream reconciles a Node once per registration: its predicates pass an update only when the
//! `karpenter.sh/registered` label goes from absent to `true`, and a create only when it is
//! already `true` (which at start-up replays every registered Node into the empty cache),
//! never a delete (`controller.go:93-106`). This controller, which sees the whole state each
//! time, keeps the Nodes it has handled and handles each registered one once, all of them after
//! a restart. Per Node (`controller.go:70-88`): unmanaged (no EC2NodeClass label, core
//! `utils/node.IsManaged`) is skipped; no NodeClaim with its providerID is ignored (core
//! `IgnoreNodeClaimNotFoundError`); more than one, or a missing EC2NodeClass, is an error that is
//! retried with `reasonable.RateLimiter`'s per-item backoff (100 ms doubling to 1 min,
//! `controller.go:109`); otherwise the provider records the Node
//! (`UpdateInstanceTypeCapacityFromNode`), which ignores a Node whose image is not the class's
//! current AMI for its type.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;

use crate::apis::labels;
use crate::cloudprovider::aws::AwsCloudProvider;
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::state::Snapshot;

/// The controller's name, as upstream registers it.
pub const NAME: &str = "providers.instancetype.capacity";
/// `reasonable.RateLimiter`'s per-item failure backoff: 100 ms, doubling, at most 1 minute.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How soon to look again while the state has not listed every kind (upstream reads the
/// NodeClaim and EC2NodeClass from synced informer caches).
const UNSYNCED_RETRY: Duration = Duration::from_secs(1);

/// What handling one Node came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not a registered Node of an EC2NodeClass: nothing to do (the predicates filter it).
    Skipped,
    /// Handled (recorded, or ignored as upstream ignores it): not looked at again.
    Done,
    /// Failed (upstream returns the error): retried with backoff.
    Failed(String),
}

/// The controller (see the module docs).
pub struct CapacityController {
    aws: Arc<AwsCloudProvider>,
    /// Nodes (by uid, else name) handled since they registered or since this controller started.
    done: BTreeSet<String>,
    /// Consecutive reconciles with a failure, for the backoff.
    failures: u32,
}

impl CapacityController {
    /// A controller recording into `aws`'s discovered-capacity cache.
    pub fn new(aws: Arc<AwsCloudProvider>) -> Self {
        Self { aws, done: BTreeSet::new(), failures: 0 }
    }
}

/// The key a Node is remembered by: its uid, so a Node re-created under the same name is new.
fn node_key(name: &str, node: &Node) -> String {
    node.metadata.uid.clone().unwrap_or_else(|| name.to_owned())
}

/// Handles one Node as upstream's `Reconcile` does (`controller.go:70-88`).
pub fn handle(aws: &AwsCloudProvider, snapshot: &Snapshot, node: &Node) -> Outcome {
    let node_labels = node.metadata.labels.as_ref();
    let managed = node_labels.is_some_and(|l| l.contains_key(labels::EC2_NODE_CLASS_LABEL));
    let registered = node_labels.and_then(|l| l.get(labels::NODE_REGISTERED_LABEL)).is_some_and(|v| v == "true");
    if !managed || !registered {
        return Outcome::Skipped;
    }
    let provider_id = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).unwrap_or_default();
    let claims: Vec<_> = snapshot
        .node_claims
        .values()
        .filter(|c| !provider_id.is_empty() && c.provider_id() == Some(provider_id))
        .collect();
    let claim = match claims.as_slice() {
        [] => return Outcome::Done,
        [claim] => claim,
        _ => return Outcome::Failed(format!("{} NodeClaims have providerID {provider_id:?}", claims.len())),
    };
    let class_name = &claim.spec.node_class_ref.name;
    let Some(class) = snapshot.node_classes.get(class_name) else {
        return Outcome::Failed(format!("failed to get ec2nodeclass {class_name:?}"));
    };
    aws.update_instance_type_capacity_from_node(node, claim, class);
    Outcome::Done
}

impl Reconciler for CapacityController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        NAME
    }

    fn watches(&self) -> Kinds {
        Kinds::of(&[Kind::Node])
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, _env: &Env) -> Result<Action, Self::Error> {
        if !snapshot.is_synced() {
            return Ok(Action::requeue(UNSYNCED_RETRY));
        }
        let present: BTreeSet<String> = snapshot.nodes.iter().map(|(name, node)| node_key(name, node)).collect();
        self.done.retain(|key| present.contains(key));
        let mut failed = false;
        for (name, node) in &snapshot.nodes {
            let key = node_key(name, node);
            if self.done.contains(&key) {
                continue;
            }
            match handle(&self.aws, snapshot, node) {
                Outcome::Skipped => {}
                Outcome::Done => {
                    self.done.insert(key);
                }
                Outcome::Failed(error) => {
                    tracing::warn!(controller = NAME, node = %name, %error, "updating discovered capacity cache");
                    failed = true;
                }
            }
        }
        if !failed {
            self.failures = 0;
            return Ok(Action::await_change());
        }
        let backoff = BACKOFF_BASE.saturating_mul(1 << self.failures.min(20)).min(BACKOFF_MAX);
        self.failures = self.failures.saturating_add(1);
        Ok(Action::requeue(backoff))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}
