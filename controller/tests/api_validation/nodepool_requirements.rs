//! NodePool requirements: operators, minValues, restricted label domains.

use super::*;

#[test]
fn in_requirement_without_values_is_rejected() {
    for values in [json!([]), Value::Null] {
        let errors = nodepool_errors(|v| {
            let mut r = requirement("example.com/team", "In", &[]);
            r["values"] = values.clone();
            set_requirements(v, vec![requirement("kubernetes.io/arch", "In", &["amd64"]), r]);
        });
        assert!(
            errors.has(
                "spec.template.spec.requirements[1].values",
                "requirements with operator 'In' must have a value defined"
            ),
            "{errors}"
        );
    }
}

#[test]
fn unknown_operator_is_rejected_when_parsing() {
    let mut value = nodepool_json();
    set_requirements(&mut value, vec![requirement("example.com/team", "Contains", &["a"])]);
    let error = serde_json::from_value::<NodePool>(value).expect_err("unknown operator");
    assert!(error.to_string().contains("unknown variant `Contains`"), "{error}");
}

#[test]
fn numeric_operators_need_a_single_non_negative_integer() {
    for operator in ["Gt", "Lt", "Gte", "Lte"] {
        for bad in [vec![], vec!["a"], vec!["1", "2"], vec!["-1"], vec!["1.5"]] {
            let errors = nodepool_errors(|v| {
                set_requirements(v, vec![requirement("example.com/size", operator, &bad)]);
            });
            assert!(
                errors.has("spec.template.spec.requirements[0].values", "must have a single positive integer value"),
                "{operator} {bad:?}: {errors}"
            );
        }
        nodepool(|v| set_requirements(v, vec![requirement("example.com/size", operator, &["0"])]))
            .validate()
            .expect("a single non-negative integer is valid");
    }
}

#[test]
fn min_values_may_not_exceed_the_in_values() {
    let errors = nodepool_errors(|v| {
        let mut r = requirement("karpenter.k8s.aws/instance-category", "In", &["c", "m"]);
        r["minValues"] = json!(3);
        set_requirements(v, vec![r]);
    });
    assert!(
        errors.has(
            "spec.template.spec.requirements[0].minValues",
            "requirements with 'minValues' must have at least that many values specified in the 'values' field"
        ),
        "{errors}"
    );
    // Exists with minValues needs no values (min-values-multiple-keys.yaml does this).
    nodepool(|v| {
        set_requirements(
            v,
            vec![json!({"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 5})],
        );
    })
    .validate()
    .expect("Exists with minValues");
}

#[test]
fn min_values_is_between_1_and_50() {
    for (min_values, message) in
        [(0, "should be greater than or equal to 1"), (51, "should be less than or equal to 50")]
    {
        let errors = nodepool_errors(|v| {
            let r = json!({"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": min_values});
            set_requirements(v, vec![r]);
        });
        assert!(errors.has("spec.template.spec.requirements[0].minValues", message), "{errors}");
    }
}

#[test]
fn requirements_are_limited_to_100() {
    let errors = nodepool_errors(|v| {
        let many = (0..101).map(|i| requirement(&format!("example.com/k{i}"), "Exists", &[])).collect();
        set_requirements(v, many);
    });
    assert!(errors.has("spec.template.spec.requirements", "must have at most 100 items"), "{errors}");
}

#[test]
fn karpenter_sh_domain_is_restricted_except_well_known_keys() {
    let errors = nodepool_errors(|v| {
        set_requirements(v, vec![requirement("karpenter.sh/custom", "Exists", &[])]);
    });
    assert!(
        errors.has("spec.template.spec.requirements[0].key", "label domain \"karpenter.sh\" is restricted"),
        "{errors}"
    );
    let errors = nodepool_errors(|v| {
        set_requirements(v, vec![requirement("sub.karpenter.sh/custom", "Exists", &[])]);
    });
    assert!(
        errors.has("spec.template.spec.requirements[0].key", "label domain \"karpenter.sh\" is restricted"),
        "{errors}"
    );
    nodepool(|v| {
        set_requirements(v, vec![requirement("karpenter.sh/capacity-type", "In", &["spot"])]);
    })
    .validate()
    .expect("capacity-type is allowed");
}

#[test]
fn nodepool_label_is_restricted_in_nodepools_but_not_nodeclaims() {
    let errors = nodepool_errors(|v| {
        set_requirements(v, vec![requirement("karpenter.sh/nodepool", "In", &["x"])]);
    });
    assert!(
        errors.has("spec.template.spec.requirements[0].key", "label \"karpenter.sh/nodepool\" is restricted"),
        "{errors}"
    );
    nodeclaim(|_| {}).validate().expect("NodeClaims carry karpenter.sh/nodepool requirements");
}

#[test]
fn hostname_label_is_restricted() {
    let errors = nodepool_errors(|v| {
        set_requirements(v, vec![requirement("kubernetes.io/hostname", "In", &["node-1"])]);
    });
    assert!(
        errors.has("spec.template.spec.requirements[0].key", "label \"kubernetes.io/hostname\" is restricted"),
        "{errors}"
    );
}

#[test]
fn karpenter_k8s_aws_domain_is_restricted_except_the_crd_list() {
    let errors = nodepool_errors(|v| {
        set_requirements(v, vec![requirement("karpenter.k8s.aws/custom", "Exists", &[])]);
    });
    assert!(
        errors.has("spec.template.spec.requirements[0].key", "label domain \"karpenter.k8s.aws\" is restricted"),
        "{errors}"
    );
    for key in [
        "karpenter.k8s.aws/instance-family",
        "karpenter.k8s.aws/instance-tenancy",
        "karpenter.k8s.aws/placement-group-id",
    ] {
        let pool = nodepool(|v| set_requirements(v, vec![requirement(key, "Exists", &[])]));
        pool.validate().expect("allowed AWS key");
        pool.runtime_validate().expect("allowed AWS key at runtime");
    }
}

#[test]
fn requirement_keys_and_values_follow_the_label_patterns() {
    let errors = nodepool_errors(|v| {
        set_requirements(v, vec![requirement("Bad Key", "In", &["-bad-"])]);
    });
    assert!(errors.has("spec.template.spec.requirements[0].key", "should match"), "{errors}");
    assert!(errors.has("spec.template.spec.requirements[0].values[0]", "should match"), "{errors}");
}

#[test]
fn runtime_validation_restricts_kubernetes_io_and_k8s_io_domains() {
    // The CRD admits these keys; Karpenter's RuntimeValidate (ValidationSucceeded) does not.
    for key in ["kubernetes.io/custom", "k8s.io/custom", "foo.kubernetes.io/bar"] {
        let pool = nodepool(|v| set_requirements(v, vec![requirement(key, "Exists", &[])]));
        pool.validate().expect("admission accepts");
        let errors = pool.runtime_validate().expect_err("runtime rejects");
        assert!(
            errors.has("spec.template.spec.requirements[0]", &format!("label {key} is restricted")),
            "{key}: {errors}"
        );
    }
    for key in ["node.kubernetes.io/custom", "beta.kubernetes.io/arch", "example.com/team"] {
        nodepool(|v| set_requirements(v, vec![requirement(key, "Exists", &[])]))
            .runtime_validate()
            .unwrap_or_else(|e| panic!("{key}: {e}"));
    }
}
