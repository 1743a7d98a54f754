//! `dovetail explain` against the oracle: at the end of two library stories every NodeClaim
//! gets a reason, and each reason agrees with what the simulator sees independently of the
//! controller — the objects themselves (do-not-disrupt pods, deletion, initialization, PDB
//! status), the oracle's budget arithmetic, and the cost oracle's verdict at the same moment
//! (its `kept` rules and `untakenMoves` in the report).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dovetail_sim::explain::capture::explain_run;
use dovetail_sim::explain::karpenter_message::KarpenterReason;
use dovetail_sim::explain::node_status::NodeStatus;
use dovetail_sim::explain::pending_pod::PodStatus;
use dovetail_sim::explain::{Explanation, NodeExplanation};
use dovetail_sim::oracle::budget::{allowed_for_reason, wall_time};
use dovetail_sim::oracle::protection::do_not_disrupt_active;
use dovetail_sim::oracle::view::{key, read_pods};
use dovetail_sim::run::Outcome;
use dovetail_sim::scenario::Loaded;
use dovetail_sim::world::ScenarioWorld;
use serde_json::Value;

/// What the oracle side reads from the store at the explained moment.
#[derive(Debug, Default)]
struct Seen {
    /// Node → active pods with an active do-not-disrupt annotation.
    do_not_disrupt: BTreeMap<String, Vec<String>>,
    /// Claims with a deletionTimestamp.
    deleting: Vec<String>,
    /// Claims with Initialized=True.
    initialized: Vec<String>,
    /// PDB `namespace/name` → status.disruptionsAllowed.
    pdb_allowed: BTreeMap<String, i64>,
    /// Pool → (budgets, node count).
    pools: BTreeMap<String, (Vec<Value>, usize)>,
}

fn explain_story(name: &str, seed: u64, at: Option<Duration>) -> (Explanation, Outcome, Seen) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(format!("{name}.yaml"));
    let loaded = Loaded::from_file(&path).expect("library scenario loads");
    let world = ScenarioWorld::build(&loaded, seed).expect("world builds");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sink = seen.clone();
    let (explanation, outcome) = explain_run(world, at, move |store, now, _| {
        let mut s = sink.lock().unwrap();
        for pod in read_pods(store) {
            if let Some(node) = pod.node_name.as_ref().filter(|_| pod.active())
                && do_not_disrupt_active(&pod.object, now)
            {
                s.do_not_disrupt.entry(node.clone()).or_default().push(pod.key.clone());
            }
        }
        let mut per_pool: BTreeMap<String, usize> = BTreeMap::new();
        for claim in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_string();
            if !claim["metadata"]["deletionTimestamp"].is_null() {
                s.deleting.push(name.clone());
            }
            let initialized = claim["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Initialized" && c["status"] == "True"));
            if initialized {
                s.initialized.push(name);
            }
            let pool = claim["metadata"]["labels"]["karpenter.sh/nodepool"].as_str().unwrap_or_default();
            *per_pool.entry(pool.to_string()).or_default() += 1;
        }
        for pool in store.iter(&key("karpenter.sh", "nodepools"), None) {
            let name = pool["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let budgets =
                pool.pointer("/spec/disruption/budgets").and_then(Value::as_array).cloned().unwrap_or_default();
            let nodes = per_pool.get(&name).copied().unwrap_or(0);
            s.pools.insert(name, (budgets, nodes));
        }
        for pdb in store.iter(&key("policy", "poddisruptionbudgets"), None) {
            let name = format!(
                "{}/{}",
                pdb["metadata"]["namespace"].as_str().unwrap_or_default(),
                pdb["metadata"]["name"].as_str().unwrap_or_default()
            );
            s.pdb_allowed.insert(name, pdb["status"]["disruptionsAllowed"].as_i64().unwrap_or(0));
        }
    })
    .expect("the run completes");
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (explanation, outcome, seen)
}

/// The cost oracle's rule per node name, from the report's `kept` lines ("N node(s) at $x/h:
/// RULE: node (type), node (type)"; at most three names per rule are listed).
fn kept_rules(outcome: &Outcome) -> BTreeMap<String, String> {
    let mut rules = BTreeMap::new();
    for line in &outcome.report.cost.kept {
        let Some((head, names)) = line.rsplit_once(": ") else { continue };
        let rule = head.split_once("/h: ").map_or(head, |(_, r)| r).to_string();
        for name in names.split(", ").filter_map(|n| n.split(" (").next()) {
            rules.insert(name.to_string(), rule.clone());
        }
    }
    rules
}

