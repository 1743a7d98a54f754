//! Unit tests of the disruption rules, one per rule, on synthetic snapshots.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;

use super::budgets::{allowed_disruptions, pool_budget};
use super::candidates::{DisruptionClass, disruption_cost, get_candidates, pod_eviction_cost};
use super::command::{Decision, Method};
use super::consolidatable::{Consolidatable, consolidatable};
use super::consolidation::{ConsolidationBlocker, Unconsolidatable, compute, consolidation_blocker};
use super::controller::{LoopState, decide};
use super::emptiness::emptiness;
use super::input::{DisruptionInput, DisruptionOptions};
use super::multi_node::{first_n_consolidation, multi_node_candidates};
use super::report::Report;
use super::single_node::single_node;
use super::synthetic::{SyntheticCluster, fake_types, node_pool};
use super::validation::{Changed, Invalid, validate};
use crate::apis::nodepool::DisruptionReason;
use crate::runtime::Clock;
use crate::runtime::clock::{ManualClock, add};

const ZONE: &str = "test-zone-1";
const OD: &str = "on-demand";
const SPOT: &str = "spot";

fn t0() -> jiff::Timestamp {
    "2026-01-05T12:00:00Z".parse().expect("timestamp")
}

fn now() -> jiff::Timestamp {
    add(t0(), Duration::from_secs(3600))
}

fn od_only() -> serde_json::Value {
    json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])
}

fn disruption(budget: &str) -> serde_json::Value {
    json!({"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": [{"nodes": budget}]})
}

/// One on-demand pool `default` over `types` fake types.
fn cluster(types: usize, budget: &str) -> SyntheticCluster {
    let mut c = SyntheticCluster::new(t0());
    c.add_pool(node_pool("default", disruption(budget), od_only()), fake_types(types));
    c
}

fn input(c: &SyntheticCluster) -> DisruptionInput {
    c.input(now(), DisruptionOptions::default())
}

fn candidate_names(input: &DisruptionInput) -> Vec<String> {
    get_candidates(input, DisruptionClass::Graceful).0.into_iter().map(|c| c.name).collect()
}

fn blocked_reasons(input: &DisruptionInput) -> Vec<String> {
    get_candidates(input, DisruptionClass::Graceful).1.into_iter().map(|b| b.reason.to_string()).collect()
}

// ---- candidates ----

#[test]
fn pod_do_not_disrupt_blocks_until_its_duration_elapses() {
    let mut c = cluster(8, "100%");
    c.add_node("n1", "default", "c5.4xlarge", ZONE, OD);
    let key = c.add_pod("p1", "a", Some("n1"), 500, 256);
    c.edit_pod(&key, |p| {
        p.metadata.annotations = Some([("karpenter.sh/do-not-disrupt".to_string(), "true".to_string())].into());
    });
    assert!(candidate_names(&input(&c)).is_empty());
    assert!(blocked_reasons(&input(&c))[0].contains("do-not-disrupt"));
    // "30m" from a start time an hour ago has expired; "2h" has not.
    c.edit_pod(&key, |p| {
        p.metadata.annotations = Some([("karpenter.sh/do-not-disrupt".to_string(), "30m".to_string())].into());
    });
    assert_eq!(candidate_names(&input(&c)), ["n1"]);
    c.edit_pod(&key, |p| {
        p.metadata.annotations = Some([("karpenter.sh/do-not-disrupt".to_string(), "2h".to_string())].into());
    });
    assert!(candidate_names(&input(&c)).is_empty());
}

#[test]
fn node_do_not_disrupt_annotation_blocks_only_when_true() {
    let mut c = cluster(8, "100%");
    c.add_node("n1", "default", "c5.4xlarge", ZONE, OD);
    c.edit_node("n1", |n| {
        n.metadata.annotations = Some([("karpenter.sh/do-not-disrupt".to_string(), "false".to_string())].into());
    });
    assert_eq!(candidate_names(&input(&c)), ["n1"]);
    c.edit_node("n1", |n| {
        n.metadata.annotations = Some([("karpenter.sh/do-not-disrupt".to_string(), "true".to_string())].into());
    });
    assert!(candidate_names(&input(&c)).is_empty());
}

