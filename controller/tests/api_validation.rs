//! One test per ported CRD rule (schema constraint or CEL `x-kubernetes-validations`), plus
//! Karpenter's runtime validation, defaults and condition roll-up. Each test starts from a valid
//! object, breaks one thing, and checks the error names the field and says what is wrong.

use dovetail_controller::apis::condition::CONDITION_READY;
use dovetail_controller::apis::nodeclaim::{CONDITION_INITIALIZED, CONDITION_LAUNCHED, CONDITION_REGISTERED};
use dovetail_controller::apis::{
    BudgetNodes, ConditionStatus, EC2NodeClass, NodeClaim, NodeOverlay, NodePool, StatusConditions, ValidationErrors,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

fn nodepool_json() -> Value {
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}
                    ],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
                }
            }
        }
    })
}

fn nodepool(edit: impl FnOnce(&mut Value)) -> NodePool {
    let mut value = nodepool_json();
    edit(&mut value);
    serde_json::from_value(value).expect("NodePool deserializes")
}

fn nodepool_errors(edit: impl FnOnce(&mut Value)) -> ValidationErrors {
    nodepool(edit).validate().expect_err("NodePool should be invalid")
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> Value {
    json!({"key": key, "operator": operator, "values": values})
}

fn set_requirements(value: &mut Value, requirements: Vec<Value>) {
    value["spec"]["template"]["spec"]["requirements"] = Value::Array(requirements);
}

fn ec2nodeclass_json() -> Value {
    json!({
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-test",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}]
        }
    })
}

fn ec2nodeclass(edit: impl FnOnce(&mut Value)) -> EC2NodeClass {
    let mut value = ec2nodeclass_json();
    edit(&mut value);
    serde_json::from_value(value).expect("EC2NodeClass deserializes")
}

fn ec2nodeclass_errors(edit: impl FnOnce(&mut Value)) -> ValidationErrors {
    ec2nodeclass(edit).validate().expect_err("EC2NodeClass should be invalid")
}

fn nodeclaim_json() -> Value {
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-abcde", "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {
            "requirements": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "m5.xlarge"], "minValues": 2}
            ],
            "resources": {"requests": {"cpu": "1500m", "memory": "2Gi", "pods": 3}},
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        }
    })
}

fn nodeclaim(edit: impl FnOnce(&mut Value)) -> NodeClaim {
    let mut value = nodeclaim_json();
    edit(&mut value);
    serde_json::from_value(value).expect("NodeClaim deserializes")
}

fn time(text: &str) -> Time {
    Time(text.parse().expect("timestamp"))
}

// ---------------------------------------------------------------------------------------------
// Fixtures are valid
// ---------------------------------------------------------------------------------------------

#[test]
fn fixtures_are_valid() {
    nodepool(|_| {}).validate().expect("nodepool fixture");
    nodepool(|_| {}).runtime_validate().expect("nodepool fixture runtime");
    ec2nodeclass(|_| {}).validate().expect("ec2nodeclass fixture");
    nodeclaim(|_| {}).validate().expect("nodeclaim fixture");
    nodeclaim(|_| {}).runtime_validate().expect("nodeclaim fixture runtime");
}

// ---------------------------------------------------------------------------------------------
// NodePool requirements
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// NodePool template metadata, taints, nodeClassRef
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// NodePool durations
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// NodePool disruption
// ---------------------------------------------------------------------------------------------

#[test]
fn consolidate_after_is_required_whenever_disruption_is_set() {
    // The CRD lists consolidateAfter as required in spec.disruption for every policy.
    for policy in ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] {
        let mut value = nodepool_json();
        value["spec"]["disruption"] = json!({"consolidationPolicy": policy});
        let error = serde_json::from_value::<NodePool>(value).expect_err("missing consolidateAfter");
        assert!(error.to_string().contains("missing field `consolidateAfter`"), "{error}");
    }
    nodepool(|v| v["spec"]["disruption"] = json!({"consolidateAfter": "Never"}))
        .validate()
        .expect("Never disables consolidation");
    let errors = nodepool_errors(|v| v["spec"]["disruption"] = json!({"consolidateAfter": "2.5m"}));
    assert!(errors.has("spec.disruption.consolidateAfter", "should match"), "{errors}");
}

