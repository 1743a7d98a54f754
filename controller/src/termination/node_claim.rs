//! The NodeClaim side of termination (core `nodeclaim/lifecycle` finalize): stamp the
//! TerminationGracePeriod deadline, delete the claim's Node(s) and wait until they are gone (the
//! Node finalizer drains them), terminate the instance and wait for NotFound, then remove the
//! claim's `karpenter.sh/termination` finalizer.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::{InstanceState, Termination, remove_finalizer};
use crate::apis::NodeClaim;
use crate::apis::condition::StatusConditions;
use crate::apis::labels::NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION;
use crate::lifecycle::conditions::REGISTERED;
use crate::runtime::clock::add;
use crate::runtime::{Event, EventType};
use crate::state::Snapshot;

/// The claim's termination deadline: `deletionTimestamp + spec.terminationGracePeriod`, or
/// `None` without a TGP (drain may then take for ever) or before deletion.
pub fn termination_deadline(claim: &NodeClaim) -> Option<jiff::Timestamp> {
    let deleted = claim.metadata.deletion_timestamp.as_ref()?;
    let grace = claim.spec.termination_grace_period.as_ref()?;
    Some(add(deleted.0, grace.duration()))
}

/// The deadline recorded on the claim (`karpenter.sh/nodeclaim-termination-timestamp`, RFC 3339),
/// which the Node side reads; unparseable values count as absent.
pub fn recorded_deadline(claim: &NodeClaim) -> Option<jiff::Timestamp> {
    claim.annotations().get(NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION)?.parse().ok()
}

/// The deadline formatted as Karpenter writes it (RFC 3339, seconds).
pub fn format_deadline(deadline: jiff::Timestamp) -> String {
    deadline.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl Termination {
    /// One step of a deleting claim's finalizer; returns when to look again (`None`: on the next
    /// change).
    pub(super) async fn finalize_node_claim(&self, snapshot: &Snapshot, claim: &NodeClaim) -> Option<Duration> {
        let name = claim.name_any();
        // 1. Record the TGP deadline once, so the Node side (and a restarted controller) sees it.
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let stamped = || self.stamped.lock().unwrap_or_else(|e| e.into_inner()).contains(&uid);
        if let Some(deadline) = termination_deadline(claim)
            && !claim.annotations().contains_key(NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION)
            && !stamped()
        {
            let stamp = format_deadline(deadline);
            let patch = json!({"metadata": {"annotations": {NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION: stamp}}});
            let api: Api<NodeClaim> = Api::all(self.client.clone());
            return match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {
                    self.stamped.lock().unwrap_or_else(|e| e.into_inner()).insert(uid);
                    self.events.publish(
                        Event::about(
                            claim,
                            EventType::Warning,
                            "TerminationGracePeriodExpiring",
                            format!("All pods will be deleted by {stamp}"),
                        )
                        .deduped_by_name(),
                    );
                    None
                }
                Err(error) => {
                    tracing::debug!(nodeclaim = %name, %error, "recording termination timestamp (will retry)");
                    Some(super::DRAIN_REQUEUE)
                }
            };
        }
        // 2. A registered claim's Node(s) go first, and their own finalizer drains them.
        if claim.is_condition_true(REGISTERED) {
            let nodes = snapshot.nodes_for_node_claim(claim);
            if !nodes.is_empty() {
                let api: Api<Node> = Api::all(self.client.clone());
                for node in nodes.iter().filter(|n| n.metadata.deletion_timestamp.is_none()) {
                    match api.delete(&node.name_any(), &DeleteParams::default()).await {
                        Ok(_) => tracing::info!(nodeclaim = %name, node = %node.name_any(), "deleting node"),
                        Err(error) => tracing::debug!(node = %node.name_any(), %error, "deleting node (will retry)"),
                    }
                }
                // Woken by the Node's deletion; the idle requeue is the safety net.
                return None;
            }
        }
        // 3–4. Terminate the instance and wait for the cloud to forget it.
        if let InstanceState::Terminating(after) = self.ensure_terminated(claim).await {
            return Some(after);
        }
        // 5. Release the claim.
        match remove_finalizer(&self.client, claim).await {
            Ok(()) => {
                self.stamped.lock().unwrap_or_else(|e| e.into_inner()).remove(&uid);
                tracing::info!(nodeclaim = %name, "deleted nodeclaim");
                None
            }
            Err(error) => {
                tracing::debug!(nodeclaim = %name, %error, "removing finalizer (will retry)");
                Some(super::DRAIN_REQUEUE)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn claim(tgp: Option<&str>) -> NodeClaim {
        let mut spec = json!({"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}});
        if let Some(tgp) = tgp {
            spec["terminationGracePeriod"] = json!(tgp);
        }
        serde_json::from_value(
            json!({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"}, "spec": spec}),
        )
        .expect("claim")
    }

    #[test]
    fn deadline_is_deletion_plus_termination_grace_period() {
        let mut c = claim(Some("5m"));
        assert_eq!(termination_deadline(&c), None, "not deleting yet");
        c.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::from_second(1_000).unwrap()));
        let deadline = termination_deadline(&c).expect("deadline");
        assert_eq!(deadline, jiff::Timestamp::from_second(1_300).unwrap());
        assert_eq!(format_deadline(deadline), "1970-01-01T00:21:40Z");
        c.metadata.annotations =
            Some([(NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION.to_string(), format_deadline(deadline))].into());
        assert_eq!(recorded_deadline(&c), Some(deadline));
    }

    #[test]
    fn no_termination_grace_period_means_no_deadline() {
        let mut c = claim(None);
        c.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::from_second(1_000).unwrap()));
        assert_eq!(termination_deadline(&c), None);
        assert_eq!(recorded_deadline(&c), None);
    }
}
