//! The `capacityreservation.capacitytype` controller (aws/karpenter-provider-aws v1.14.1
//! `pkg/controllers/capacityreservation/capacitytype/controller.go`): when the reservation a
//! `reserved` NodeClaim's instance ran in goes away (an on-demand capacity reservation that
//! expires or is cancelled), EC2 keeps the instance running as plain on-demand and stops naming
//! the reservation on it. This controller notices through the cloud provider's List (the
//! instance reads as `on-demand`) and demotes the NodeClaim and its registered Node: capacity
//! type `reserved` → `on-demand`, and the reserved-capacity labels
//! (`karpenter.k8s.aws/capacity-reservation-id`, `…/capacity-reservation-type`: aws
//! `apis/v1/doc.go` l. 39 `ReservedCapacityLabels`) removed. Consolidation and the scheduler then
//! price and treat the node as the on-demand capacity it now is.
//!
//! A singleton on a one-minute timer (l. 56-61, 102). Each run (l. 63-103) lists the provider's
//! instances, and for every NodeClaim whose providerID is among them (`syncCapacityType`,
//! l. 109-163):
//! - a claim being deleted is skipped;
//! - only a demotion to on-demand is handled (promotion to reserved is not something Karpenter
//!   supports, l. 115-119);
//! - the claim is patched when its label still says `reserved`;
//! - each Node with the claim's providerID is patched when it is not being deleted, is
//!   registered (`karpenter.sh/registered: "true"`, its labels may not be synced before) and
//!   still says `reserved` — even when the claim was demoted earlier (l. 133-161).
//!
//! A run where every failure is a conflict is retried at once (l. 96-99); other failures go
//! through controller-runtime's backoff.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::apis::{NodeClaim, labels};
use crate::runtime::reconcile::{Action, Env, Kinds, Reconciler};
use crate::state::Snapshot;

/// The controller's name, as upstream registers it (l. 53).
pub const NAME: &str = "capacityreservation.capacitytype";
/// How often it runs (l. 102).
pub const INTERVAL: Duration = Duration::from_secs(60);
/// How soon to look again while the state has not listed every kind.
const UNSYNCED_RETRY: Duration = Duration::from_secs(1);
/// controller-runtime's per-item failure backoff (5 ms doubling, at most 1000 s).
const BACKOFF_BASE: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1000);

/// An object to demote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Demotion {
    /// A NodeClaim, by name.
    NodeClaim(String),
    /// A Node, by name.
    Node(String),
}

/// The merge patch that demotes an object (l. 122-126, 152-156).
pub fn demotion_patch() -> Value {
    json!({"metadata": {"labels": {
        labels::CAPACITY_TYPE_LABEL: labels::CAPACITY_TYPE_ON_DEMAND,
        labels::CAPACITY_RESERVATION_ID_LABEL: Value::Null,
        labels::CAPACITY_RESERVATION_TYPE_LABEL: Value::Null,
    }}})
}

fn says_reserved(object_labels: &BTreeMap<String, String>) -> bool {
    object_labels.get(labels::CAPACITY_TYPE_LABEL).is_some_and(|v| v == labels::CAPACITY_TYPE_RESERVED)
}

/// What one run demotes, given the capacity type the provider reports for each providerID.
pub fn plan(snapshot: &Snapshot, cloud_types: &BTreeMap<String, String>) -> Vec<Demotion> {
    let mut out = Vec::new();
    for (name, claim) in &snapshot.node_claims {
        let Some(capacity_type) = claim.provider_id().and_then(|id| cloud_types.get(id)) else {
            continue;
        };
        if claim.metadata.deletion_timestamp.is_some() || capacity_type != labels::CAPACITY_TYPE_ON_DEMAND {
            continue;
        }
        if says_reserved(claim.labels()) {
            out.push(Demotion::NodeClaim(name.clone()));
        }
        for node in snapshot.nodes_for_node_claim(claim) {
            let registered = node.labels().get(labels::NODE_REGISTERED_LABEL).is_some_and(|v| v == "true");
            if node.metadata.deletion_timestamp.is_none() && registered && says_reserved(node.labels()) {
                out.push(Demotion::Node(node.name_any()));
            }
        }
    }
    out
}

/// The controller (see the module docs).
#[derive(Debug, Default)]
pub struct CapacityTypeController {
    failures: u32,
}

impl CapacityTypeController {
    /// A new controller.
    pub fn new() -> Self {
        Self::default()
    }

    fn backoff(&mut self) -> Action {
        let backoff = BACKOFF_BASE.saturating_mul(1 << self.failures.min(30)).min(BACKOFF_MAX);
        self.failures = self.failures.saturating_add(1);
        Action::requeue(backoff)
    }
}

