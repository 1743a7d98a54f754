//! Status conditions and their roll-up.

use super::*;

#[test]
fn condition_schema_rules_depend_on_the_kind() {
    let condition = |type_: &str, reason: Option<&str>| {
        let mut c = json!({"type": type_, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"});
        if let Some(reason) = reason {
            c["reason"] = json!(reason);
            c["message"] = json!("");
        }
        c
    };
    // NodeClaim: reason optional and may be empty; conditions keyed by type.
    let claim = nodeclaim(|v| {
        v["status"] = json!({"conditions": [condition("Launched", None), condition("Registered", Some("")), condition("Launched", None)]});
    });
    let errors = claim.validate().expect_err("duplicate type");
    assert_eq!(errors.errors.len(), 1, "{errors}");
    assert!(errors.has("status.conditions[2].type", "Duplicate value: \"Launched\""), "{errors}");

    // NodePool: reason and message required, reason non-empty CamelCase.
    let pool = nodepool(|v| {
        v["status"] =
            json!({"conditions": [condition("Ready", None), condition("NodeClassReady", Some("not a reason"))]});
    });
    let errors = pool.validate().expect_err("bad conditions");
    assert!(errors.has("status.conditions[0].reason", "Required value"), "{errors}");
    assert!(errors.has("status.conditions[0].message", "Required value"), "{errors}");
    assert!(errors.has("status.conditions[1].reason", "should match"), "{errors}");

    // EC2NodeClass: the CRD does not key conditions by type.
    ec2nodeclass(|v| {
        v["status"] = json!({"conditions": [condition("Ready", Some("Ready")), condition("Ready", Some("Ready"))]});
    })
    .validate()
    .expect("duplicates are not rejected for EC2NodeClass");
}

#[test]
fn new_nodeclaims_start_from_the_template() {
    let pool = nodepool(|v| {
        v["metadata"]["uid"] = json!("0b9c-uid");
        v["spec"]["template"]["metadata"] = json!({"labels": {"team": "a"}});
        v["spec"]["template"]["spec"]["expireAfter"] = json!("Never");
    });
    let spec = pool.node_claim_spec();
    assert_eq!(spec.requirements, pool.spec.template.spec.requirements);
    assert!(spec.expire_after().is_never());
    let labels = pool.node_claim_labels();
    assert_eq!(labels.get("karpenter.sh/nodepool").map(String::as_str), Some("default"));
    assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    let owner = pool.owner_reference().expect("named pool with uid");
    assert_eq!((owner.kind.as_str(), owner.block_owner_deletion), ("NodePool", Some(true)));
}
