//! NodeClaim validation.

use super::*;

#[test]
fn nodeclaim_spec_is_immutable() {
    let old = nodeclaim(|_| {});
    let new = nodeclaim(|v| v["spec"]["expireAfter"] = json!("1h"));
    let errors = new.validate_update(&old).expect_err("immutable");
    assert!(errors.has("spec", "spec is immutable"), "{errors}");
    let relabelled = nodeclaim(|v| v["metadata"]["labels"]["extra"] = json!("x"));
    relabelled.validate_update(&old).expect("metadata may change");
}

#[test]
fn nodeclaim_requirements_follow_the_same_rules() {
    let errors = nodeclaim(|v| {
        v["spec"]["requirements"] = json!([
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"], "minValues": 2}
        ]);
        v["spec"]["resources"]["requests"]["cpu"] = json!("one");
    })
    .validate()
    .expect_err("invalid");
    assert!(errors.has("spec.requirements[0].key", "label \"kubernetes.io/hostname\" is restricted"), "{errors}");
    assert!(errors.has("spec.requirements[1].minValues", "must have at least that many values"), "{errors}");
    assert!(errors.has("spec.resources.requests[cpu]", "should match"), "{errors}");
}

#[test]
fn nodeclaim_conditions_roll_up_into_ready() {
    let mut claim = nodeclaim(|_| {});
    let t0 = time("2026-01-01T00:00:00Z");
    let t1 = time("2026-01-01T00:01:00Z");
    claim.initialize_conditions(&t0);
    assert_eq!(claim.condition(CONDITION_READY).map(|c| c.status), Some(ConditionStatus::Unknown));
    claim.set_true(CONDITION_LAUNCHED, &t0);
    claim.set_true(CONDITION_REGISTERED, &t0);
    assert!(!claim.is_ready());
    claim.set_condition(CONDITION_INITIALIZED, ConditionStatus::False, "NodeNotReady", "node not ready", &t0);
    assert_eq!(claim.condition(CONDITION_READY).map(|c| c.status), Some(ConditionStatus::False));
    assert!(claim.set_true(CONDITION_INITIALIZED, &t1));
    assert!(claim.is_ready());
    // Setting the same status again changes nothing, including lastTransitionTime.
    assert!(!claim.set_true(CONDITION_LAUNCHED, &t1));
    assert_eq!(claim.condition(CONDITION_LAUNCHED).map(|c| c.last_transition_time.clone()), Some(t0));
    claim.validate().expect("conditions are well formed");
    let value = serde_json::to_value(&claim).expect("serialize");
    let back: NodeClaim = serde_json::from_value(value.clone()).expect("deserialize");
    assert_eq!(serde_json::to_value(&back).expect("serialize"), value);
}