#[test]
fn unknown_consolidation_policy_is_rejected_when_parsing() {
    let mut value = nodepool_json();
    value["spec"]["disruption"] = json!({"consolidateAfter": "0s", "consolidationPolicy": "Always"});
    let error = serde_json::from_value::<NodePool>(value).expect_err("unknown policy");
    assert!(error.to_string().contains("unknown variant `Always`"), "{error}");
}

#[test]
fn budget_nodes_is_a_percentage_up_to_100_or_a_count() {
    for ok in ["0", "3", "10%", "100%", "0%", "1000"] {
        nodepool(|v| {
            v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [{"nodes": ok}]});
        })
        .validate()
        .unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for pattern_bad in ["101%", "150%", "1000%"] {
        let errors = nodepool_errors(|v| {
            v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [{"nodes": pattern_bad}]});
        });
        assert!(
            errors.has("spec.disruption.budgets[0].nodes", "should match '^((100|[0-9]{1,2})%|[0-9]+)$'"),
            "{pattern_bad}: {errors}"
        );
    }
    for unparseable in ["ten", "-1", "10 %", "%", ""] {
        assert!(BudgetNodes::parse(unparseable).is_err(), "{unparseable:?}");
    }
}

#[test]
fn budget_schedule_and_duration_go_together() {
    for budget in [json!({"nodes": "0", "schedule": "@daily"}), json!({"nodes": "0", "duration": "10m"})] {
        let errors = nodepool_errors(|v| {
            v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [{"nodes": "10%"}, budget]});
        });
        assert!(errors.has("spec.disruption.budgets[1]", "'schedule' must be set with 'duration'"), "{errors}");
    }
    nodepool(|v| {
        v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
            {"nodes": "0", "schedule": "@daily", "duration": "1h30m0s"}
        ]});
    })
    .validate()
    .expect("schedule with duration");
}

#[test]
fn budget_duration_allows_hours_and_minutes_only() {
    let errors = nodepool_errors(|v| {
        v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "0", "schedule": "@daily", "duration": "30s"}
        ]});
    });
    assert!(errors.has("spec.disruption.budgets[0].duration", "should match"), "{errors}");
}

#[test]
fn budget_schedule_must_look_like_cron() {
    let errors = nodepool_errors(|v| {
        v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "0", "schedule": "every day", "duration": "1h"}
        ]});
    });
    assert!(errors.has("spec.disruption.budgets[0].schedule", "should match"), "{errors}");
}

#[test]
fn budget_reasons_are_a_set_of_known_reasons() {
    let errors = nodepool_errors(|v| {
        v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "1", "reasons": ["Drifted", "Empty", "Drifted"]}
        ]});
    });
    assert!(errors.has("spec.disruption.budgets[0].reasons[2]", "Duplicate value: \"Drifted\""), "{errors}");
    let mut value = nodepool_json();
    value["spec"]["disruption"] =
        json!({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "reasons": ["Expired"]}]});
    assert!(serde_json::from_value::<NodePool>(value).is_err());
}

#[test]
fn budgets_are_limited_to_50() {
    let errors = nodepool_errors(|v| {
        let budgets: Vec<Value> = (0..51).map(|_| json!({"nodes": "1"})).collect();
        v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": budgets});
    });
    assert!(errors.has("spec.disruption.budgets", "must have at most 50 items"), "{errors}");
}

#[test]
fn budget_percentages_round_up_and_windows_follow_the_schedule() {
    let ten_percent = BudgetNodes::parse("10%").expect("10%");
    assert_eq!(ten_percent.allowed(25), 3);
    assert_eq!(ten_percent.allowed(0), 0);
    assert_eq!(BudgetNodes::parse("5").expect("5").allowed(2), 5);

    let pool = nodepool(|v| {
        v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "0", "schedule": "0 9 * * *", "duration": "8h"}
        ]});
    });
    let budget = &pool.spec.budgets()[0];
    assert!(budget.is_active(&time("2026-03-02T12:00:00Z")).expect("valid cron"));
    assert!(!budget.is_active(&time("2026-03-02T18:00:00Z")).expect("valid cron"));

    let broken = nodepool(|v| {
        v["spec"]["disruption"] = json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "0", "schedule": "61 * * * *", "duration": "1h"}
        ]});
    });
    // Passes admission (the CRD pattern only wants five fields) but fails closed at runtime.
    broken.validate().expect("admission accepts");
    assert!(broken.spec.budgets()[0].is_active(&time("2026-03-02T12:00:00Z")).is_err());
}

