//! The disruption loop's memory (issue 20, deviation 7): a consolidation attempt that a budget
//! held back does not mark the cluster consolidated (core `singlenodeconsolidation.go`
//! l. 80-84 and 116-121, `multinodeconsolidation.go` l. 66-94), so when the budget opens the
//! same, unchanged cluster is consolidated at once instead of after the 5-minute refresh.

use std::time::Duration;

use serde_json::json;

use super::command::Method;
use super::controller::{LoopState, decide};
use super::input::DisruptionOptions;
use super::report::Report;
use super::synthetic::{SyntheticCluster, fake_types, node_pool};
use crate::runtime::clock::{ManualClock, add};

fn t0() -> jiff::Timestamp {
    "2026-01-05T12:00:00Z".parse().expect("timestamp")
}

/// Two half-empty on-demand nodes whose pods fit on one of them, under `budget`.
fn two_half_empty_nodes(budget: &str) -> SyntheticCluster {
    let mut c = SyntheticCluster::new(t0());
    let requirements = json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]);
    let disruption = json!({"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized",
                            "budgets": [{"nodes": budget}]});
    c.add_pool(node_pool("default", disruption, requirements), fake_types(8));
    for n in ["a", "b"] {
        c.add_node(n, "default", "c5.4xlarge", "test-zone-1", "on-demand");
        c.add_pod(&format!("p-{n}"), "x", Some(n), 500, 256);
    }
    c
}

#[test]
fn a_budget_that_blocks_consolidation_does_not_mark_the_cluster_consolidated() {
    let now = add(t0(), Duration::from_secs(3600));
    let clock = ManualClock::new(now);
    let mut state = LoopState::default();
    let blocked = two_half_empty_nodes("0");
    let input = blocked.input(now, DisruptionOptions::default());
    assert!(decide(&input, &clock, &mut state, &mut Report::default()).is_none());
    assert!(state.consolidated.is_none(), "budget-constrained: not consolidated");
    // The budget opens (a schedule window, an edit): the unchanged nodes consolidate at once.
    let open = two_half_empty_nodes("100%");
    let input = open.input(now, DisruptionOptions::default());
    let command = decide(&input, &clock, &mut state, &mut Report::default()).expect("a command");
    assert!(matches!(command.method, Method::MultiNode | Method::SingleNode));
}

#[test]
fn an_unconstrained_attempt_that_finds_nothing_marks_the_cluster_consolidated() {
    let now = add(t0(), Duration::from_secs(3600));
    let clock = ManualClock::new(now);
    let mut state = LoopState::default();
    let mut c = two_half_empty_nodes("100%");
    c.snapshot.nodes.remove("b");
    c.snapshot.node_claims.remove("b");
    c.snapshot.pods.remove("default/p-b");
    c.edit_pod("default/p-a", |p| {
        let requests = &mut p.spec.as_mut().expect("spec").containers[0].resources.as_mut().expect("resources");
        requests
            .requests
            .as_mut()
            .expect("requests")
            .insert("cpu".into(), k8s_openapi::apimachinery::pkg::api::resource::Quantity("3500m".into()));
    });
    let input = c.input(now, DisruptionOptions::default());
    assert!(decide(&input, &clock, &mut state, &mut Report::default()).is_none(), "c5.4xlarge is the cheapest fit");
    assert!(state.consolidated.is_some());
}

/// Core `emptiness.go` l. 71-92: empty nodes that an `Empty` budget of 0 holds back do not let
/// the loop mark the cluster consolidated; with the budget open they are deleted.
#[test]
fn a_budget_that_blocks_emptiness_does_not_mark_the_cluster_consolidated() {
    let now = add(t0(), Duration::from_secs(3600));
    let clock = ManualClock::new(now);
    let mut state = LoopState::default();
    let empty = |budget: &str| {
        let mut c = two_half_empty_nodes(budget);
        c.snapshot.pods.clear();
        c
    };
    let input = empty("0").input(now, DisruptionOptions::default());
    assert!(decide(&input, &clock, &mut state, &mut Report::default()).is_none());
    assert!(state.consolidated.is_none(), "empty nodes held back by the budget: not consolidated");
    let input = empty("100%").input(now, DisruptionOptions::default());
    let command = decide(&input, &clock, &mut state, &mut Report::default()).expect("a command");
    assert_eq!(command.method, Method::Emptiness);
}
