//! Cases from upstream's suites, facts carried over: `nodepool/registrationhealth/suite_test.go`,
//! `nodeclaim/lifecycle/liveness_test.go` and `registration_test.go` (NodeRegistrationHealthy).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

use super::*;

fn now() -> Time {
    Time(jiff::Timestamp::from_second(1_000).unwrap())
}

fn pool(generation: i64) -> NodePool {
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": "default", "uid": "pool-1", "generation": generation},
        "spec": {"template": {"spec": {"requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}
    }))
    .expect("pool")
}

fn claim(launched: Option<(ConditionStatus, &str, &str)>) -> NodeClaim {
    let mut c: NodeClaim = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "default-x"},
        "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    }))
    .expect("claim");
    if let Some((status, reason, message)) = launched {
        c.set_condition(LAUNCHED, status, reason, message, &now());
    }
    c
}

fn condition(pool: &NodePool) -> Option<ConditionStatus> {
    pool.condition(CONDITION_NODE_REGISTRATION_HEALTHY).map(|c| c.status)
}

/// Applies an outcome as the lifecycle controller does: condition first, then the buffer.
fn outcome(health: &RegistrationHealth, pool: &mut NodePool, claim: &NodeClaim, success: bool) {
    if let Some((status, reason, message)) = condition_for_outcome(health, pool, claim, success) {
        pool.set_condition(CONDITION_NODE_REGISTRATION_HEALTHY, status, &reason, &message, &now());
    }
    health.record("pool-1", success);
}

#[test]
fn failures_count_against_the_buffer_capacity_not_the_outcomes_held() {
    let health = RegistrationHealth::default();
    assert_eq!(health.health("pool-1"), Health::Unknown);
    health.record("pool-1", false);
    assert_eq!(health.health("pool-1"), Health::Healthy, "1 failure of 4 slots is 25%");
    health.record("pool-1", false);
    assert_eq!(health.health("pool-1"), Health::Unhealthy, "2 of 4 reaches ThresholdFalse");
    health.record("pool-1", true);
    health.record("pool-1", true);
    assert_eq!(health.health("pool-1"), Health::Unhealthy, "[f f t t] is still 50%");
    health.record("pool-1", true);
    assert_eq!(health.health("pool-1"), Health::Healthy, "the oldest failure fell out of the ring");
}

/// liveness_test.go "should update NodeRegistrationHealthy status condition to False if it was
/// previously set to True and there are >=2 registration failures".
#[test]
fn two_registration_timeouts_turn_a_healthy_pool_false() {
    let health = RegistrationHealth::default();
    let mut p = pool(1);
    p.set_condition(CONDITION_NODE_REGISTRATION_HEALTHY, ConditionStatus::True, "NodeRegistrationHealthy", "", &now());
    health.set("pool-1", Health::Healthy);
    let launched = claim(Some((ConditionStatus::True, "Launched", "")));
    outcome(&health, &mut p, &launched, false);
    assert_eq!(condition(&p), Some(ConditionStatus::True), "[t f]: one failure is below the threshold");
    outcome(&health, &mut p, &launched, false);
    assert_eq!(condition(&p), Some(ConditionStatus::False));
    let c = p.condition(CONDITION_NODE_REGISTRATION_HEALTHY).unwrap();
    assert_eq!(
        (c.reason.as_deref(), c.message.as_deref()),
        (Some("RegistrationFailed"), Some("Failed to register node"))
    );
}

/// liveness_test.go, the same from Unknown, with launch timeouts: the reason and message are
/// the claim's own `Launched` condition's.
#[test]
fn two_launch_timeouts_turn_an_unknown_pool_false_with_the_launch_reason() {
    let health = RegistrationHealth::default();
    let mut p = pool(1);
    let failed = claim(Some((ConditionStatus::Unknown, "LaunchFailed", "InsufficientInstanceCapacity")));
    outcome(&health, &mut p, &failed, false);
    assert_eq!(condition(&p), None);
    outcome(&health, &mut p, &failed, false);
    let c = p.condition(CONDITION_NODE_REGISTRATION_HEALTHY).unwrap();
    assert_eq!(c.status, ConditionStatus::False);
    assert_eq!(
        (c.reason.as_deref(), c.message.as_deref()),
        (Some("LaunchFailed"), Some("InsufficientInstanceCapacity"))
    );
}

