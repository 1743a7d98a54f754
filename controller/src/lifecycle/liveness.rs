//! Liveness (core nodeclaim/lifecycle/liveness.go): a claim that has not launched within 5
//! minutes, or not registered within 15, is deleted (its finalizer terminates any instance).
//! Each clock starts at its condition's `lastTransitionTime` (l. 72, 92), not at the claim's
//! creation; a claim whose condition is not written yet falls back to its creation time, which
//! is when upstream's first reconcile initialises the conditions as Unknown.

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

/// Liveness of `claim` at `now`.
pub fn check(claim: &NodeClaim, now: jiff::Timestamp) -> Liveness {
    let Some(created) = &claim.metadata.creation_timestamp else { return Liveness::Alive(None) };
    // How long the condition has been in its current (not True) status.
    let age = |type_: &str| {
        let since = claim.condition(type_).map_or(created.0, |c| c.last_transition_time.0);
        elapsed(since, now)
    };
    if !claim.is_condition_true(LAUNCHED) {
        let age = age(LAUNCHED);
        return if age >= LAUNCH_TTL {
            Liveness::Expired("launch_timeout")
        } else {
            Liveness::Alive(Some(LAUNCH_TTL - age))
        };
    }
    if !claim.is_condition_true(REGISTERED) {
        let age = age(REGISTERED);
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

    /// Upstream liveness_test.go "should use the status condition transition time for launch
    /// timeout, not the creation timestamp" and its registration twin: conditions whose
    /// transition is 10 minutes after creation push each deadline back by as much.
    #[test]
    fn timeouts_run_from_the_condition_transition_not_creation() {
        let t = |s| jiff::Timestamp::from_second(s).unwrap();
        let at = |s| k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(s));
        let mut c = claim_at(0);
        c.set_condition(LAUNCHED, ConditionStatus::Unknown, "LaunchFailed", "no capacity", &at(600));
        assert_eq!(check(&c, t(720)), Liveness::Alive(Some(Duration::from_secs(180))));
        assert_eq!(check(&c, t(900)), Liveness::Expired("launch_timeout"));
        let mut c = claim_at(0);
        c.set_condition(LAUNCHED, ConditionStatus::True, "Launched", "", &at(5));
        c.set_condition(REGISTERED, ConditionStatus::Unknown, "NodeNotFound", "", &at(600));
        assert_eq!(check(&c, t(960)), Liveness::Alive(Some(Duration::from_secs(540))));
        assert_eq!(check(&c, t(1500)), Liveness::Expired("registration_timeout"));
    }
}
