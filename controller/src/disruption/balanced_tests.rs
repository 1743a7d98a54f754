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