fn pdb(name: &str, app: &str, allowed: i32) -> std::sync::Arc<k8s_openapi::api::policy::v1::PodDisruptionBudget> {
    std::sync::Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": 1},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}
        }))
        .expect("pdb"),
    )
}

#[test]
fn pdbs_with_no_disruptions_allowed_or_more_than_one_pdb_block() {
    let mut c = cluster(8, "100%");
    c.add_node("n1", "default", "c5.4xlarge", ZONE, OD);
    c.add_pod("p1", "a", Some("n1"), 500, 256);
    c.snapshot.pdbs.insert("default/a".into(), pdb("a", "a", 1));
    assert_eq!(candidate_names(&input(&c)), ["n1"]);
    c.snapshot.pdbs.insert("default/a".into(), pdb("a", "a", 0));
    assert!(blocked_reasons(&input(&c))[0].contains("prevents pod evictions"));
    c.snapshot.pdbs.insert("default/a".into(), pdb("a", "a", 1));
    c.snapshot.pdbs.insert("default/a2".into(), pdb("a2", "a", 1));
    assert!(blocked_reasons(&input(&c))[0].contains("multiple PDBs"));
}

#[test]
fn nominated_uninitialized_and_deleting_nodes_are_not_candidates() {
    let mut c = cluster(8, "100%");
    for n in ["n1", "n2", "n3", "n4"] {
        c.add_node(n, "default", "c5.4xlarge", ZONE, OD);
    }
    c.memory.nominated.insert("n1".into(), add(now(), Duration::ZERO) - jiff::SignedDuration::from_secs(5));
    c.memory.nominated.insert("n4".into(), t0());
    c.edit_claim("n2", |claim| {
        use crate::apis::condition::StatusConditions;
        claim.clear_condition("Initialized");
    });
    c.edit_claim("n3", |claim| {
        claim.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t0()))
    });
    // n4 was nominated an hour ago, outside the 20 s window.
    assert_eq!(candidate_names(&input(&c)), ["n4"]);
}

#[test]
fn drift_ignores_pod_blockers_when_termination_grace_period_is_set() {
    let mut c = cluster(8, "100%");
    c.add_node("n1", "default", "c5.4xlarge", ZONE, OD);
    let key = c.add_pod("p1", "a", Some("n1"), 500, 256);
    c.edit_pod(&key, |p| {
        p.metadata.annotations = Some([("karpenter.sh/do-not-disrupt".to_string(), "true".to_string())].into());
    });
    let eventual = |c: &SyntheticCluster| get_candidates(&input(c), DisruptionClass::Eventual).0.len();
    assert_eq!(eventual(&c), 0);
    c.edit_claim("n1", |claim| {
        claim.spec.termination_grace_period = Some(crate::apis::GoDuration::parse("1h").expect("duration"));
    });
    assert_eq!(eventual(&c), 1);
    assert!(candidate_names(&input(&c)).is_empty(), "graceful methods still respect the blocker");
}

#[test]
fn disruption_cost_weighs_deletion_cost_priority_and_remaining_lifetime() {
    let mut c = cluster(8, "100%");
    c.add_node("n1", "default", "c5.4xlarge", ZONE, OD);
    let key = c.add_pod("p1", "a", Some("n1"), 500, 256);
    assert!((pod_eviction_cost(&c.snapshot.pods[&key]) - 1.0).abs() < 1e-12);
    c.edit_pod(&key, |p| {
        p.metadata.annotations =
            Some([("controller.kubernetes.io/pod-deletion-cost".to_string(), (1 << 27).to_string())].into());
        p.spec.as_mut().unwrap().priority = Some(1 << 25);
    });
    assert!((pod_eviction_cost(&c.snapshot.pods[&key]) - 3.0).abs() < 1e-9);
    c.edit_pod(&key, |p| p.spec.as_mut().unwrap().priority = Some(i32::MAX));
    assert!((pod_eviction_cost(&c.snapshot.pods[&key]) - 10.0).abs() < 1e-9, "clamped to 10");
    // expireAfter 4h, created an hour before `now`: three quarters of the lifetime remain.
    c.edit_claim("n1", |claim| claim.spec.expire_after = Some(crate::apis::NillableDuration::parse("4h").unwrap()));
    let pods: Vec<_> = c.snapshot.pods.values().cloned().collect();
    let cost = disruption_cost(&pods, &c.snapshot.node_claims["n1"], now());
    assert!((cost - 7.5).abs() < 1e-9, "{cost}");
}

