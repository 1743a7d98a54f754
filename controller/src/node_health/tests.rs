//! Upstream's own cases for NodeRepair, ported case by case from kubernetes-sigs/karpenter
//! `pkg/controllers/node/health/suite_test.go` (each test names its `It(...)` and line), run
//! against [`decision`](super::decision) with core's fake cloud provider policy (`BadNode`
//! False, 30 minutes). The Metrics case (l. 386–409) is I/O: `tests/node_repair.rs` checks the
//! repair end to end instead.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use serde_json::json;

use super::decision::{
    BLOCKED_REQUEUE, Unhealthy, Verdict, allowed_unhealthy, find_unhealthy_condition, termination_stamp, verdict,
};
use crate::apis::NodeClaim;
use crate::apis::labels::NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION;
use crate::cloudprovider::RepairPolicy;
use crate::cloudprovider::repair::fake_repair_policies;

const MINUTE: Duration = Duration::from_secs(60);
const T0: i64 = 1_700_000_000;

fn at(offset: Duration) -> jiff::Timestamp {
    jiff::Timestamp::from_second(T0 + i64::try_from(offset.as_secs()).unwrap()).unwrap()
}

fn rfc3339(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A managed Node `name` (test.NodeClaimAndNode: provider ID, node class label) in `pool`,
/// with `conditions` as (type, status, lastTransitionTime).
fn node(name: &str, pool: Option<&str>, conditions: &[(&str, &str, jiff::Timestamp)]) -> Node {
    let mut labels = json!({"karpenter.k8s.aws/ec2nodeclass": "default"});
    if let Some(pool) = pool {
        labels["karpenter.sh/nodepool"] = json!(pool);
    }
    let conditions: Vec<_> = conditions
        .iter()
        .map(|(t, s, when)| json!({"type": t, "status": s, "lastTransitionTime": rfc3339(*when)}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"providerID": format!("aws:///test-zone-1/i-{name}")},
        "status": {"conditions": conditions}
    }))
    .expect("node")
}

fn claim(name: &str, pool: Option<&str>, annotations: Option<serde_json::Value>) -> NodeClaim {
    let mut meta = json!({"name": name, "uid": format!("claim-{name}"), "finalizers": ["karpenter.sh/termination"]});
    if let Some(pool) = pool {
        meta["labels"] = json!({"karpenter.sh/nodepool": pool});
    }
    if let Some(a) = annotations {
        meta["annotations"] = a;
    }
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
        "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
        "status": {"providerID": format!("aws:///test-zone-1/i-{name}")}
    }))
    .expect("claim")
}

/// The BeforeEach (l. 79–88): one claim and node in NodePool `default`.
fn single(conditions: &[(&str, &str, jiff::Timestamp)]) -> (Node, NodeClaim) {
    (node("n", Some("default"), conditions), claim("n", Some("default"), None))
}

fn judge(node: &Node, claim: &NodeClaim, cluster: &[Node], policies: &[RepairPolicy], now: jiff::Timestamp) -> Verdict {
    verdict(node, claim, cluster.iter(), policies, now)
}

/// "should delete nodes that are unhealthy by the cloud provider" (l. 98–111).
#[test]
fn deletes_nodes_unhealthy_by_the_cloud_provider() {
    let (n, c) = single(&[("BadNode", "False", at(Duration::ZERO))]);
    let v = judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(60 * MINUTE));
    assert!(matches!(v, Verdict::Repair(Unhealthy { ref condition_type, .. }) if condition_type == "BadNode"), "{v:?}");
}

/// "should not delete node when unhealthy type does not match cloud provider passed in value" (l. 112–125).
#[test]
fn keeps_a_node_whose_condition_type_has_no_policy() {
    let (n, c) = single(&[("FakeHealthyNode", "False", at(Duration::ZERO))]);
    assert_eq!(judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(60 * MINUTE)), Verdict::Healthy);
}

/// "should not delete node when health status does not match cloud provider passed in value" (l. 126–139).
#[test]
fn keeps_a_node_whose_condition_status_does_not_match() {
    let (n, c) = single(&[("BadNode", "True", at(Duration::ZERO))]);
    assert_eq!(judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(60 * MINUTE)), Verdict::Healthy);
}

/// "should not delete node when health duration is not reached" (l. 140–154).
#[test]
fn keeps_a_node_within_its_toleration() {
    let (n, c) = single(&[("BadNode", "False", at(Duration::ZERO))]);
    let v = judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(20 * MINUTE));
    assert_eq!(v, Verdict::Tolerated(10 * MINUTE));
    // At the instant the toleration ends it is due (`now.Before(terminationTime)` is false).
    let due = judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(30 * MINUTE));
    assert!(matches!(due, Verdict::Repair(_)), "{due:?}");
}