/// registration_test.go "should add NodeRegistrationHealthy=true on the nodePool if registration
/// succeeds and if it was previously false" (an empty buffer: e.g. after a restart).
#[test]
fn a_registration_turns_a_false_pool_with_an_empty_buffer_true() {
    let health = RegistrationHealth::default();
    let mut p = pool(1);
    p.set_condition(CONDITION_NODE_REGISTRATION_HEALTHY, ConditionStatus::False, "unhealthy", "unhealthy", &now());
    outcome(&health, &mut p, &claim(Some((ConditionStatus::True, "Launched", ""))), true);
    assert_eq!(condition(&p), Some(ConditionStatus::True));
}

/// registration_test.go "should not add NodeRegistrationHealthy=true on the nodePool if
/// registration succeeds once and if it had previously failed twice".
#[test]
fn one_registration_after_two_failures_keeps_the_pool_false() {
    let health = RegistrationHealth::default();
    let mut p = pool(1);
    let launched = claim(Some((ConditionStatus::True, "Launched", "")));
    outcome(&health, &mut p, &launched, false);
    outcome(&health, &mut p, &launched, false);
    assert_eq!(condition(&p), Some(ConditionStatus::False));
    outcome(&health, &mut p, &launched, true);
    assert_eq!(condition(&p), Some(ConditionStatus::False));
    assert_eq!(health.health("pool-1"), Health::Unhealthy);
}

/// registrationhealth/suite_test.go: a changed node class (observed generation 1, class now 2)
/// resets the condition to Unknown and empties the buffer, and records the class generation.
#[test]
fn a_node_class_change_resets_condition_and_buffer() {
    let health = RegistrationHealth::default();
    let mut p = pool(1);
    p.set_condition(CONDITION_NODE_REGISTRATION_HEALTHY, ConditionStatus::False, "unhealthy", "unhealthy", &now());
    p.status.get_or_insert_with(Default::default).node_class_observed_generation = Some(1);
    reconcile_condition(&health, &mut p, 2, &now());
    assert_eq!(condition(&p), Some(ConditionStatus::Unknown));
    assert_eq!(p.status.as_ref().unwrap().node_class_observed_generation, Some(2));
    assert_eq!(health.health("pool-1"), Health::Unknown);
}

/// registrationhealth/suite_test.go: an updated NodePool (generation 2, condition observed at 1).
#[test]
fn a_node_pool_change_resets_condition_and_buffer() {
    let health = RegistrationHealth::default();
    let mut p = pool(1);
    p.set_condition(CONDITION_NODE_REGISTRATION_HEALTHY, ConditionStatus::False, "unhealthy", "unhealthy", &now());
    p.status.get_or_insert_with(Default::default).node_class_observed_generation = Some(1);
    p.metadata.generation = Some(2);
    reconcile_condition(&health, &mut p, 1, &now());
    assert_eq!(condition(&p), Some(ConditionStatus::Unknown));
    assert_eq!(health.health("pool-1"), Health::Unknown);
}

/// registrationhealth/suite_test.go "should not set … as Unknown if it is already set to
/// true/false": nothing changed, so the condition stays and an empty buffer (a restarted
/// controller) is re-filled from it.
#[test]
fn an_unchanged_pool_keeps_its_condition_and_rehydrates_the_buffer() {
    for (status, expected) in [(ConditionStatus::True, Health::Healthy), (ConditionStatus::False, Health::Unhealthy)] {
        let health = RegistrationHealth::default();
        let mut p = pool(1);
        p.set_condition(CONDITION_NODE_REGISTRATION_HEALTHY, status, "r", "m", &now());
        p.status.get_or_insert_with(Default::default).node_class_observed_generation = Some(1);
        reconcile_condition(&health, &mut p, 1, &now());
        assert_eq!(condition(&p), Some(status));
        assert_eq!(health.health("pool-1"), expected);
    }
}

/// A pool seen for the first time gets the condition as Unknown; and the condition is not one
/// of Ready's dependents (`nodepool_status.go` `StatusConditions`), so an unhealthy pool stays
/// Ready and keeps provisioning.
#[test]
fn a_new_pool_starts_unknown_and_registration_health_does_not_gate_ready() {
    use crate::apis::nodepool::{CONDITION_NODE_CLASS_READY, CONDITION_VALIDATION_SUCCEEDED};
    let health = RegistrationHealth::default();
    let mut p = pool(1);
    reconcile_condition(&health, &mut p, 1, &now());
    assert_eq!(condition(&p), Some(ConditionStatus::Unknown));
    p.set_true(CONDITION_VALIDATION_SUCCEEDED, &now());
    p.set_true(CONDITION_NODE_CLASS_READY, &now());
    p.set_condition(CONDITION_NODE_REGISTRATION_HEALTHY, ConditionStatus::False, "RegistrationFailed", "", &now());
    assert!(p.is_ready());
}