// ---- budgets ----

#[test]
fn percentage_budgets_round_up_and_deleting_nodes_use_them() {
    let mut c = cluster(8, "10%");
    for i in 0..15 {
        c.add_node(&format!("n{i:02}"), "default", "c5.4xlarge", ZONE, OD);
    }
    // ceil(10% × 15) = 2
    assert_eq!(allowed_disruptions(&input(&c), DisruptionReason::Underutilized)["default"], 2);
    c.edit_claim("n00", |claim| {
        claim.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t0()));
    });
    c.memory.marked_for_deletion.insert("n01".into());
    assert_eq!(allowed_disruptions(&input(&c), DisruptionReason::Underutilized)["default"], 0);
    // A NotReady node counts as disrupting too.
    let mut d = cluster(8, "3");
    for i in 0..4 {
        d.add_node(&format!("n{i}"), "default", "c5.4xlarge", ZONE, OD);
    }
    d.edit_node("n0", |n| n.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into());
    assert_eq!(allowed_disruptions(&input(&d), DisruptionReason::Empty)["default"], 2);
}

#[test]
fn scheduled_budgets_apply_only_inside_their_window_and_to_their_reasons() {
    let pool = node_pool(
        "p",
        json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
            {"nodes": "5", "reasons": ["Drifted"]},
            {"nodes": "50%"}
        ]}),
        json!([]),
    );
    let monday_10 = "2026-01-05T10:00:00Z".parse().unwrap();
    let monday_18 = "2026-01-05T18:00:00Z".parse().unwrap();
    let saturday_10 = "2026-01-10T10:00:00Z".parse().unwrap();
    assert_eq!(pool_budget(&pool, DisruptionReason::Underutilized, 7, monday_10), 0);
    assert_eq!(pool_budget(&pool, DisruptionReason::Underutilized, 7, monday_18), 4, "ceil(50% × 7)");
    assert_eq!(pool_budget(&pool, DisruptionReason::Underutilized, 7, saturday_10), 4);
    assert_eq!(pool_budget(&pool, DisruptionReason::Drifted, 20, monday_18), 5);
    let broken = node_pool(
        "b",
        json!({"consolidateAfter": "0s", "budgets": [{"nodes": "10", "schedule": "not a cron", "duration": "1h"}]}),
        json!([]),
    );
    assert_eq!(pool_budget(&broken, DisruptionReason::Empty, 7, monday_10), 0, "fails closed");
    let broken_for_drift = node_pool(
        "d",
        json!({"consolidateAfter": "0s", "budgets": [
            {"nodes": "10"},
            {"nodes": "1", "reasons": ["Drifted"], "schedule": "not a cron", "duration": "1h"}
        ]}),
        json!([]),
    );
    assert_eq!(
        pool_budget(&broken_for_drift, DisruptionReason::Empty, 7, monday_10),
        0,
        "an invalid budget stops every reason, not only those it names"
    );
}

// ---- consolidatable ----

