//! Disruption while an earlier command is in flight (issue 20, deviation 1): the pods of a node
//! already being deleted may land on the uninitialized replacement launched for them, so a
//! second drifted node is disrupted without waiting for the first replacement to initialize
//! (core `pkg/controllers/disruption/helpers.go` l. 133-151, `SimulateScheduling`). A
//! candidate's own pods still may not rely on an uninitialized node.

use std::time::Duration;

use serde_json::json;

use super::budgets::allowed_disruptions;
use super::candidates::{DisruptionClass, get_candidates};
use super::command::{Command, Method};
use super::drift::drift;
use super::input::{DisruptionInput, DisruptionOptions};
use super::report::Report;
use super::simulation::{SimulationError, simulate};
use super::synthetic::{SyntheticCluster, fake_types, node_pool};
use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::nodepool::DisruptionReason;
use crate::runtime::clock::add;

const ZONE: &str = "test-zone-1";
const OD: &str = "on-demand";

fn t0() -> jiff::Timestamp {
    "2026-01-05T12:00:00Z".parse().expect("timestamp")
}

fn now() -> jiff::Timestamp {
    add(t0(), Duration::from_secs(3600))
}

/// `nodes` full 4-vCPU on-demand nodes (one 3-vCPU pod each, which fits on no other node),
/// the first `drifted` of them drifted, under a drift budget of `budget`.
fn drifted_cluster(nodes: usize, drifted: usize, budget: &str) -> SyntheticCluster {
    let mut c = SyntheticCluster::new(t0());
    let requirements = json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]);
    let disruption = json!({"consolidateAfter": "Never", "consolidationPolicy": "WhenEmptyOrUnderutilized",
                            "budgets": [{"nodes": budget}]});
    c.add_pool(node_pool("default", disruption, requirements), fake_types(8));
    for i in 0..nodes {
        let name = format!("n{i:02}");
        c.add_node(&name, "default", "c5.4xlarge", ZONE, OD);
        c.add_pod(&format!("p{i:02}"), "app", Some(&name), 3000, 256);
        if i < drifted {
            let at = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(add(t0(), Duration::from_secs(i as u64)));
            c.edit_claim(&name, |claim| {
                claim.set_condition("Drifted", ConditionStatus::True, "NodePoolDrifted", "", &at);
            });
        }
    }
    c
}

fn input(c: &SyntheticCluster) -> DisruptionInput {
    c.input(now(), DisruptionOptions::default())
}

/// One drift decision over the current state.
fn drift_once(c: &SyntheticCluster) -> (Option<Command>, Report) {
    let i = input(c);
    let (eventual, _) = get_candidates(&i, DisruptionClass::Eventual);
    let mut budgets = allowed_disruptions(&i, DisruptionReason::Drifted);
    let mut report = Report::default();
    (drift(&i, &eventual, &mut budgets, &mut report), report)
}

/// What the orchestration queue does when it starts `command`: the candidates are marked for
/// deletion and the replacements are launched (not yet initialized).
fn start(c: &mut SyntheticCluster, command: &Command, replacement_prefix: &str) {
    for (n, planned) in command.replacements.iter().enumerate() {
        c.add_in_flight_claim(&format!("{replacement_prefix}-{n}"), planned);
    }
    for name in command.candidate_names() {
        c.memory.marked_for_deletion.insert(name.to_string());
    }
}

fn assert_concurrent_drift(mut c: SyntheticCluster) {
    let (first, _) = drift_once(&c);
    let first = first.expect("the first drifted node is disrupted");
    assert_eq!(first.method, Method::Drift);
    assert_eq!(first.candidate_names(), ["n00"]);
    assert_eq!(first.replacements.len(), 1, "its pod fits on no other node");
    start(&mut c, &first, "r1");
    let (second, report) = drift_once(&c);
    let second = second.unwrap_or_else(|| panic!("the second drifted node is blocked: {report:?}"));
    assert_eq!(second.candidate_names(), ["n01"], "disrupted while r1-0 is still uninitialized");
    assert_eq!(second.replacements.len(), 1);
    start(&mut c, &second, "r2");
    let (third, _) = drift_once(&c);
    assert!(third.is_none(), "the budget of 2 is used up");
}

#[test]
fn two_drifted_nodes_under_a_budget_of_two_are_replaced_concurrently() {
    assert_concurrent_drift(drifted_cluster(2, 2, "2"));
}

#[test]
fn ten_percent_of_twenty_nodes_disrupts_two_at_once() {
    let mut c = drifted_cluster(20, 3, "10%");
    assert_eq!(allowed_disruptions(&input(&c), DisruptionReason::Drifted)["default"], 2);
    c.edit_claim("n02", |claim| {
        claim.clear_condition("Drifted");
    });
    assert_concurrent_drift(c);
}

#[test]
fn a_candidates_pod_may_not_rely_on_an_uninitialized_node() {
    let mut c = drifted_cluster(2, 2, "2");
    let (first, _) = drift_once(&c);
    let mut first = first.expect("the first drifted node is disrupted");
    // Launch a replacement big enough for both nodes' pods: n01's pod would now land on it.
    let big = c.instance_type("default", "m5.8xlarge");
    first.replacements[0].instance_type_options = vec![big];
    start(&mut c, &first, "r1");
    let i = input(&c);
    let (eventual, _) = get_candidates(&i, DisruptionClass::Eventual);
    let n01 = eventual.iter().find(|candidate| candidate.name == "n01").expect("n01 is a candidate");
    let error = simulate(&i, &[n01]).expect_err("n01's pod would only fit on the uninitialized r1-0");
    assert_eq!(error, SimulationError::UninitializedNode { pod: "default/p01".into(), node: "r1-0".into() });
    // n00's pod (on a deleting node) also lands there, and that alone is no error.
    assert!(i.deleting_node_pod_keys.contains("default/p00"));
}