// ---------------------------------------------------------------------------------------------
// NodePool limits, weight, static pools, defaults
// ---------------------------------------------------------------------------------------------

#[test]
fn limits_are_quantities() {
    nodepool(|v| v["spec"]["limits"] = json!({"cpu": 1000, "memory": "1000Gi", "nodes": "10"}))
        .validate()
        .expect("valid limits");
    let errors = nodepool_errors(|v| v["spec"]["limits"] = json!({"cpu": "lots"}));
    assert!(errors.has("spec.limits[cpu]", "should match"), "{errors}");
}

#[test]
fn weight_is_between_1_and_100() {
    for (weight, message) in [(0, "greater than or equal to 1"), (101, "less than or equal to 100")] {
        let errors = nodepool_errors(|v| v["spec"]["weight"] = json!(weight));
        assert!(errors.has("spec.weight", message), "{errors}");
    }
}

#[test]
fn static_nodepools_allow_only_node_limits_and_no_weight() {
    let errors = nodepool_errors(|v| {
        v["spec"]["replicas"] = json!(3);
        v["spec"]["weight"] = json!(10);
        v["spec"]["limits"] = json!({"cpu": 10});
    });
    assert!(errors.has("spec", "only 'limits.nodes' is supported on static NodePools"), "{errors}");
    assert!(errors.has("spec", "'weight' is not supported on static NodePools"), "{errors}");
    nodepool(|v| {
        v["spec"]["replicas"] = json!(3);
        v["spec"]["limits"] = json!({"nodes": 5});
    })
    .validate()
    .expect("static with a node limit");

    let dynamic = nodepool(|_| {});
    let made_static = nodepool(|v| v["spec"]["replicas"] = json!(1));
    let errors = made_static.validate_update(&dynamic).expect_err("no transition");
    assert!(errors.has("spec", "Cannot transition NodePool between static (replicas set) and dynamic"), "{errors}");
}

#[test]
fn defaults_match_the_crd() {
    let mut pool = nodepool(|_| {});
    assert_eq!(pool.spec.template.spec.expire_after().as_str(), "720h");
    assert_eq!(pool.spec.consolidate_after().duration(), Some(std::time::Duration::ZERO));
    assert_eq!(pool.spec.budgets()[0].nodes().as_str(), "10%");
    pool.apply_defaults();
    let value = serde_json::to_value(&pool).expect("serialize");
    assert_eq!(
        value["spec"]["disruption"],
        json!({"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": [{"nodes": "10%"}]})
    );
    assert_eq!(value["spec"]["template"]["spec"]["expireAfter"], json!("720h"));
    pool.validate().expect("defaulted pool is valid");

    // Defaults fill budgets' nodes but keep what the user wrote.
    let mut pool = nodepool(|v| {
        v["spec"]["disruption"] = json!({"consolidateAfter": "5m", "budgets": [
            {"schedule": "@daily", "duration": "1h"}
        ]});
    });
    pool.apply_defaults();
    let value = serde_json::to_value(&pool).expect("serialize");
    assert_eq!(value["spec"]["disruption"]["budgets"][0]["nodes"], json!("10%"));
    assert_eq!(value["spec"]["disruption"]["consolidateAfter"], json!("5m"));
}

// ---------------------------------------------------------------------------------------------
// NodeClaim
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// EC2NodeClass
// ---------------------------------------------------------------------------------------------