#[test]
fn consolidatable_waits_consolidate_after_since_the_last_pod_event() {
    let mut c = SyntheticCluster::new(t0());
    c.add_pool(node_pool("p", json!({"consolidateAfter": "10m"}), od_only()), fake_types(8));
    c.add_node("n1", "p", "c5.4xlarge", ZONE, OD);
    let pool = c.snapshot.node_pools["p"].clone();
    let claim = c.snapshot.node_claims["n1"].clone();
    assert_eq!(
        consolidatable(&claim, &pool, add(t0(), Duration::from_secs(540))),
        Consolidatable::NotYet(Duration::from_secs(60))
    );
    assert_eq!(consolidatable(&claim, &pool, add(t0(), Duration::from_secs(600))), Consolidatable::Yes);
    let mut moved = (*claim).clone();
    moved.status.as_mut().unwrap().last_pod_event_time =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(add(t0(), Duration::from_secs(300))));
    assert_eq!(
        consolidatable(&moved, &pool, add(t0(), Duration::from_secs(600))),
        Consolidatable::NotYet(Duration::from_secs(300))
    );
    let never = node_pool("p", json!({"consolidateAfter": "Never"}), od_only());
    assert_eq!(consolidatable(&claim, &never, now()), Consolidatable::Never);
    let mut fresh = (*claim).clone();
    {
        use crate::apis::condition::StatusConditions;
        fresh.clear_condition("Initialized");
    }
    // Core consolidation.go l. 52-59: an uninitialized claim loses the condition.
    assert_eq!(consolidatable(&fresh, &pool, now()), Consolidatable::NotInitialized);
    // ...but consolidation disabled is checked first (l. 44-50).
    assert_eq!(consolidatable(&fresh, &never, now()), Consolidatable::Never);
}

// ---- emptiness ----

#[test]
fn emptiness_deletes_consolidatable_empty_nodes_within_budget() {
    let mut c = cluster(8, "2");
    for n in ["a", "b", "c", "d"] {
        c.add_node(n, "default", "c5.4xlarge", ZONE, OD);
    }
    c.add_pod("p1", "x", Some("d"), 500, 256);
    c.edit_claim("c", |claim| {
        use crate::apis::condition::StatusConditions;
        claim.clear_condition("Consolidatable");
    });
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let mut budgets = allowed_disruptions(&i, DisruptionReason::Empty);
    let mut report = Report::default();
    let command = emptiness(&candidates, &mut budgets, &mut report).expect("a command");
    assert_eq!(command.candidate_names(), ["a", "b"], "c is not consolidatable, d is not empty");
    assert_eq!(command.decision(), Decision::Delete);
    assert_eq!(report.eligible["empty"], 2);
    // A budget of 1 takes only one.
    let mut budgets = [("default".to_string(), 1)].into();
    assert_eq!(emptiness(&candidates, &mut budgets, &mut report).unwrap().candidates.len(), 1);
}

// ---- delete vs replace ----

#[test]
fn a_node_whose_pods_fit_elsewhere_is_deleted() {
    let mut c = cluster(8, "100%");
    c.add_node("a", "default", "c5.4xlarge", ZONE, OD);
    c.add_node("b", "default", "m5.8xlarge", ZONE, OD);
    c.add_pod("pa", "x", Some("a"), 500, 256);
    for i in 0..3 {
        c.add_pod(&format!("pb{i}"), "y", Some("b"), 1200, 256);
    }
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let a = candidates.iter().find(|c| c.name == "a").unwrap();
    let command = compute(&i, Method::SingleNode, std::slice::from_ref(a)).expect("consolidatable");
    assert_eq!(command.decision(), Decision::Delete, "a's pod fits on b");
    // Only two of b's 1.2-vCPU pods fit beside a's pod; the third needs a new node, and a
    // 2-vCPU node is much cheaper than b.
    let b = candidates.iter().find(|c| c.name == "b").unwrap();
    let command = compute(&i, Method::SingleNode, std::slice::from_ref(b)).expect("consolidatable");
    assert_eq!(command.decision(), Decision::Replace);
    assert_eq!(command.replacements[0].pods.len(), 1);
    assert_eq!(command.replacements[0].instance_type_options[0].name, "m5.2xlarge");
}

