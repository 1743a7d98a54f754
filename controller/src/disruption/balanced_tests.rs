//! Ported from core `pkg/controllers/disruption/balanced_scoring_test.go` (HEAD 2266468):
//! each test names the upstream `Describe`/`It` it follows.

use std::collections::BTreeMap;

use super::*;

/// `makeCandidate(name, np, it, pods)` with default-cost pods (EvictionCost 1 each).
fn cand(pool: &str, balanced: bool, price: f64, pods: usize) -> Scored {
    Scored { pool: pool.into(), balanced, price, disruption: 1.0 + pods as f64 }
}

fn totals_of(candidates: &[Scored]) -> BTreeMap<String, PoolTotals> {
    pool_totals(candidates, &[], &BTreeMap::new())
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

#[test]
fn compute_node_pool_totals_should_produce_totals_from_all_candidates() {
    // "should produce totals from ALL candidates, not just a filtered subset"
    let all: Vec<Scored> = (0..5).map(|_| cand("pool-a", true, 4.84, 1)).collect();
    let t = totals_of(&all)["pool-a"];
    assert!(close(t.total_cost, 5.0 * 4.84, 0.01), "{t:?}");
    assert!(close(t.total_disruption_cost, 10.0, 0.01), "{t:?}");
}

#[test]
fn compute_node_pool_totals_should_accumulate_disruption_from_zero_priced_candidates() {
    // "should accumulate disruption from zero-priced candidates"
    let all = [cand("pool-b", true, 4.84, 1), cand("pool-b", true, 0.0, 1), cand("pool-b", true, 4.84, 1)];
    let t = totals_of(&all)["pool-b"];
    assert!(close(t.total_cost, 2.0 * 4.84, 0.01), "{t:?}");
    assert!(close(t.total_disruption_cost, 6.0, 0.01), "{t:?}");
}

#[test]
fn non_candidate_nodes_count_in_the_disruption_denominator_and_pool_cost_wins_when_positive() {
    // computeNodePoolTotals: "Non-candidate nodes still contribute to the denominators";
    // ClusterCost's pool cost replaces the candidates' sum when positive.
    let all = [cand("p", true, 1.0, 1)];
    let others = [("p".to_string(), 3.0), ("q".to_string(), 5.0)];
    let cost = BTreeMap::from([("p".to_string(), 7.0)]);
    let t = pool_totals(&all, &others, &cost);
    assert_eq!(t["p"], PoolTotals { total_cost: 7.0, total_disruption_cost: 5.0 });
    assert!(!t.contains_key("q"), "only pools with candidates get totals");
}

#[test]
fn evaluate_balanced_move_should_reject_when_command_has_zero_candidates() {
    let totals =
        BTreeMap::from([("pool-a".to_string(), PoolTotals { total_cost: 100.0, total_disruption_cost: 50.0 })]);
    let (approved, per_pool) = evaluate(&[], 0.0, &totals);
    assert!(!approved);
    assert!(per_pool.is_empty());
}

#[test]
fn evaluate_balanced_move_should_skip_non_balanced_pools_and_approve_unconditionally() {
    let all: Vec<Scored> = (0..5).map(|_| cand("pool-nobalanced", false, 4.84, 1)).collect();
    let totals = totals_of(&all);
    let (approved, per_pool) = evaluate(&all[..2], 2.0 * 4.84, &totals);
    assert!(!per_pool.contains_key("pool-nobalanced"));
    assert!(approved);
}

#[test]
fn evaluate_balanced_move_should_reject_when_candidate_node_pool_is_missing_from_totals() {
    let c = [cand("pool-missing", true, 4.84, 1)];
    let (approved, per_pool) = evaluate(&c, 4.84, &BTreeMap::new());
    assert_eq!(per_pool["pool-missing"].score(), 0.0);
    assert!(!per_pool["pool-missing"].approved());
    assert!(!approved);
}

#[test]
fn evaluate_balanced_move_should_approve_a_delete_command_for_a_single_balanced_node_pool() {
    let all: Vec<Scored> = (0..10).map(|_| cand("pool-single", true, 4.84, 1)).collect();
    let totals = totals_of(&all);
    let (approved, per_pool) = evaluate(&all[..1], 4.84, &totals);
    // savings fraction 0.10, disruption fraction 0.10: score 1.0 ≥ 0.5.
    assert!(approved);
    assert!(close(per_pool["pool-single"].score(), 1.0, 0.05));
}

#[test]
fn evaluate_balanced_move_should_attribute_savings_proportionally_across_node_pools() {
    let mut all: Vec<Scored> = (0..5).map(|_| cand("pool-balanced", true, 4.84, 1)).collect();
    all.extend((0..5).map(|_| cand("pool-empty", false, 4.84, 1)));
    let totals = totals_of(&all);
    let command = [all[0].clone(), all[5].clone()];
    let (approved, per_pool) = evaluate(&command, 2.0 * 4.84, &totals);
    // Half the savings is pool-balanced's: 0.2 of its cost for 0.2 of its disruption.
    assert!(approved);
    assert!(close(per_pool["pool-balanced"].score(), 1.0, 0.05));
    assert!(!per_pool.contains_key("pool-empty"));
}

#[test]
fn evaluate_balanced_move_all_pools_must_approve() {
    // Context "AllPoolsMustApprove": pool A 10 one-pod nodes, pool B a heavy and a light node.
    let a: Vec<Scored> = (0..10).map(|_| cand("pool-a", true, 4.84, 1)).collect();
    let heavy = |pods| vec![cand("pool-b", true, 1.0, pods), cand("pool-b", true, 1.0, 1)];
    for (pods, want) in [(20, 0.5 / (21.0 / 23.0)), (40, 0.5 / (41.0 / 43.0))] {
        let b = heavy(pods);
        let all: Vec<Scored> = a.iter().chain(&b).cloned().collect();
        let totals = totals_of(&all);
        let command = [a[0].clone(), b[0].clone()];
        let (approved, per_pool) = evaluate(&command, 4.84 + 1.0, &totals);
        assert!(close(per_pool["pool-b"].score(), want, 0.01), "{pods}: {:?}", per_pool["pool-b"]);
        assert!(close(per_pool["pool-a"].score(), 1.0, 0.01));
        assert!(approved, "borderline above 0.5");
    }
    // A third node in pool B: the heavy node is a third of its cost for 21/25 of its
    // disruption (score 0.40): pool B rejects, and so does the move.
    let mut b = heavy(20);
    b.push(cand("pool-b", true, 1.0, 1));
    let all: Vec<Scored> = a.iter().chain(&b).cloned().collect();
    let (approved, per_pool) = evaluate(&[a[0].clone(), b[0].clone()], 5.84, &totals_of(&all));
    assert!(!per_pool["pool-b"].approved() && per_pool["pool-a"].approved());
    assert!(!approved);
}

#[test]
fn score_move_savings_ratio_table() {
    // DescribeTable "should compute correct scores", totals 100/100, k = 2.
    let totals = PoolTotals { total_cost: 100.0, total_disruption_cost: 100.0 };
    let entries = [
        ("high savings low disruption", 20.0, 5.0, 4.0, true, false),
        ("equal fractions", 10.0, 10.0, 1.0, true, false),
        ("low savings high disruption", 5.0, 50.0, 0.10, false, false),
        ("zero disruption cost", 10.0, 0.0, 0.0, true, true),
        ("zero savings", 0.0, 10.0, 0.0, false, false),
        ("negative savings", -5.0, 10.0, 0.0, false, false),
    ];
    for (name, savings, disruption, score, approved, infinite) in entries {
        let r = score_move(savings, disruption, totals, 2);
        if infinite {
            assert!(r.score().is_infinite() && r.score() > 0.0, "{name}");
        } else {
            assert!(close(r.score(), score, 0.01), "{name}: {}", r.score());
        }
        assert_eq!(r.approved(), approved, "{name}");
    }
}

#[test]
fn can_pass_threshold_is_the_delete_score_and_passes_other_policies() {
    // CanPassThreshold: a DELETE is the best case; non-Balanced pools and pools without cost pass.
    let all: Vec<Scored> = (0..4).map(|_| cand("p", true, 1.0, 1)).collect();
    let mut heavy = cand("p", true, 1.0, 30);
    let totals = totals_of(&[all.clone(), vec![heavy.clone()]].concat());
    assert!(can_pass_threshold(&all[0], &totals), "0.2 of cost for 2/39 of disruption");
    assert!(!can_pass_threshold(&heavy, &totals), "0.2 of cost for 31/39 of disruption");
    heavy.balanced = false;
    assert!(can_pass_threshold(&heavy, &totals));
    assert!(can_pass_threshold(&cand("unknown", true, 1.0, 30), &totals));
}

// ---- through the controller's candidates (synthetic cluster) ----

mod cluster {
    use super::super::totals_for;
    use crate::disruption::candidates::{DisruptionClass, get_candidates, sort_by_savings_ratio};
    use crate::disruption::controller::{LoopState, decide};
    use crate::disruption::input::{DisruptionInput, DisruptionOptions};
    use crate::disruption::report::Report;
    use crate::disruption::synthetic::{SyntheticCluster, fake_types, node_pool};
    use crate::runtime::clock::ManualClock;

    fn t0() -> jiff::Timestamp {
        "2026-01-05T12:00:00Z".parse().expect("timestamp")
    }

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(t0().as_second() + 3600).expect("time")
    }

    /// Pool `default` with `policy` and eight fake instance types, no node yet.
    fn cluster(policy: &str) -> SyntheticCluster {
        let mut c = SyntheticCluster::new(t0());
        let disruption = serde_json::json!({"consolidateAfter": "0s", "consolidationPolicy": policy, "budgets": [{"nodes": "100%"}]});
        let od = serde_json::json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]);
        c.add_pool(node_pool("default", disruption, od), fake_types(8));
        c
    }

    fn input(c: &SyntheticCluster) -> DisruptionInput {
        c.input(now(), DisruptionOptions::default())
    }

    #[test]
    fn sort_candidates_by_savings_ratio_highest_first() {
        // "sortCandidates > should sort Balanced candidates by savings ratio (highest first)"
        // and "... non-Balanced candidates by savings ratio descending": the order is the
        // same for every policy.
        for policy in ["Balanced", "WhenEmptyOrUnderutilized"] {
            let mut c = cluster(policy);
            for (n, pods) in [("a", 1), ("b", 3), ("d", 2)] {
                c.add_node(n, "default", "c5.4xlarge", "test-zone-1", "on-demand");
                for p in 0..pods {
                    c.add_pod(&format!("p-{n}-{p}"), "x", Some(n), 500, 256);
                }
            }
            let i = input(&c);
            let (mut candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
            sort_by_savings_ratio(&mut candidates);
            let order: Vec<&str> = candidates.iter().map(|c| c.node_name.as_str()).collect();
            assert_eq!(order, ["a", "d", "b"], "{policy}: same price, fewer pods first");
            let ratio = candidates[0].savings_ratio();
            let price = candidates[0].price.expect("priced");
            assert!((ratio - price / 2.0).abs() < 1e-12, "price / (1 + one default-cost pod)");
        }
    }

    #[test]
    fn balanced_pool_keeps_a_node_whose_delete_scores_below_half() {
        // Four equal nodes; a carries 9 pods, b, c and d one do-not-disrupt pod each (no
        // candidates, but in the totals: "Non-candidate nodes still contribute to the
        // denominators"). Deleting a saves a quarter of the pool's cost for 10/16 of its
        // disruption: score 0.4 < 1/2, so Balanced keeps it; the default policy deletes it.
        for (policy, want) in [("Balanced", false), ("WhenEmptyOrUnderutilized", true)] {
            let mut c = cluster(policy);
            for n in ["a", "b", "c", "d"] {
                c.add_node(n, "default", "c5.4xlarge", "test-zone-1", "on-demand");
            }
            for p in 0..9 {
                c.add_pod(&format!("p-a-{p}"), "x", Some("a"), 100, 64);
            }
            for n in ["b", "c", "d"] {
                let key = c.add_pod(&format!("p-{n}"), "x", Some(n), 100, 64);
                c.edit_pod(&key, |pod| {
                    pod.metadata
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert("karpenter.sh/do-not-disrupt".into(), "true".into());
                });
            }
            let i = input(&c);
            let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
            assert_eq!(candidates.len(), 1);
            let totals = totals_for(&i, &candidates);
            assert_eq!(totals["default"].total_disruption_cost, 10.0 + 3.0 * 2.0);
            assert!((totals["default"].total_cost - 4.0 * candidates[0].price.expect("priced")).abs() < 1e-9);
            let mut state = LoopState::default();
            let command = decide(&i, &ManualClock::new(now()), &mut state, &mut Report::default());
            let names: Vec<String> =
                command.map(|c| c.candidates.iter().map(|c| c.node_name.clone()).collect()).unwrap_or_default();
            assert_eq!(names.contains(&"a".to_string()), want, "{policy}: {names:?}");
        }
    }
}