#[test]
fn exactly_one_of_role_and_instance_profile() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["instanceProfile"] = json!("profile"));
    assert!(errors.has("spec", "must specify exactly one of ['role', 'instanceProfile']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"].as_object_mut().map(|s| s.remove("role"));
    });
    assert!(errors.has("spec", "must specify exactly one of ['role', 'instanceProfile']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["role"] = json!(""));
    assert!(errors.has("spec.role", "role cannot be empty"), "{errors}");
    ec2nodeclass(|v| {
        v["spec"].as_object_mut().map(|s| s.remove("role"));
        v["spec"]["instanceProfile"] = json!("KarpenterNodeInstanceProfile");
    })
    .validate()
    .expect("instanceProfile alone");
}

#[test]
fn ami_alias_is_exclusive_with_other_terms_and_fields() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"alias": "al2023@latest"}, {"id": "ami-0123"}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms",
            "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"
        ),
        "{errors}"
    );
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"alias": "al2023@latest", "tags": {"team": "a"}}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms[0]",
            "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"
        ),
        "{errors}"
    );
}

#[test]
fn ami_id_is_exclusive_with_other_fields() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([{"id": "ami-0123", "name": "my-ami"}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms[0]",
            "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"
        ),
        "{errors}"
    );
    // ssmParameter is not in the id exclusivity list upstream.
    ec2nodeclass(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([{"id": "ami-0123", "ssmParameter": "/x"}]);
    })
    .validate()
    .expect("id with ssmParameter");
}

#[test]
fn ami_terms_need_a_selector_and_there_must_be_one_to_30() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([{"owner": "amazon"}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms[0]",
            "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"
        ),
        "{errors}"
    );
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([]);
    });
    assert!(errors.has("spec.amiSelectorTerms", "should have at least 1 items"), "{errors}");
}

#[test]
fn ami_aliases_are_family_at_version_with_known_families() {
    for (alias, message) in [
        ("al2023", "'alias' is improperly formatted, must match the format 'family@version'"),
        ("ubuntu@latest", "family is not supported"),
        ("windows2022@v20240101", "windows families may only specify version 'latest'"),
        ("al2023@a-very-long-version-string-x", "Too long"),
    ] {
        let errors = ec2nodeclass_errors(|v| v["spec"]["amiSelectorTerms"] = json!([{"alias": alias}]));
        assert!(errors.has("spec.amiSelectorTerms[0].alias", message), "{alias}: {errors}");
    }
    for alias in ["al2@latest", "bottlerocket@v1.20.0", "windows2025@latest", "al2023@v20240625"] {
        ec2nodeclass(|v| v["spec"]["amiSelectorTerms"] = json!([{"alias": alias}]))
            .validate()
            .unwrap_or_else(|e| panic!("{alias}: {e}"));
    }
}

#[test]
fn ami_family_must_agree_with_the_alias_and_is_required_without_one() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["amiFamily"] = json!("AL2"));
    assert!(
        errors.has("spec", "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"),
        "{errors}"
    );
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"alias": "bottlerocket@latest"}]);
        v["spec"]["amiFamily"] = json!("AL2023");
    });
    assert!(
        errors.has("spec", "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using a Bottlerocket alias"),
        "{errors}"
    );
    ec2nodeclass(|v| v["spec"]["amiFamily"] = json!("Custom")).validate().expect("Custom with an alias");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"tags": {"team": "a"}}]);
    });
    assert!(errors.has("spec", "must specify amiFamily if amiSelectorTerms does not contain an alias"), "{errors}");
}