impl Reconciler for CapacityTypeController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        NAME
    }

    fn watches(&self) -> Kinds {
        // A singleton on a timer (upstream `singleton.Source()`).
        Kinds::NONE
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        if !snapshot.is_synced() {
            return Ok(Action::requeue(UNSYNCED_RETRY));
        }
        let listed = match env.cloud.list().await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(controller = NAME, %error, "listing instances");
                return Ok(self.backoff());
            }
        };
        let cloud_types: BTreeMap<String, String> = listed
            .iter()
            .filter_map(|c| Some((c.provider_id()?.to_owned(), c.labels().get(labels::CAPACITY_TYPE_LABEL)?.clone())))
            .collect();
        let patch = demotion_patch();
        let (mut conflicts, mut others) = (0, 0);
        let mut updated = Vec::new();
        for demotion in plan(snapshot, &cloud_types) {
            let result = match &demotion {
                Demotion::NodeClaim(name) => Api::<NodeClaim>::all(env.kube.clone())
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| name),
                Demotion::Node(name) => Api::<Node>::all(env.kube.clone())
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| name),
            };
            match result {
                Ok(name) => updated.push(name.clone()),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(kube::Error::Api(status)) if status.code == 409 => conflicts += 1,
                Err(error) => {
                    tracing::warn!(controller = NAME, ?demotion, %error, "patching capacity type");
                    others += 1;
                }
            }
        }
        if !updated.is_empty() {
            tracing::info!(controller = NAME, objects = ?updated, "updated capacity type for nodeclaims");
        }
        if others > 0 {
            return Ok(self.backoff());
        }
        self.failures = 0;
        if conflicts > 0 {
            return Ok(Action::requeue(Duration::ZERO));
        }
        Ok(Action::requeue(INTERVAL))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::{NodeClaimSpec, NodeClaimStatus, NodeClassReference};
    use k8s_openapi::api::core::v1::NodeSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use std::sync::Arc;

    const PROVIDER_ID: &str = "aws:///us-east-1a/i-0123456789abcdef0";

    fn reserved_labels() -> BTreeMap<String, String> {
        BTreeMap::from([
            (labels::CAPACITY_TYPE_LABEL.to_owned(), labels::CAPACITY_TYPE_RESERVED.to_owned()),
            (labels::CAPACITY_RESERVATION_ID_LABEL.to_owned(), "cr-foo".to_owned()),
            (labels::CAPACITY_RESERVATION_TYPE_LABEL.to_owned(), "default".to_owned()),
            (labels::NODE_REGISTERED_LABEL.to_owned(), "true".to_owned()),
        ])
    }

    fn claim(claim_labels: BTreeMap<String, String>) -> Arc<NodeClaim> {
        Arc::new(NodeClaim {
            metadata: ObjectMeta { name: Some("c".into()), labels: Some(claim_labels), ..ObjectMeta::default() },
            spec: NodeClaimSpec {
                requirements: Vec::new(),
                resources: None,
                taints: None,
                startup_taints: None,
                node_class_ref: NodeClassReference {
                    group: labels::AWS_GROUP.into(),
                    kind: "EC2NodeClass".into(),
                    name: "default".into(),
                },
                expire_after: None,
                termination_grace_period: None,
            },
            status: Some(NodeClaimStatus { provider_id: Some(PROVIDER_ID.into()), ..NodeClaimStatus::default() }),
        })
    }

    fn node(node_labels: BTreeMap<String, String>) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta { name: Some("n".into()), labels: Some(node_labels), ..ObjectMeta::default() },
            spec: Some(NodeSpec { provider_id: Some(PROVIDER_ID.into()), ..NodeSpec::default() }),
            status: None,
        })
    }

    fn snapshot(claim: Arc<NodeClaim>, node: Option<Arc<Node>>) -> Snapshot {
        let mut s = Snapshot::default();
        s.node_claims.insert("c".into(), claim);
        if let Some(n) = node {
            s.nodes.insert("n".into(), n);
        }
        s
    }

    fn cloud(capacity_type: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(PROVIDER_ID.to_owned(), capacity_type.to_owned())])
    }

    #[test]
    fn claims_and_nodes_are_demoted_only_once_the_instance_reads_on_demand() {
        let s = snapshot(claim(reserved_labels()), Some(node(reserved_labels())));
        assert!(plan(&s, &cloud("reserved")).is_empty(), "still under its reservation");
        assert_eq!(plan(&s, &cloud("on-demand")), [Demotion::NodeClaim("c".into()), Demotion::Node("n".into())]);
        assert!(plan(&s, &BTreeMap::new()).is_empty(), "an instance the provider does not list");
    }

    #[test]
    fn a_node_is_demoted_even_when_its_claim_already_was() {
        let mut demoted = reserved_labels();
        demoted.insert(labels::CAPACITY_TYPE_LABEL.to_owned(), "on-demand".to_owned());
        let s = snapshot(claim(demoted), Some(node(reserved_labels())));
        assert_eq!(plan(&s, &cloud("on-demand")), [Demotion::Node("n".into())]);
    }

    #[test]
    fn deleting_claims_and_unregistered_or_deleting_nodes_are_left_alone() {
        let mut deleting = (*claim(reserved_labels())).clone();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(plan(&snapshot(Arc::new(deleting), Some(node(reserved_labels()))), &cloud("on-demand")).is_empty());
        let mut unregistered = reserved_labels();
        unregistered.remove(labels::NODE_REGISTERED_LABEL);
        let s = snapshot(claim(reserved_labels()), Some(node(unregistered)));
        assert_eq!(plan(&s, &cloud("on-demand")), [Demotion::NodeClaim("c".into())]);
        let mut gone = (*node(reserved_labels())).clone();
        gone.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let s = snapshot(claim(reserved_labels()), Some(Arc::new(gone)));
        assert_eq!(plan(&s, &cloud("on-demand")), [Demotion::NodeClaim("c".into())]);
    }

    #[test]
    fn the_patch_sets_on_demand_and_drops_the_reservation_labels() {
        let patch = demotion_patch();
        let l = &patch["metadata"]["labels"];
        assert_eq!(l[labels::CAPACITY_TYPE_LABEL], "on-demand");
        assert!(l[labels::CAPACITY_RESERVATION_ID_LABEL].is_null());
        assert!(l[labels::CAPACITY_RESERVATION_TYPE_LABEL].is_null());
        assert!(l.get(labels::CAPACITY_RESERVATION_INTERRUPTIBLE_LABEL).is_none(), "not a ReservedCapacityLabel");
    }
}