#[test]
fn an_oversized_node_is_replaced_by_a_strictly_cheaper_one() {
    let mut c = cluster(8, "100%");
    c.add_node("big", "default", "m5.8xlarge", ZONE, OD);
    c.add_pod("p", "x", Some("big"), 1000, 1024);
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let command = compute(&i, Method::SingleNode, &candidates).expect("replace");
    assert_eq!(command.decision(), Decision::Replace);
    let options = &command.replacements[0].instance_type_options;
    assert_eq!(options[0].name, "m5.2xlarge", "cheapest first");
    assert!(options.iter().all(|it| it.name != "m5.8xlarge"));
    assert!(command.savings() > 2.9, "saves {}", command.savings());
}

#[test]
fn a_node_that_is_already_the_cheapest_fit_is_not_replaced() {
    let mut c = cluster(8, "100%");
    c.add_node("n", "default", "m5.2xlarge", ZONE, OD);
    c.add_pod("p", "x", Some("n"), 1000, 1024);
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let error = compute(&i, Method::SingleNode, &candidates).expect_err("not cheaper");
    assert_eq!(error, Unconsolidatable::NoCheaperReplacement);
    assert_eq!(error.to_string(), "Can't replace with a cheaper node");
}

#[test]
fn a_pod_that_fits_nowhere_else_keeps_its_node() {
    let mut c = cluster(8, "100%");
    c.add_node("n", "default", "m5.8xlarge", ZONE, OD);
    c.add_pod("huge", "x", Some("n"), 7000, 1024);
    // A pool that cannot launch anything bigger than 2 vCPU (besides the node's own type).
    let big = c.instance_type("default", "m5.8xlarge");
    c.pools[0].instance_types.truncate(2);
    c.pools[0].instance_types.push(big);
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let mut report = Report::default();
    let clock = ManualClock::new(now());
    let budgets = allowed_disruptions(&i, DisruptionReason::Underutilized);
    assert!(
        single_node(&i, &candidates, &budgets, &clock, &mut BTreeSet::new(), &BTreeMap::new(), &mut report).is_none()
    );
    assert_eq!(report.notes[0].reason, "Unconsolidatable");
    assert!(report.notes[0].message.contains("Can't replace with a cheaper node"), "{}", report.notes[0].message);
}

#[test]
fn when_empty_pools_and_non_consolidatable_nodes_are_left_to_emptiness() {
    let mut c = SyntheticCluster::new(t0());
    c.add_pool(
        node_pool("p", json!({"consolidateAfter": "0s", "consolidationPolicy": "WhenEmpty"}), od_only()),
        fake_types(8),
    );
    c.add_node("n", "p", "m5.8xlarge", ZONE, OD);
    c.add_pod("p", "x", Some("n"), 1000, 1024);
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    assert_eq!(consolidation_blocker(&candidates[0]), Some(ConsolidationBlocker::WhenEmptyPolicy));
    let mut state = LoopState::default();
    let clock = ManualClock::new(now());
    assert!(decide(&i, &clock, &mut state, &mut Report::default()).is_none());
}

// ---- spot-to-spot ----

fn spot_cluster(types: usize, node_type: &str) -> SyntheticCluster {
    let mut c = SyntheticCluster::new(t0());
    let both = json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}]);
    c.add_pool(node_pool("default", disruption("100%"), both), fake_types(types));
    c.add_node("s", "default", node_type, ZONE, SPOT);
    c.add_pod("p", "x", Some("s"), 1000, 1024);
    c
}

#[test]
fn spot_nodes_are_only_replaced_behind_the_feature_gate_with_fifteen_cheaper_types() {
    let c = spot_cluster(8, "m5.8xlarge");
    let off = input(&c);
    let (candidates, _) = get_candidates(&off, DisruptionClass::Graceful);
    let error = compute(&off, Method::SingleNode, &candidates).expect_err("gate off");
    assert_eq!(error, Unconsolidatable::SpotToSpotDisabled);
    let gate_on = DisruptionOptions { spot_to_spot: true, ..DisruptionOptions::default() };
    let on = c.input(now(), gate_on.clone());
    let error = compute(&on, Method::SingleNode, &candidates).expect_err("too few cheaper types");
    assert!(matches!(error, Unconsolidatable::TooFewCheaperSpotTypes(n) if n < 15), "{error}");
    assert!(error.to_string().contains("requires 15 cheaper instance type options"), "{error}");
    // A 40-vCPU spot node among 60 types has plenty of cheaper spot options.
    let big = spot_cluster(60, "c5.40xlarge");
    let on = big.input(now(), gate_on);
    let (candidates, _) = get_candidates(&on, DisruptionClass::Graceful);
    let command = compute(&on, Method::SingleNode, &candidates).expect("spot to spot");
    let replacement = &command.replacements[0];
    assert_eq!(replacement.instance_type_options.len(), 15, "truncated to the 15 cheapest");
    assert!(!replacement.requirements.allows("karpenter.sh/capacity-type", "on-demand"));
}

