//! The `capacityreservation.expiration` controller (aws/karpenter-provider-aws v1.14.1
//! `pkg/controllers/capacityreservation/expiration/controller.go`): NodeClaims on a capacity
//! block that is about to end are deleted ahead of EC2. A block is `expiring` from 40 minutes
//! before its end ([`super::capacity_reservations::EXPIRATION_PERIOD`], aws
//! `apis/v1/ec2nodeclass_status.go` `capacityReservationExpirationPeriod`); EC2 starts reclaiming
//! its instances 30 minutes before the end, so Karpenter's drain gets a ten-minute head start,
//! "inline with the interruption notification emitted by EC2" (l. 47-49).
//!
//! A singleton on a one-minute timer (l. 127, 133). Each run (l. 75-128):
//! - the reservation ids named by the managed NodeClaims' `karpenter.k8s.aws/capacity-reservation-id`
//!   label are looked up by id through the capacity reservation provider
//!   ([`super::capacity_reservations::resolve`]: `state=active`, expired ones dropped), which also
//!   syncs the provider's availability counts, as upstream's `List` does;
//! - every managed claim whose reservation came back `expiring` is deleted (a gone claim is not an
//!   error); the drain then runs as for any other deleted claim.
//!
//! Deviations, neither observable in the cluster: a claim already being deleted is not deleted
//! again (upstream re-issues a no-op DELETE each minute), and the provider's one-minute query
//! cache (`provider.go` l. 77-79) is not modelled, so the lookup is sent each run.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

use crate::apis::ec2nodeclass::{CapacityReservationSelectorTerm, CapacityReservationState};
use crate::apis::{NodeClaim, labels};
use crate::cloudprovider::aws::AwsCloudProvider;
use crate::cloudprovider::aws::capacity_reservations;
use crate::cloudprovider::aws::tagging::is_managed;
use crate::runtime::reconcile::{Action, Env, Kinds, Reconciler};
use crate::state::Snapshot;

/// The controller's name, as upstream registers it (l. 72).
pub const NAME: &str = "capacityreservation.expiration";
/// How often it runs (l. 127).
pub const INTERVAL: Duration = Duration::from_secs(60);
/// How soon to look again while the state has not listed every kind.
const UNSYNCED_RETRY: Duration = Duration::from_secs(1);
/// controller-runtime's per-item failure backoff (5 ms doubling, at most 1000 s).
const BACKOFF_BASE: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1000);

/// The reservation ids the managed claims run in, as selector terms by id (l. 81-84).
pub fn reservation_terms(snapshot: &Snapshot) -> Vec<CapacityReservationSelectorTerm> {
    let ids: BTreeSet<&String> = snapshot
        .node_claims
        .values()
        .filter(|c| is_managed(c))
        .filter_map(|c| c.labels().get(labels::CAPACITY_RESERVATION_ID_LABEL))
        .collect();
    ids.into_iter().map(|id| CapacityReservationSelectorTerm { id: Some(id.clone()), ..Default::default() }).collect()
}

/// The managed claims on an expiring reservation that are not already being deleted (l. 96-102).
pub fn to_delete<'a>(snapshot: &'a Snapshot, expiring: &BTreeSet<String>) -> Vec<&'a NodeClaim> {
    snapshot
        .node_claims
        .values()
        .filter(|c| is_managed(c) && c.metadata.deletion_timestamp.is_none())
        .filter(|c| c.labels().get(labels::CAPACITY_RESERVATION_ID_LABEL).is_some_and(|id| expiring.contains(id)))
        .map(AsRef::as_ref)
        .collect()
}

/// The controller (see the module docs).
pub struct ReservationExpirationController {
    aws: Arc<AwsCloudProvider>,
    failures: u32,
}

impl ReservationExpirationController {
    /// A controller looking reservations up through `aws`.
    pub fn new(aws: Arc<AwsCloudProvider>) -> Self {
        Self { aws, failures: 0 }
    }

    fn backoff(&mut self) -> Action {
        let backoff = BACKOFF_BASE.saturating_mul(1 << self.failures.min(30)).min(BACKOFF_MAX);
        self.failures = self.failures.saturating_add(1);
        Action::requeue(backoff)
    }
}

impl Reconciler for ReservationExpirationController {
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
        let terms = reservation_terms(snapshot);
        if terms.is_empty() {
            self.failures = 0;
            return Ok(Action::requeue(INTERVAL));
        }
        let now = std::time::SystemTime::from(env.clock.now());
        let found = match capacity_reservations::resolve(&self.aws.ec2, &terms, &self.aws.reservations, now).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(controller = NAME, %error, "getting capacity reservations");
                return Ok(self.backoff());
            }
        };
        let expiring: BTreeSet<String> =
            found.into_iter().filter(|r| r.state == Some(CapacityReservationState::Expiring)).map(|r| r.id).collect();
        let api: Api<NodeClaim> = Api::all(env.kube.clone());
        let mut failed = false;
        for claim in to_delete(snapshot, &expiring) {
            let name = claim.name_any();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {
                    let reservation = claim.labels().get(labels::CAPACITY_RESERVATION_ID_LABEL).cloned();
                    tracing::info!(
                        controller = NAME,
                        nodeclaim = %name,
                        capacity_reservation_id = reservation.unwrap_or_default(),
                        "initiating delete for capacity block expiration"
                    );
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => {
                    tracing::warn!(controller = NAME, nodeclaim = %name, %error, "deleting nodeclaims");
                    failed = true;
                }
            }
        }
        if failed {
            return Ok(self.backoff());
        }
        self.failures = 0;
        Ok(Action::requeue(INTERVAL))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::{NodeClaimSpec, NodeClassReference};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use std::collections::BTreeMap;

    fn claim(name: &str, reservation: Option<&str>) -> Arc<NodeClaim> {
        let mut claim_labels = BTreeMap::new();
        if let Some(id) = reservation {
            claim_labels.insert(labels::CAPACITY_RESERVATION_ID_LABEL.to_owned(), id.to_owned());
        }
        Arc::new(NodeClaim {
            metadata: ObjectMeta { name: Some(name.into()), labels: Some(claim_labels), ..ObjectMeta::default() },
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
            status: None,
        })
    }

    fn snapshot(claims: Vec<Arc<NodeClaim>>) -> Snapshot {
        let mut s = Snapshot::default();
        for c in claims {
            s.node_claims.insert(c.name_any(), c);
        }
        s
    }

    #[test]
    fn reservations_are_looked_up_by_the_ids_claims_run_in() {
        let s = snapshot(vec![
            claim("a", Some("cr-0000000000000000b")),
            claim("b", Some("cr-0000000000000000a")),
            claim("c", Some("cr-0000000000000000a")),
            claim("d", None),
        ]);
        let ids: Vec<Option<String>> = reservation_terms(&s).into_iter().map(|t| t.id).collect();
        assert_eq!(ids, [Some("cr-0000000000000000a".into()), Some("cr-0000000000000000b".into())]);
        assert!(reservation_terms(&snapshot(vec![claim("d", None)])).is_empty(), "no lookup without reservations");
    }

    #[test]
    fn only_live_claims_on_expiring_reservations_are_deleted() {
        let mut deleting = (*claim("c", Some("cr-0000000000000000a"))).clone();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let s = snapshot(vec![
            claim("a", Some("cr-0000000000000000a")),
            claim("b", Some("cr-0000000000000000b")),
            Arc::new(deleting),
            claim("d", None),
        ]);
        let expiring: BTreeSet<String> = ["cr-0000000000000000a".to_owned()].into();
        let names: Vec<String> = to_delete(&s, &expiring).into_iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["a"]);
    }
}
