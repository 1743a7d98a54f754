//! NodePool template metadata, taints, nodeClassRef and durations.

use super::*;

#[test]
fn template_labels_are_checked_like_requirement_keys() {
    for (key, message) in [
        ("karpenter.sh/nodepool", "label \"karpenter.sh/nodepool\" is restricted"),
        ("karpenter.sh/custom", "label domain \"karpenter.sh\" is restricted"),
        ("kubernetes.io/hostname", "label \"kubernetes.io/hostname\" is restricted"),
        ("karpenter.k8s.aws/custom", "label domain \"karpenter.k8s.aws\" is restricted"),
    ] {
        let errors = nodepool_errors(|v| {
            v["spec"]["template"]["metadata"] = json!({"labels": {key: "x"}});
        });
        assert!(errors.has(&format!("spec.template.metadata.labels[{key}]"), message), "{key}: {errors}");
    }
    let errors = nodepool_errors(|v| {
        v["spec"]["template"]["metadata"] = json!({"labels": {"team": "has space"}});
    });
    assert!(errors.has("spec.template.metadata.labels[team]", "should match"), "{errors}");
}

#[test]
fn taints_need_a_key_and_a_known_effect() {
    let errors = nodepool_errors(|v| {
        v["spec"]["template"]["spec"]["taints"] = json!([
            {"key": "", "effect": "NoSchedule"},
            {"key": "example.com/gpu", "effect": "Sometimes"}
        ]);
    });
    assert!(errors.has("spec.template.spec.taints[0].key", "at least 1 chars long"), "{errors}");
    assert!(errors.has("spec.template.spec.taints[1].effect", "Unsupported value: \"Sometimes\""), "{errors}");
}

#[test]
fn runtime_validation_rejects_duplicate_taints_across_taints_and_startup_taints() {
    let pool = nodepool(|v| {
        v["spec"]["template"]["spec"]["taints"] = json!([{"key": "example.com/gpu", "effect": "NoSchedule"}]);
        v["spec"]["template"]["spec"]["startupTaints"] = json!([{"key": "example.com/gpu", "effect": "NoSchedule"}]);
    });
    pool.validate().expect("admission accepts duplicates");
    let errors = pool.runtime_validate().expect_err("runtime rejects");
    assert!(
        errors.has("spec.template.spec.startupTaints[0]", "duplicate taint Key/Effect pair example.com/gpu=NoSchedule"),
        "{errors}"
    );
}

#[test]
fn node_class_ref_fields_may_not_be_empty_and_group_has_no_slash() {
    let errors = nodepool_errors(|v| {
        v["spec"]["template"]["spec"]["nodeClassRef"] =
            json!({"group": "karpenter.k8s.aws/v1", "kind": "", "name": ""});
    });
    assert!(errors.has("spec.template.spec.nodeClassRef.group", "should match '^[^/]*$'"), "{errors}");
    assert!(errors.has("spec.template.spec.nodeClassRef.kind", "kind may not be empty"), "{errors}");
    assert!(errors.has("spec.template.spec.nodeClassRef.name", "name may not be empty"), "{errors}");
}

#[test]
fn node_class_ref_group_and_kind_are_immutable() {
    let old = nodepool(|_| {});
    let new = nodepool(|v| {
        v["spec"]["template"]["spec"]["nodeClassRef"] =
            json!({"group": "example.com", "kind": "OtherClass", "name": "renamed"});
    });
    let errors = new.validate_update(&old).expect_err("immutable");
    assert!(errors.has("spec.template.spec.nodeClassRef", "nodeClassRef.group is immutable"), "{errors}");
    assert!(errors.has("spec.template.spec.nodeClassRef", "nodeClassRef.kind is immutable"), "{errors}");
    let renamed = nodepool(|v| v["spec"]["template"]["spec"]["nodeClassRef"]["name"] = json!("other"));
    renamed.validate_update(&old).expect("the name may change");
}

#[test]
fn expire_after_accepts_durations_and_never_only() {
    for ok in ["720h", "1h30m", "10s", "Never"] {
        nodepool(|v| v["spec"]["template"]["spec"]["expireAfter"] = json!(ok))
            .validate()
            .unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    // Valid Go durations the CRD pattern still rejects.
    for pattern_bad in ["1.5h", "100ms", "1h0.5s"] {
        let errors = nodepool_errors(|v| v["spec"]["template"]["spec"]["expireAfter"] = json!(pattern_bad));
        assert!(
            errors.has("spec.template.spec.expireAfter", "should match '^(([0-9]+(s|m|h))+|Never)$'"),
            "{pattern_bad}: {errors}"
        );
    }
    // Not a duration at all: rejected while parsing.
    let mut value = nodepool_json();
    value["spec"]["template"]["spec"]["expireAfter"] = json!("30d");
    let error = serde_json::from_value::<NodePool>(value).expect_err("30d");
    assert!(error.to_string().contains("invalid duration \"30d\""), "{error}");
}

#[test]
fn termination_grace_period_does_not_accept_never() {
    let mut value = nodepool_json();
    value["spec"]["template"]["spec"]["terminationGracePeriod"] = json!("Never");
    assert!(serde_json::from_value::<NodePool>(value).is_err());
    let errors = nodepool_errors(|v| {
        v["spec"]["template"]["spec"]["terminationGracePeriod"] = json!("500ms");
    });
    assert!(errors.has("spec.template.spec.terminationGracePeriod", "should match '^([0-9]+(s|m|h))+$'"), "{errors}");
}
