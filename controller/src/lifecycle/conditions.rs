//! NodeClaim condition types and the status patches that write them.

use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::apis::NodeClaim;
use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::runtime::SharedClock;

/// The instance exists (CreateFleet returned it).
pub const LAUNCHED: &str = "Launched";
/// A Node with the claim's providerID joined and was synced.
pub const REGISTERED: &str = "Registered";
/// The Node is Ready, startup taints gone, resources reported.
pub const INITIALIZED: &str = "Initialized";
/// Termination has asked the cloud to terminate the instance.
pub const INSTANCE_TERMINATING: &str = "InstanceTerminating";

/// Sets one condition on a copy of `claim` and writes the whole condition list (merge patch on
/// the status subresource, guarded by resourceVersion so a concurrent writer wins cleanly).
///
/// # Errors
/// API errors, including 409 when the claim changed meanwhile (the caller retries next pass).
#[allow(clippy::too_many_arguments)] // one call shape for every condition write
pub async fn set_condition(
    client: &Client,
    clock: &SharedClock,
    claim: &NodeClaim,
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    extra_status: serde_json::Value,
) -> Result<NodeClaim, kube::Error> {
    let mut updated = claim.clone();
    updated.set_condition(type_, status, reason, message, &clock.now_time());
    let mut status_patch = json!({"conditions": updated.conditions()});
    if let (Some(target), Some(extra)) = (status_patch.as_object_mut(), extra_status.as_object()) {
        for (k, v) in extra {
            target.insert(k.clone(), v.clone());
        }
    }
    let patch = json!({
        "metadata": {"resourceVersion": claim.metadata.resource_version},
        "status": status_patch,
    });
    let api: Api<NodeClaim> = Api::all(client.clone());
    api.patch_status(claim.metadata.name.as_deref().unwrap_or_default(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
}