/// Checks one node's reason against the independent readings; returns what was checked.
fn check_node(
    n: &NodeExplanation,
    seen: &Seen,
    oracle_rule: Option<&String>,
    untaken: &[String],
    now: Duration,
) -> &'static str {
    let node = n.node.clone().unwrap_or_default();
    let agrees_with_oracle = |needles: &[&str]| {
        if let Some(rule) = oracle_rule {
            assert!(
                needles.iter().any(|s| rule.contains(s)),
                "{}: explain says {:?}, the cost oracle keeps it because {rule:?}",
                n.claim,
                n.status
            );
        }
    };
    match &n.status {
        NodeStatus::Disrupting { .. } => {
            assert!(seen.deleting.contains(&n.claim), "{} explained as disrupting but not deleting", n.claim);
            "disrupting"
        }
        NodeStatus::Initializing => {
            assert!(!seen.initialized.contains(&n.claim), "{} explained as initializing but Initialized", n.claim);
            agrees_with_oracle(&["not initialized"]);
            "initializing"
        }
        NodeStatus::DoNotDisruptPod { pod } => {
            assert!(
                seen.do_not_disrupt.get(&node).is_some_and(|pods| pods.contains(pod)),
                "{}: {pod} has no active do-not-disrupt on {node}",
                n.claim
            );
            agrees_with_oracle(&["do-not-disrupt"]);
            "do-not-disrupt pod"
        }
        NodeStatus::DoNotDisruptNode => {
            agrees_with_oracle(&["annotated karpenter.sh/do-not-disrupt"]);
            "do-not-disrupt node"
        }
        NodeStatus::ConsolidateAfterPending => {
            agrees_with_oracle(&["inside consolidateAfter"]);
            "consolidateAfter"
        }
        NodeStatus::ConsolidationDisabled => {
            agrees_with_oracle(&["consolidateAfter: Never"]);
            "consolidation disabled"
        }
        NodeStatus::Karpenter { reason, .. } => {
            assert!(
                !untaken.iter().any(|m| m.contains(&node)),
                "{}: explain says {reason} but the oracle has an untaken move for {node}: {untaken:?}",
                n.claim
            );
            match reason {
                KarpenterReason::BudgetBlocked { reason } => {
                    let (budgets, nodes) = &seen.pools[&n.pool];
                    assert_eq!(
                        allowed_for_reason(budgets, *nodes, reason, wall_time(now)),
                        Some(0),
                        "{}: budget",
                        n.claim
                    );
                    "budget"
                }
                KarpenterReason::PdbPreventsEviction { pdb } => {
                    assert_eq!(seen.pdb_allowed.get(pdb), Some(&0), "{}: {pdb} allows disruptions", n.claim);
                    "pdb"
                }
                KarpenterReason::SpotToSpotDisabled => {
                    agrees_with_oracle(&[
                        "SpotToSpotConsolidation is off",
                        "fit on no other node",
                        "inside consolidateAfter",
                    ]);
                    "spot-to-spot"
                }
                KarpenterReason::NoCheaperReplacement
                | KarpenterReason::NoCheaperSpot
                | KarpenterReason::TooFewCheaperSpotTypes(_)
                | KarpenterReason::TooManyReplacements(_)
                | KarpenterReason::PodsFitNowhereElse { .. } => {
                    agrees_with_oracle(&["fit on no other node", "inside consolidateAfter"]);
                    "no cheaper move"
                }
                KarpenterReason::Other(message) => panic!("{}: a message explain cannot read: {message}", n.claim),
                _ => "other karpenter reason",
            }
        }
        NodeStatus::NoReasonPublished => {
            panic!("{}: no reason published at the end of the run (oracle: {oracle_rule:?})", n.claim)
        }
    }
}

fn check_story(name: &str) -> BTreeMap<&'static str, usize> {
    let (explanation, outcome, seen) = explain_story(name, 1, None);
    assert!(!explanation.nodes.is_empty(), "{name}: no nodes to explain");
    let rules = kept_rules(&outcome);
    let untaken = &outcome.report.cost.untaken_moves;
    let mut checked = BTreeMap::new();
    for n in &explanation.nodes {
        let rule = n.node.as_ref().and_then(|node| rules.get(node));
        *checked.entry(check_node(n, &seen, rule, untaken, explanation.at)).or_default() += 1;
    }
    for p in &explanation.pending {
        if let PodStatus::NominatedToGone { claim, .. } = &p.status {
            assert!(!explanation.nodes.iter().any(|n| &n.claim == claim), "{}: claim {claim} exists", p.pod);
        }
    }
    println!("{name}: {explanation}\nchecked: {checked:?}");
    checked
}

#[test]
fn every_remaining_node_of_do_not_disrupt_batch_has_a_reason_the_oracle_agrees_with() {
    let checked = check_story("do-not-disrupt-batch");
    assert!(checked.values().sum::<usize>() > 0);
}

#[test]
fn every_remaining_node_of_consolidation_scale_down_has_a_reason_the_oracle_agrees_with() {
    let checked = check_story("consolidation-scale-down");
    assert!(checked.values().sum::<usize>() > 0);
}

/// Mid-run, while do-not-disrupt Jobs still run, their nodes are explained by them, and the
/// disruption decisions listed are only those taken so far.
#[test]
fn mid_run_the_do_not_disrupt_jobs_keep_their_nodes() {
    let (mid, _, seen) = explain_story("do-not-disrupt-batch", 1, Some(Duration::from_secs(15 * 60)));
    let (end, _, _) = explain_story("do-not-disrupt-batch", 1, None);
    assert_eq!(mid.at, Duration::from_secs(15 * 60));
    assert!(mid.decisions.iter().all(|d| d.at <= mid.at));
    assert!(mid.decisions.len() <= end.decisions.len());
    let protected: Vec<_> =
        mid.nodes.iter().filter(|n| matches!(n.status, NodeStatus::DoNotDisruptPod { .. })).collect();
    assert!(!protected.is_empty(), "{mid}");
    for n in protected {
        assert!(seen.do_not_disrupt.contains_key(n.node.as_deref().unwrap_or_default()));
    }
}