/// "should set annotation termination grace period when force termination is started" (l. 155–169).
#[test]
fn stamps_the_termination_timestamp_with_now() {
    let (_, c) = single(&[]);
    let now = at(60 * MINUTE);
    assert_eq!(termination_stamp(&c, now), Some(rfc3339(now)));
}

/// "should not respect termination grace period if set on the nodepool" (l. 170–185).
#[test]
fn overwrites_a_later_termination_timestamp() {
    let later = rfc3339(at(120 * MINUTE));
    let c = claim("n", Some("default"), Some(json!({NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION: later})));
    let now = at(60 * MINUTE);
    assert_eq!(termination_stamp(&c, now), Some(rfc3339(now)));
}

/// "should not update termination grace period if set before the current time" (l. 186–202).
#[test]
fn keeps_an_earlier_termination_timestamp() {
    let now = at(60 * MINUTE);
    let earlier = rfc3339(at(57 * MINUTE));
    let c = claim("n", Some("default"), Some(json!({NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION: earlier})));
    assert_eq!(termination_stamp(&c, now), None);
}

/// "should return the requeue interval for the condition closest to its terminationDuration" (l. 203–233).
#[test]
fn requeues_for_the_condition_closest_to_its_toleration() {
    let policies = vec![
        RepairPolicy::new("BadNode", "False", 60 * MINUTE),
        RepairPolicy::new("ValidUnhealthyCondition", "False", 30 * MINUTE),
    ];
    let (n, c) =
        single(&[("ValidUnhealthyCondition", "False", at(Duration::ZERO)), ("BadNode", "False", at(Duration::ZERO))]);
    assert_eq!(judge(&n, &c, std::slice::from_ref(&n), &policies, at(27 * MINUTE)), Verdict::Tolerated(3 * MINUTE));
    let found = find_unhealthy_condition(&n, &policies).expect("unhealthy");
    assert_eq!(found.condition_type, "ValidUnhealthyCondition");
    assert_eq!(found.toleration, 30 * MINUTE);
}

/// "should return the requeue interval for the time between now and when the nodeClaim termination time" (l. 234–247).
#[test]
fn requeues_at_the_end_of_the_toleration() {
    let (n, c) = single(&[("BadNode", "False", at(Duration::ZERO))]);
    assert_eq!(
        judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(27 * MINUTE)),
        Verdict::Tolerated(3 * MINUTE)
    );
}

/// "should ignore node disruption budgets" (l. 251–272): the verdict takes no NodePool budget
/// as input at all, so a `nodes: "0"` budget cannot stop it.
#[test]
fn ignores_node_disruption_budgets() {
    let (n, c) = single(&[("BadNode", "False", at(Duration::ZERO))]);
    assert!(matches!(
        judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(60 * MINUTE)),
        Verdict::Repair(_)
    ));
}

/// "should ignore do-not-disrupt on a node" (l. 273–287).
#[test]
fn ignores_do_not_disrupt_on_the_node() {
    let (mut n, c) = single(&[("BadNode", "False", at(Duration::ZERO))]);
    n.metadata.annotations = Some([("karpenter.sh/do-not-disrupt".to_owned(), "true".to_owned())].into());
    assert!(matches!(
        judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(60 * MINUTE)),
        Verdict::Repair(_)
    ));
}

fn ten_with_three_bad(pool: Option<&str>) -> (Vec<Node>, Vec<NodeClaim>) {
    let nodes: Vec<Node> = (0..10)
        .map(|i| {
            let conditions: &[(&str, &str, jiff::Timestamp)] =
                if i < 3 { &[("BadNode", "False", at(Duration::ZERO))] } else { &[] };
            node(&format!("n{i}"), pool, conditions)
        })
        .collect();
    let claims = (0..10).map(|i| claim(&format!("n{i}"), pool, None)).collect();
    (nodes, claims)
}

/// "should ignore unhealthy nodes if more then 20% of the nodes are unhealthy in a nodepool" (l. 288–321).
#[test]
fn blocks_when_more_than_a_fifth_of_the_nodepool_is_unhealthy() {
    let (nodes, claims) = ten_with_three_bad(Some("default"));
    // Upstream reconciles the first two nodes (both sick) and expects both blocked.
    for (n, c) in nodes.iter().zip(&claims).take(2) {
        let v = judge(n, c, &nodes, &fake_repair_policies(), at(60 * MINUTE));
        assert_eq!(v, Verdict::BlockedNodePool("default".into()));
    }
    assert_eq!(BLOCKED_REQUEUE, 5 * MINUTE, "upstream requeues a blocked repair after 5 minutes");
}

