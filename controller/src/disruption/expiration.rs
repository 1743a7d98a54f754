//! Expiration (core `nodeclaim/expiration`, karpenter-behaviour.md §5.12): a NodeClaim older
//! than its `spec.expireAfter` (copied from the NodePool template at creation) is deleted. The
//! deletion is forceful: no budget, no replacement spun up first, and `karpenter.sh/do-not-disrupt`
//! does not stop it. The drain that follows (termination) still honours PodDisruptionBudgets until
//! the claim's `terminationGracePeriod` runs out, so a node lives at most expireAfter + TGP.
//!
//! The controller wakes exactly at the next expiry, computed with the injected clock, and on every
//! change (a new claim may expire sooner). Each expiry publishes a `DisruptionTerminating` event on
//! the claim (and its Node) and counts `karpenter_nodeclaims_disrupted_total{reason="expired"}`.

use std::collections::BTreeSet;
use std::time::Duration;

use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

use crate::apis::NodeClaim;
use crate::runtime::clock::{add, elapsed};
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::runtime::{Event, EventType};
use crate::state::Snapshot;

/// The `reason` label of the disrupted counter for expirations (core `metrics.ExpiredReason`).
pub const EXPIRED_REASON: &str = "expired";
/// The event reason of a disruption that deletes a claim (core `events.DisruptionTerminating`).
pub const DISRUPTION_TERMINATING: &str = "DisruptionTerminating";
/// The longest the loop sleeps with nothing expiring (a safety net, not a behaviour).
pub const IDLE: Duration = Duration::from_secs(3600);
/// A failed delete is tried again after this long.
pub const RETRY: Duration = Duration::from_secs(1);

/// When `claim` expires: `creationTimestamp + spec.expireAfter`. `None` for `expireAfter: Never`
/// or a claim the API server has not stamped with a creation time yet.
pub fn expiry(claim: &NodeClaim) -> Option<jiff::Timestamp> {
    let created = claim.metadata.creation_timestamp.as_ref()?;
    let lifetime = claim.spec.expire_after().duration()?;
    Some(add(created.0, lifetime))
}

/// Whether `claim` is expired at `now` (core: `!now.Before(expirationTime)`).
pub fn is_expired(claim: &NodeClaim, now: jiff::Timestamp) -> bool {
    expiry(claim).is_some_and(|at| now >= at)
}

/// The expiration controller, a [`Reconciler`].
#[derive(Debug, Default)]
pub struct Expiration {
    /// UIDs of claims this controller deleted, so a pass that runs before the watch shows the
    /// deletionTimestamp does not count (or announce) the same expiry twice.
    expired: BTreeSet<String>,
}

impl Reconciler for Expiration {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "nodeclaim.expiration"
    }

    fn watches(&self) -> Kinds {
        // A claim's expiry is in its own spec.
        Kinds::of(&[Kind::NodeClaim])
    }

    /// A pass on every claim change and exactly at the next expiry.
    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        Ok(Action::requeue(self.pass(snapshot, env).await))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

impl Expiration {
    /// An expiration controller that has expired nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Deletes every expired claim; returns how long until the next one expires.
    pub async fn pass(&mut self, snapshot: &Snapshot, env: &Env) -> Duration {
        if !snapshot.is_synced() {
            return RETRY;
        }
        let live = snapshot.live_claim_uids();
        self.expired.retain(|uid| live.contains(uid));
        let now = env.clock.now();
        let mut next = IDLE;
        for claim in snapshot.node_claims.values() {
            let uid = claim.metadata.uid.clone().unwrap_or_default();
            if claim.metadata.deletion_timestamp.is_some() || self.expired.contains(&uid) {
                continue;
            }
            let Some(at) = expiry(claim) else { continue };
            if now < at {
                next = next.min(elapsed(now, at));
                continue;
            }
            if expire(env, snapshot, claim).await {
                self.expired.insert(uid);
            } else {
                next = next.min(RETRY);
            }
        }
        next
    }
}

/// Deletes an expired claim, then announces and counts it; returns false when the delete
/// failed (NotFound counts as done).
async fn expire(env: &Env, snapshot: &Snapshot, claim: &NodeClaim) -> bool {
    let name = claim.name_any();
    let api: Api<NodeClaim> = Api::all(env.kube.clone());
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => return true,
        Err(error) => {
            tracing::debug!(nodeclaim = %name, %error, "deleting expired nodeclaim (will retry)");
            return false;
        }
    }
    let pool = claim.node_pool_name().unwrap_or_default().to_owned();
    let lifetime = claim.spec.expire_after();
    tracing::info!(nodeclaim = %name, nodepool = %pool, expire_after = lifetime.as_str(), "deleting expired nodeclaim");
    env.events.publish(
        Event::about(claim, EventType::Normal, DISRUPTION_TERMINATING, "Disrupting NodeClaim: Expired".to_owned())
            .deduped_also_by("expired"),
    );
    for node in snapshot.nodes_for_node_claim(claim) {
        env.events.publish(
            Event::about(
                node.as_ref(),
                EventType::Normal,
                DISRUPTION_TERMINATING,
                "Disrupting Node: Expired".to_owned(),
            )
            .deduped_also_by("expired"),
        );
    }
    env.metrics.nodeclaim_disrupted(EXPIRED_REASON, &pool);
    true
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn claim(created: i64, expire_after: Option<&str>) -> NodeClaim {
        let mut spec = serde_json::json!({"requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}});
        if let Some(expire_after) = expire_after {
            spec["expireAfter"] = serde_json::json!(expire_after);
        }
        let mut claim: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"}, "spec": spec
        }))
        .expect("claim");
        claim.metadata.creation_timestamp = Some(Time(jiff::Timestamp::from_second(created).unwrap()));
        claim
    }

    fn at(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn expiry_is_creation_plus_expire_after() {
        let c = claim(1_000, Some("30m"));
        assert_eq!(expiry(&c), Some(at(2_800)));
        assert!(!is_expired(&c, at(2_799)));
        assert!(is_expired(&c, at(2_800)), "expired at the instant, not after it");
        assert!(is_expired(&c, at(90_000)));
        let long = claim(0, Some("1h30m"));
        assert_eq!(expiry(&long), Some(at(5_400)));
    }

    #[test]
    fn never_does_not_expire() {
        let c = claim(0, Some("Never"));
        assert_eq!(expiry(&c), None);
        assert!(!is_expired(&c, at(i64::from(i32::MAX))));
    }

    #[test]
    fn an_absent_expire_after_is_the_crd_default_of_720h() {
        let c = claim(0, None);
        assert_eq!(expiry(&c), Some(at(720 * 3600)));
    }

    #[test]
    fn a_claim_without_a_creation_time_has_no_expiry() {
        let mut c = claim(0, Some("1m"));
        c.metadata.creation_timestamp = None;
        assert_eq!(expiry(&c), None);
    }
}
