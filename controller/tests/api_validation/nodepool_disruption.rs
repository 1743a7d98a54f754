//! NodePool disruption: consolidateAfter, policies, budgets.

use super::*;

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