#[test]
fn subnet_selector_terms_rules() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["subnetSelectorTerms"] = json!([]));
    assert!(errors.has("spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["subnetSelectorTerms"] = json!([{}]));
    assert!(errors.has("spec.subnetSelectorTerms[0]", "expected at least one, got none, ['tags', 'id']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["subnetSelectorTerms"] = json!([{"id": "subnet-0123", "tags": {"a": "b"}}]);
    });
    assert!(errors.has("spec.subnetSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    // Upstream's rule is `!self.all(...)`: it only fires when every term combines id and tags.
    ec2nodeclass(|v| {
        v["spec"]["subnetSelectorTerms"] = json!([{"id": "subnet-0123", "tags": {"a": "b"}}, {"tags": {"a": "b"}}]);
    })
    .validate()
    .expect("quirk kept");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["subnetSelectorTerms"] = json!([{"tags": {"karpenter.sh/discovery": ""}}]);
    });
    assert!(errors.has("spec.subnetSelectorTerms[0].tags", "empty tag keys or values aren't supported"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["subnetSelectorTerms"] = json!([{"id": "sn-1"}]));
    assert!(errors.has("spec.subnetSelectorTerms[0].id", "should match"), "{errors}");
}

#[test]
fn security_group_selector_terms_rules() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["securityGroupSelectorTerms"] = json!([]));
    assert!(errors.has("spec.securityGroupSelectorTerms", "securityGroupSelectorTerms cannot be empty"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["securityGroupSelectorTerms"] = json!([{"id": "sg-0123", "name": "nodes"}]);
    });
    assert!(errors.has("spec.securityGroupSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    assert!(errors.has("spec.securityGroupSelectorTerms", "'name' is mutually exclusive"), "{errors}");
}

#[test]
fn capacity_reservation_selector_terms_rules() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["capacityReservationSelectorTerms"] = json!([{"id": "cr-0123", "ownerID": "123456789012"}]);
    });
    assert!(errors.has("spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    // `!self.all(...)` over an empty list is false upstream, so an empty list is rejected.
    let errors = ec2nodeclass_errors(|v| v["spec"]["capacityReservationSelectorTerms"] = json!([]));
    assert!(errors.has("spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["capacityReservationSelectorTerms"] = json!([{"ownerID": "1234"}]);
    });
    assert!(errors.has("spec.capacityReservationSelectorTerms[0]", "expected at least one, got none"), "{errors}");
    assert!(errors.has("spec.capacityReservationSelectorTerms[0].ownerID", "should match"), "{errors}");
    ec2nodeclass(|v| {
        v["spec"]["capacityReservationSelectorTerms"] =
            json!([{"tags": {"team": "ml"}, "ownerID": "123456789012"}, {"instanceMatchCriteria": "open"}]);
    })
    .validate()
    .expect("valid reservation terms");
}

#[test]
fn placement_group_selector_needs_exactly_one_of_name_and_id() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["placementGroupSelector"] = json!({}));
    assert!(errors.has("spec.placementGroupSelector", "expected at least one, got none, ['name', 'id']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["placementGroupSelector"] = json!({"name": "pg", "id": "pg-0123"});
    });
    assert!(errors.has("spec.placementGroupSelector", "'name' and 'id' are mutually exclusive"), "{errors}");
}

#[test]
fn restricted_tags_are_rejected() {
    for (key, message) in [
        ("kubernetes.io/cluster/prod", "restricted tag matching kubernetes.io/cluster/"),
        ("eks:eks-cluster-name", "restricted tag matching eks:eks-cluster-name"),
        ("karpenter.sh/nodepool", "restricted tag matching karpenter.sh/nodepool"),
        ("karpenter.sh/nodeclaim", "restricted tag matching karpenter.sh/nodeclaim"),
        ("karpenter.k8s.aws/ec2nodeclass", "restricted tag matching karpenter.k8s.aws/ec2nodeclass"),
        ("", "empty tag keys aren't supported"),
    ] {
        let errors = ec2nodeclass_errors(|v| v["spec"]["tags"] = json!({key: "x"}));
        assert!(errors.has("spec.tags", message), "{key}: {errors}");
    }
    ec2nodeclass(|v| v["spec"]["tags"] = json!({"team": "platform", "Name": "node"}))
        .validate()
        .expect("ordinary tags");
}

