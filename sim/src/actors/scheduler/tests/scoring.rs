//! Scoring, seeded tie-breaks, the adaptive share of nodes evaluated, and the failure messages.

use super::*;

#[test]
fn least_allocated_spreads_and_most_allocated_packs() {
    let nodes = [node("a", "z0", "4", "8Gi", "20"), node("b", "z0", "4", "8Gi", "20")];
    let mut r = rng();
    let mut least = scheduler(&nodes);
    least.cache_mut().upsert_node(&nodes[0]);
    place(&mut least, &pod("seed", "2", "4Gi"), &mut r).unwrap();
    let seeded = least.cache().node("a").unwrap().pods.len() == 1;
    let emptier = if seeded { "b" } else { "a" };
    assert_eq!(place(&mut least, &pod("p", "500m", "500Mi"), &mut r), Ok(emptier.to_string()));

    let mut most = Scheduler::new(SchedulerConfig {
        scoring_strategy: ScoringStrategy::MostAllocated,
        ..SchedulerConfig::default()
    });
    for n in &nodes {
        most.cache_mut().upsert_node(n);
    }
    let first = place(&mut most, &pod("seed", "2", "4Gi"), &mut r).unwrap();
    for i in 0..3 {
        assert_eq!(place(&mut most, &pod(&format!("p{i}"), "500m", "500Mi"), &mut r), Ok(first.clone()));
    }
}

#[test]
fn ties_are_broken_by_the_seed() {
    let nodes: Vec<Node> = (0..8).map(|i| node(&format!("n{i}"), "z0", "8", "8Gi", "20")).collect();
    let run = |seed: u64| {
        let mut s = scheduler(&nodes);
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        (0..4).map(|i| s.schedule(&pod(&format!("p{i}"), "100m", "100Mi"), &mut r).unwrap().node).collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    let distinct: std::collections::BTreeSet<Vec<String>> = (0..16).map(run).collect();
    assert!(distinct.len() > 1, "different seeds pick different tied nodes");
}

#[test]
fn large_clusters_evaluate_the_adaptive_percentage_of_nodes() {
    assert_eq!(feasible_nodes_to_find(None, 50), 50);
    assert_eq!(feasible_nodes_to_find(None, 1000), 420);
    assert_eq!(feasible_nodes_to_find(None, 6000), 300);
    assert_eq!(feasible_nodes_to_find(Some(100), 1000), 1000);
    let nodes: Vec<Node> =
        (0..1000).map(|i| node(&format!("n{i:04}"), &format!("z{}", i % 3), "8", "8Gi", "20")).collect();
    let mut s = scheduler(&nodes);
    let res = s.schedule(&pod("p", "100m", "100Mi"), &mut rng()).unwrap();
    assert_eq!((res.evaluated_nodes, res.feasible_nodes), (420, 420));
}

#[test]
fn no_nodes_gives_the_no_nodes_message() {
    let mut s = scheduler(&[]);
    let err = s.schedule(&pod("p", "1", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(err, SchedulingFailure::NoNodes);
    assert_eq!(err.message(), "no nodes available to schedule pods");
}

#[test]
fn preemption_policy_never_changes_the_post_filter_message() {
    let mut s = scheduler(&[node("a", "z0", "1", "8Gi", "20")]);
    let mut p = pod("p", "2", "1Gi");
    spec(&mut p).preemption_policy = Some("Never".into());
    let err = place(&mut s, &p, &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    );
}
