//! The instance status controller's decisions, after upstream
//! `pkg/controllers/interruption/suite_test.go` (v1.14.1, l. 321–730): which action each
//! category takes, dry run, and when the unhealthy counter counts.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::*;

fn claim(name: &str, instance: &str) -> Arc<NodeClaim> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}},
            "status": {"providerID": format!("aws:///us-west-2a/{instance}")}
        }))
        .expect("claim"),
    )
}

fn status(instance: &str, categories: &[Category]) -> HealthStatus {
    let now = jiff::Timestamp::from_second(1_800_000_000).expect("time");
    HealthStatus {
        instance_id: instance.into(),
        impaired_since: now,
        details: categories
            .iter()
            .map(|c| aws::Details {
                category: *c,
                name: "reachability".into(),
                impaired_since: Some(now),
                failed: true,
            })
            .collect(),
    }
}

fn snapshot() -> Snapshot {
    let mut s = Snapshot::default();
    s.node_claims.insert("a".into(), claim("a", "i-a"));
    s.node_claims.insert("b".into(), claim("b", "i-b"));
    s
}

#[test]
fn status_checks_terminate_forcefully_and_scheduled_events_drain() {
    // "should forcefully terminate the NodeClaim when an instance is unhealthy due to EC2
    // system status checks" / "... InstanceStatus check failure" / "should delete the
    // NodeClaim when an instance has a scheduled maintenance event" (reason labels).
    assert_eq!(kind_of(Category::SystemStatus), Some(("system_status", StatusAction::ForcefulTermination)));
    assert_eq!(kind_of(Category::InstanceStatus), Some(("instance_status", StatusAction::ForcefulTermination)));
    assert_eq!(kind_of(Category::EventStatus), Some(("event_status", StatusAction::CordonAndDrain)));
    assert_eq!(kind_of(Category::EbsStatus), None);
}

#[test]
fn forceful_termination_is_handled_before_a_scheduled_event_of_the_same_instance() {
    // "should forcefully terminate when an instance has both system status failure and a
    // scheduled event": the forceful category comes first, so the annotation is written
    // before the claim is deleted.
    let planned = plan(&[status("i-a", &[Category::EventStatus, Category::SystemStatus])], &snapshot(), false);
    let got: Vec<(Category, Option<StatusAction>)> = planned.iter().map(|p| (p.category, p.action)).collect();
    assert_eq!(
        got,
        [
            (Category::SystemStatus, Some(StatusAction::ForcefulTermination)),
            (Category::EventStatus, Some(StatusAction::CordonAndDrain))
        ]
    );
    assert!(planned.iter().all(|p| p.claims == ["a"]));
}

#[test]
fn dry_run_plans_no_action_and_instances_without_claims_are_not_found() {
    // "should NOT delete the NodeClaim when dry run is enabled but should still emit the metric".
    let planned = plan(
        &[status("i-b", &[Category::InstanceStatus]), status("i-x", &[Category::SystemStatus])],
        &snapshot(),
        true,
    );
    assert_eq!(planned.len(), 2);
    assert_eq!((planned[0].claims.clone(), planned[0].action), (vec!["b".to_string()], None));
    assert!(planned[1].claims.is_empty(), "no claim names i-x");
    // EBS alone plans nothing.
    assert!(plan(&[status("i-a", &[Category::EbsStatus])], &snapshot(), false).is_empty());
}

#[test]
fn the_unhealthy_counter_counts_each_pair_once_until_it_recovers() {
    let pair = |i: &str, c| (i.to_string(), c);
    let mut seen = Seen::default();
    let both: BTreeSet<_> = [pair("i-a", Category::InstanceStatus), pair("i-b", Category::InstanceStatus)].into();
    // "should emit the metric for each unique unhealthy instance".
    assert_eq!(seen.poll(&both).len(), 2);
    // "should only emit the metric once across multiple reconciles".
    assert!(seen.poll(&both).is_empty());
    assert!(seen.poll(&both).is_empty());
    // "should re-emit the metric when an instance recovers and becomes unhealthy again".
    assert!(seen.poll(&[pair("i-b", Category::InstanceStatus)].into()).is_empty());
    assert_eq!(seen.poll(&both), [pair("i-a", Category::InstanceStatus)]);
    // Another category of a counted instance is a new pair.
    let more: BTreeSet<_> = both.iter().cloned().chain([pair("i-a", Category::EventStatus)]).collect();
    assert_eq!(seen.poll(&more), [pair("i-a", Category::EventStatus)]);
}
