//! The `DisruptionBlocked` event a NodePool gets when its budget allows no disruption for a
//! reason although it has nodes (core `disruption/helpers.go` `BuildDisruptionBudgetMapping`:
//! `if numNodes != 0 && allowedDisruptions == 0 { Publish(NodePoolBlockedForDisruptionReason) }`).

use std::time::Duration;

use serde_json::json;

use super::budgets::blocked_pools;
use super::input::DisruptionOptions;
use super::synthetic::{SyntheticCluster, fake_types, node_pool};
use crate::apis::nodepool::DisruptionReason;
use crate::runtime::clock::add;

fn t0() -> jiff::Timestamp {
    "2026-01-05T12:00:00Z".parse().expect("timestamp")
}

fn pool_with(budgets: serde_json::Value, nodes: usize) -> SyntheticCluster {
    let mut c = SyntheticCluster::new(t0());
    let requirements = json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]);
    let disruption =
        json!({"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": budgets});
    c.add_pool(node_pool("default", disruption, requirements), fake_types(4));
    for i in 0..nodes {
        c.add_node(&format!("n{i}"), "default", "c5.4xlarge", "test-zone-1", "on-demand");
    }
    c
}

fn blocked(c: &SyntheticCluster, reason: DisruptionReason) -> Vec<String> {
    let input = c.input(add(t0(), Duration::from_secs(3600)), DisruptionOptions::default());
    blocked_pools(&input, reason).iter().map(|p| p.metadata.name.clone().unwrap_or_default()).collect()
}

#[test]
fn a_zero_budget_for_a_reason_blocks_only_that_reason() {
    let c = pool_with(json!([{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "10%"}]), 3);
    assert_eq!(blocked(&c, DisruptionReason::Drifted), ["default"]);
    assert!(blocked(&c, DisruptionReason::Underutilized).is_empty());
    assert!(blocked(&c, DisruptionReason::Empty).is_empty());
}

#[test]
fn a_pool_without_nodes_is_not_reported() {
    let c = pool_with(json!([{"nodes": "0"}]), 0);
    assert!(blocked(&c, DisruptionReason::Underutilized).is_empty());
    let c = pool_with(json!([{"nodes": "0"}]), 1);
    assert_eq!(blocked(&c, DisruptionReason::Underutilized), ["default"]);
}

#[test]
fn nodes_already_disrupting_do_not_make_a_pool_blocked() {
    // Upstream compares the budget before subtracting disrupting nodes: a budget of 1 with one
    // node deleting leaves 0 to start, but is not "blocking".
    let mut c = pool_with(json!([{"nodes": "1"}]), 2);
    c.memory.marked_for_deletion.insert("n0".into());
    assert!(blocked(&c, DisruptionReason::Underutilized).is_empty());
}