/// "should ignore unhealthy nodes if more then 20% of the nodes are unhealthy in a cluster" (l. 322–358).
#[test]
fn blocks_when_more_than_a_fifth_of_the_cluster_is_unhealthy() {
    let (nodes, claims) = ten_with_three_bad(None);
    for (n, c) in nodes.iter().zip(&claims).take(3) {
        let v = judge(n, c, &nodes, &fake_repair_policies(), at(60 * MINUTE));
        assert_eq!(v, Verdict::BlockedCluster);
    }
}

/// "should consider round up when there is a low number of nodes for a nodepool" (l. 359–383).
#[test]
fn rounds_the_allowance_up_for_small_nodepools() {
    let nodes: Vec<Node> = (0..3)
        .map(|i| {
            let conditions: &[(&str, &str, jiff::Timestamp)] =
                if i == 0 { &[("BadNode", "False", at(Duration::ZERO))] } else { &[] };
            node(&format!("n{i}"), Some("default"), conditions)
        })
        .collect();
    let c = claim("n0", Some("default"), None);
    assert!(matches!(judge(&nodes[0], &c, &nodes, &fake_repair_policies(), at(60 * MINUTE)), Verdict::Repair(_)));
    assert_eq!((allowed_unhealthy(3), allowed_unhealthy(5), allowed_unhealthy(6), allowed_unhealthy(10)), (1, 1, 2, 2));
    assert_eq!(allowed_unhealthy(0), 0);
}

/// Not an upstream case: the pool guard counts only the claim's pool. Two bad nodes of ten in
/// pool `a` (exactly the allowance) are repaired although pool `b` is entirely unhealthy.
#[test]
fn the_guard_counts_only_the_claims_nodepool() {
    let mut nodes: Vec<Node> = (0..10)
        .map(|i| {
            let conditions: &[(&str, &str, jiff::Timestamp)] =
                if i < 2 { &[("BadNode", "False", at(Duration::ZERO))] } else { &[] };
            node(&format!("a{i}"), Some("a"), conditions)
        })
        .collect();
    nodes.extend((0..3).map(|i| node(&format!("b{i}"), Some("b"), &[("BadNode", "False", at(Duration::ZERO))])));
    let c = claim("a0", Some("a"), None);
    assert!(matches!(judge(&nodes[0], &c, &nodes, &fake_repair_policies(), at(60 * MINUTE)), Verdict::Repair(_)));
    let cb = claim("b0", Some("b"), None);
    assert_eq!(
        judge(&nodes[10], &cb, &nodes, &fake_repair_policies(), at(60 * MINUTE)),
        Verdict::BlockedNodePool("b".into())
    );
}

/// Not an upstream case: a condition without a transition time is long overdue (Go's zero
/// time in `LastTransitionTime.Add`).
#[test]
fn a_missing_transition_time_is_due_at_once() {
    let (mut n, c) = single(&[("BadNode", "False", at(Duration::ZERO))]);
    n.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time = None;
    assert!(matches!(
        judge(&n, &c, std::slice::from_ref(&n), &fake_repair_policies(), at(Duration::ZERO)),
        Verdict::Repair(Unhealthy { due: None, .. })
    ));
}

/// The AWS provider's policies (aws `pkg/cloudprovider/cloudprovider.go` l. 305–346): Ready
/// False and Unknown both count, 30 minutes each.
#[test]
fn aws_policies_tolerate_a_not_ready_node_for_30_minutes() {
    let aws = crate::cloudprovider::repair::aws_repair_policies();
    for status in ["False", "Unknown"] {
        let (n, c) = single(&[("Ready", status, at(Duration::ZERO))]);
        assert_eq!(judge(&n, &c, std::slice::from_ref(&n), &aws, at(29 * MINUTE)), Verdict::Tolerated(MINUTE));
        assert!(matches!(judge(&n, &c, std::slice::from_ref(&n), &aws, at(30 * MINUTE)), Verdict::Repair(_)));
    }
    let (n, c) = single(&[("Ready", "True", at(Duration::ZERO))]);
    assert_eq!(judge(&n, &c, std::slice::from_ref(&n), &aws, at(60 * MINUTE)), Verdict::Healthy);
}