#[test]
fn on_demand_replaced_where_spot_is_allowed_is_pinned_to_spot() {
    let mut c = SyntheticCluster::new(t0());
    let both = json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}]);
    c.add_pool(node_pool("default", disruption("100%"), both), fake_types(8));
    c.add_node("n", "default", "m5.8xlarge", ZONE, OD);
    c.add_pod("p", "x", Some("n"), 1000, 1024);
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let command = compute(&i, Method::SingleNode, &candidates).expect("replace");
    assert!(!command.replacements[0].requirements.allows("karpenter.sh/capacity-type", "on-demand"));
}

// ---- validation ----

#[test]
fn validation_aborts_when_the_cluster_changed() {
    let mut c = cluster(8, "100%");
    c.add_node("a", "default", "c5.4xlarge", ZONE, OD);
    c.add_node("b", "default", "c5.4xlarge", ZONE, OD);
    c.add_pod("pa", "x", Some("a"), 500, 256);
    for i in 0..3 {
        c.add_pod(&format!("pb{i}"), "y", Some("b"), 1000, 256);
    }
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let a = candidates.iter().find(|c| c.name == "a").unwrap().clone();
    let command = compute(&i, Method::SingleNode, &[a]).expect("delete");
    assert!(validate(&input(&c), &command).is_ok(), "unchanged cluster validates");
    // A pod lands on b meanwhile: a's pod no longer fits there.
    c.add_pod("late", "z", Some("b"), 800, 256);
    let error = validate(&input(&c), &command).expect_err("changed");
    assert!(error.to_string().contains("replacement"), "{error}");
    // Or a's claim stops being consolidatable (a pod event).
    let mut d = c.clone();
    d.snapshot.pods.remove("default/late");
    d.edit_claim("a", |claim| {
        use crate::apis::condition::StatusConditions;
        claim.clear_condition("Consolidatable");
    });
    let error = validate(&input(&d), &command).expect_err("churn");
    assert_eq!(
        error,
        Invalid::Changed { name: "a".into(), why: Changed::Consolidation(ConsolidationBlocker::NotConsolidatable) }
    );
}

// ---- multi-node ----

/// A clock that moves forward by `step` every time it is read.
struct TickingClock(Mutex<jiff::Timestamp>, Duration);

impl Clock for TickingClock {
    fn now(&self) -> jiff::Timestamp {
        let mut t = self.0.lock().unwrap();
        let current = *t;
        *t = add(current, self.1);
        current
    }
}

fn four_quiet_nodes() -> SyntheticCluster {
    let mut c = cluster(8, "100%");
    for n in ["a", "b", "c", "d"] {
        c.add_node(n, "default", "c5.4xlarge", ZONE, OD);
        c.add_pod(&format!("p-{n}"), "x", Some(n), 500, 256);
    }
    c
}

