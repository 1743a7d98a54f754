//! Liveness (core nodeclaim/lifecycle/liveness.go): a claim that has not launched within 5
//! minutes, or not registered within 15, is deleted (its finalizer terminates any instance).

use std::time::Duration;

use crate::apis::NodeClaim;
use crate::apis::condition::StatusConditions;
use crate::runtime::clock::elapsed;

use super::conditions::{LAUNCHED, REGISTERED};

/// Time allowed to reach `Launched=True`.
pub const LAUNCH_TTL: Duration = Duration::from_secs(5 * 60);
/// Time allowed to reach `Registered=True`.
pub const REGISTRATION_TTL: Duration = Duration::from_secs(15 * 60);

/// What liveness says about a claim at `now`.
#[derive(Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Fine; check again after the duration (if any deadline is pending).
    Alive(Option<Duration>),
    /// Delete it, for this reason (`launch_timeout` / `registration_timeout`).
    Expired(&'static str),
}

/// Liveness of `claim` at `now`, measured from its creation.
pub fn check(claim: &NodeClaim, now: jiff::Timestamp) -> Liveness {
    let Some(created) = &claim.metadata.creation_timestamp else { return Liveness::Alive(None) };
    let age = elapsed(created.0, now);
    if !claim.is_condition_true(LAUNCHED) {
        return if age >= LAUNCH_TTL {
            Liveness::Expired("launch_timeout")
        } else {
            Liveness::Alive(Some(LAUNCH_TTL - age))
        };
    }
    if !claim.is_condition_true(REGISTERED) {
        return if age >= REGISTRATION_TTL {
            Liveness::Expired("registration_timeout")
        } else {
            Liveness::Alive(Some(REGISTRATION_TTL - age))
        };
    }
    Liveness::Alive(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::condition::ConditionStatus;

    fn claim_at(second: i64) -> NodeClaim {
        let mut c: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}}
        }))
        .expect("claim");
        c.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::from_second(second).unwrap()));
        c
    }

    #[test]
    fn five_minutes_to_launch_fifteen_to_register() {
        let t = |s| jiff::Timestamp::from_second(s).unwrap();
        let mut c = claim_at(0);
        assert_eq!(check(&c, t(299)), Liveness::Alive(Some(Duration::from_secs(1))));
        assert_eq!(check(&c, t(300)), Liveness::Expired("launch_timeout"));
        c.set_condition(
            LAUNCHED,
            ConditionStatus::True,
            "Launched",
            "",
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(10)),
        );
        assert_eq!(check(&c, t(300)), Liveness::Alive(Some(Duration::from_secs(600))));
        assert_eq!(check(&c, t(900)), Liveness::Expired("registration_timeout"));
        c.set_condition(
            REGISTERED,
            ConditionStatus::True,
            "Registered",
            "",
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(60)),
        );
        assert_eq!(check(&c, t(100_000)), Liveness::Alive(None));
    }
}
