//! NodePool limits, weight, static pools and defaults.

use super::*;

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