#[test]
fn multi_node_binary_search_finds_the_longest_consolidatable_prefix() {
    let c = four_quiet_nodes();
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let mut budgets = allowed_disruptions(&i, DisruptionReason::Underutilized);
    let sorted = multi_node_candidates(&candidates, &mut budgets, &mut Report::default());
    let command = first_n_consolidation(&i, &sorted, &ManualClock::new(now()), &BTreeMap::new()).expect("a command");
    // Replacing all four would need a c5.4xlarge, the type they already run (that is really
    // deleting three), so the longest valid prefix is three nodes deleted onto the fourth.
    assert_eq!(command.candidates.len(), 3);
    assert_eq!(command.decision(), Decision::Delete);
    // A budget of 2 caps the prefix at two.
    let mut budgets = [("default".to_string(), 2)].into();
    let sorted = multi_node_candidates(&candidates, &mut budgets, &mut Report::default());
    assert_eq!(sorted.len(), 2);
    let command = first_n_consolidation(&i, &sorted, &ManualClock::new(now()), &BTreeMap::new()).expect("a command");
    assert_eq!(command.candidates.len(), 2);
    // Larger nodes are replaced together by one cheaper node of another type.
    let mut big = cluster(16, "100%");
    for n in ["a", "b", "c"] {
        big.add_node(n, "default", "m5.8xlarge", ZONE, OD);
        big.add_pod(&format!("p-{n}"), "x", Some(n), 1000, 1024);
    }
    let i = input(&big);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let mut budgets = allowed_disruptions(&i, DisruptionReason::Underutilized);
    let sorted = multi_node_candidates(&candidates, &mut budgets, &mut Report::default());
    let command = first_n_consolidation(&i, &sorted, &ManualClock::new(now()), &BTreeMap::new()).expect("a command");
    assert_eq!(command.candidates.len(), 3);
    assert_eq!(command.decision(), Decision::Replace);
    assert!(command.replacements[0].instance_type_options.iter().all(|it| it.name != "m5.8xlarge"));
}

#[test]
fn multi_node_timeout_keeps_the_best_command_so_far() {
    let c = four_quiet_nodes();
    let i = input(&c);
    let (candidates, _) = get_candidates(&i, DisruptionClass::Graceful);
    let mut budgets = allowed_disruptions(&i, DisruptionReason::Underutilized);
    let sorted = multi_node_candidates(&candidates, &mut budgets, &mut Report::default());
    // Reads: deadline (t), first check (t+40 s, in time), second check (t+80 s, too late).
    let clock = TickingClock(Mutex::new(now()), Duration::from_secs(40));
    let command = first_n_consolidation(&i, &sorted, &clock, &BTreeMap::new()).expect("the first probe's command");
    assert_eq!(command.candidates.len(), 3, "the first probe, three nodes, was kept");
    assert_eq!(command.decision(), Decision::Delete, "three pods fit on the fourth node");
    let clock = TickingClock(Mutex::new(now()), Duration::from_secs(61));
    assert!(first_n_consolidation(&i, &sorted, &clock, &BTreeMap::new()).is_none(), "timed out before the first probe");
}

#[test]
fn decide_prefers_emptiness_then_consolidation() {
    let mut c = four_quiet_nodes();
    c.add_node("empty", "default", "c5.4xlarge", ZONE, OD);
    let i = input(&c);
    let clock = ManualClock::new(now());
    let mut state = LoopState::default();
    let command = decide(&i, &clock, &mut state, &mut Report::default()).expect("a command");
    assert_eq!(command.method, Method::Emptiness);
    c.snapshot.nodes.remove("empty");
    c.snapshot.node_claims.remove("empty");
    let command = decide(&input(&c), &clock, &mut state, &mut Report::default()).expect("a command");
    assert_eq!(command.method, Method::MultiNode);
}

#[test]
fn an_unchanged_cluster_is_not_re_simulated_until_the_refresh() {
    let mut c = cluster(8, "100%");
    c.add_node("n", "default", "m5.2xlarge", ZONE, OD);
    c.add_pod("p", "x", Some("n"), 1000, 1024);
    let clock = ManualClock::new(now());
    let mut state = LoopState::default();
    let mut report = Report::default();
    assert!(decide(&input(&c), &clock, &mut state, &mut report).is_none());
    assert_eq!(report.notes.len(), 1, "the single-node attempt is reported");
    let mut report = Report::default();
    assert!(decide(&input(&c), &clock, &mut state, &mut report).is_none());
    assert!(report.notes.is_empty(), "skipped: nothing changed");
}