#[test]
fn kubelet_rules() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["kubelet"] = json!({
            "evictionHard": {"memory.free": "100Mi"},
            "evictionSoft": {"memory.available": "10%"},
            "imageGCHighThresholdPercent": 50,
            "imageGCLowThresholdPercent": 60,
            "kubeReserved": {"cpu": "-100m", "gpu": "1"},
            "maxPods": -1
        });
    });
    for (path, message) in [
        ("spec.kubelet.evictionHard", "valid keys for evictionHard are ['memory.available'"),
        ("spec.kubelet", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"),
        ("spec.kubelet", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"),
        ("spec.kubelet.kubeReserved", "kubeReserved value cannot be a negative resource quantity"),
        ("spec.kubelet.kubeReserved", "valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']"),
        ("spec.kubelet.maxPods", "should be greater than or equal to 0"),
    ] {
        assert!(errors.has(path, message), "{path}: {message}: {errors}");
    }
    ec2nodeclass(|v| {
        v["spec"]["kubelet"] = json!({
            "maxPods": 110,
            "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
            "systemReserved": {"cpu": "100m", "memory": "100Mi"},
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80
        });
    })
    .validate()
    .expect("valid kubelet");
}

#[test]
fn block_device_mapping_rules() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["blockDeviceMappings"] = json!([
            {"deviceName": "/dev/xvda", "rootVolume": true, "ebs": {"volumeSize": "70000Gi"}},
            {"deviceName": "/dev/xvdb", "rootVolume": true, "ebs": {"volumeType": "gp3"}},
            {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": "20Gi", "volumeInitializationRate": 100}}
        ]);
    });
    for (path, message) in [
        ("spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume"),
        ("spec.blockDeviceMappings[0].ebs.volumeSize", "should match"),
        ("spec.blockDeviceMappings[1].ebs", "snapshotID or volumeSize must be defined"),
        ("spec.blockDeviceMappings[2].ebs", "snapshotID must be set when volumeInitializationRate is set"),
    ] {
        assert!(errors.has(path, message), "{path}: {errors}");
    }
}

#[test]
fn metadata_options_are_defaulted_and_hop_limit_is_1_to_64() {
    let class = ec2nodeclass(|_| {});
    let value = serde_json::to_value(class.defaulted()).expect("serialize");
    assert_eq!(
        value["spec"]["metadataOptions"],
        json!({"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1, "httpTokens": "required"})
    );
    let partial = ec2nodeclass(|v| v["spec"]["metadataOptions"] = json!({"httpTokens": "optional"}));
    let value = serde_json::to_value(partial.defaulted()).expect("serialize");
    assert_eq!(value["spec"]["metadataOptions"]["httpTokens"], json!("optional"));
    assert_eq!(value["spec"]["metadataOptions"]["httpPutResponseHopLimit"], json!(1));
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["metadataOptions"] = json!({"httpPutResponseHopLimit": 65});
    });
    assert!(errors.has("spec.metadataOptions.httpPutResponseHopLimit", "less than or equal to 64"), "{errors}");
}

#[test]
fn network_interfaces_need_a_primary_and_unique_slots() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["networkInterfaces"] = json!([
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "interface"}
        ]);
    });
    assert!(
        errors.has("spec.networkInterfaces", "must include a primary interface with interfaceType='interface'"),
        "{errors}"
    );
    assert!(
        errors.has("spec.networkInterfaces", "must not have duplicate networkCardIndex and deviceIndex pairs"),
        "{errors}"
    );
    ec2nodeclass(|v| {
        v["spec"]["networkInterfaces"] = json!([
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}
        ]);
    })
    .validate()
    .expect("valid EFA layout");
}

#[test]
fn connection_tracking_needs_a_timeout_in_range() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["connectionTracking"] = json!({}));
    assert!(errors.has("spec.connectionTracking", "at least one of tcpEstablishedTimeout"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["connectionTracking"] = json!({"udpTimeout": 10}));
    assert!(errors.has("spec.connectionTracking.udpTimeout", "greater than or equal to 30"), "{errors}");
}

// ---------------------------------------------------------------------------------------------
// NodeOverlay
// ---------------------------------------------------------------------------------------------

#[test]
fn nodeoverlay_rules() {
    let overlay: NodeOverlay = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "gpu-discount"},
        "spec": {
            "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": []}],
            "price": "1.5",
            "priceAdjustment": "-10%",
            "capacity": {"cpu": 1},
            "weight": 0
        }
    }))
    .expect("NodeOverlay deserializes");
    let errors = overlay.validate().expect_err("invalid");
    for (path, message) in [
        ("spec.requirements[0].values", "requirements with operator 'NotIn' must have a value defined"),
        ("spec", "cannot set both 'price' and 'priceAdjustment'"),
        ("spec.capacity", "invalid resource restricted"),
        ("spec.weight", "greater than or equal to 1"),
    ] {
        assert!(errors.has(path, message), "{path}: {errors}");
    }
}

// ---------------------------------------------------------------------------------------------
// Status conditions
// ---------------------------------------------------------------------------------------------

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
