//! The multi-node search: it claims a prefix only where upstream's search surely finds
//! one, whatever order tied candidates come in, and honours every blocker.

use std::collections::BTreeMap;
use std::sync::Arc;

use dovetail_fakecloud::CapacityType;
use serde_json::json;

use super::host::{Host, PoolRules};
use super::multi::multi_node_move;
use super::replacement::Replacements;
use super::tests::{host, offering, open, r};
use super::{Move, MoveKind};
use crate::oracle::resources::Offering;
use crate::oracle::view::PoolView;

fn multi(hosts: &[Host], rules: PoolRules, offerings: Vec<(Offering, bool)>) -> Option<Move> {
    let offerings: BTreeMap<&str, Vec<(Offering, bool)>> = [("default", offerings)].into();
    let views: BTreeMap<String, PoolView> = [(
        "default".to_string(),
        PoolView { name: "default".into(), object: Arc::new(json!({"metadata": {"name": "default"}})) },
    )]
    .into();
    let replacements = Replacements::new(&offerings, &views, r(100.0), Default::default(), Default::default());
    let pools: BTreeMap<String, PoolRules> = [("default".to_string(), rules)].into();
    multi_node_move(hosts, &pools, false, || &replacements)
}

fn budget(n: usize) -> PoolRules {
    PoolRules { underutilized_budget: n, ..open() }
}

/// a and b hold one 1-CPU pod each with 0.5 CPU spare; c has room for both.
fn three() -> Vec<Host> {
    let mut hosts = vec![host("a", false, 1, 500.0), host("b", false, 1, 500.0), host("c", false, 1, 3_000.0)];
    for h in &mut hosts {
        h.reschedule_cost = 2.0;
    }
    hosts
}

#[test]
fn a_prefix_is_claimed_only_when_every_order_of_tied_candidates_reaches_it() {
    // Three equal savings ratios: upstream's first (and only) probe is any two of them, and {a, c}
    // or {b, c} fit nowhere.
    assert_eq!(multi(&three(), budget(10), Vec::new()), None);
    // c is dearer to disrupt, so its savings ratio sorts it last: the probe is {a, b} in either order, and c holds them.
    let mut hosts = three();
    hosts[2].reschedule_cost = 6.0;
    let found = multi(&hosts, budget(10), Vec::new()).expect("a multi-node delete");
    assert_eq!(found.kind, MoveKind::MultiDelete);
    assert_eq!(found.nodes, ["a", "b"]);
    assert_eq!(found.key(), "multi-delete a,b");
    assert!((found.saving_per_hour - 2.0 * 0.192).abs() < 1e-9);
}

#[test]
fn every_blocker_of_a_candidate_keeps_the_search_from_claiming() {
    let mut hosts = three();
    hosts[2].reschedule_cost = 6.0;
    // The budget lets one node go: upstream's list has one candidate, and needs two.
    assert_eq!(multi(&hosts, budget(1), Vec::new()), None);
    assert_eq!(multi(&hosts, PoolRules { when_empty: true, ..budget(10) }, Vec::new()), None);
    // A blocked node (do-not-disrupt, PDB, …) is no candidate: {b, c} is the probe.
    let mut blocked = hosts.clone();
    blocked[0].blocked = Some("pod default/p is annotated karpenter.sh/do-not-disrupt".into());
    assert_eq!(multi(&blocked, budget(10), Vec::new()), None);
    // Only the consolidateAfter clock keeps c: upstream may list it already.
    let mut waiting = hosts.clone();
    waiting[2].blocked = Some("inside consolidateAfter".into());
    waiting[2].waiting = true;
    assert_eq!(multi(&waiting, budget(10), Vec::new()), None);
    // A candidate whose pods the packing model cannot place is not judged.
    let mut spread = hosts.clone();
    spread[1].unjudged = Some("not judged: topology spread".into());
    assert_eq!(multi(&spread, budget(10), Vec::new()), None);
    // An empty candidate: v1.13 lists it, v1.14 leaves it to Emptiness.
    let mut empty = hosts;
    empty[2].movable.clear();
    empty[2].reschedule_cost = 1.0;
    assert_eq!(multi(&empty, budget(10), Vec::new()), None);
}

#[test]
fn two_nodes_are_replaced_by_one_cheaper_than_their_sum_but_not_by_their_own_type() {
    let od = CapacityType::OnDemand;
    // Two m5.xlarge ($0.192/h each) with one 1-CPU pod each and no room for the other's.
    let hosts = [host("a", false, 1, 0.0), host("b", false, 1, 0.0)];
    let same = offering("m5.xlarge", "a", od, 0.192, 3_900.0);
    // Cheaper than the sum, but a candidate's own type: filterOutSameType caps it at $0.192.
    assert_eq!(multi(&hosts, budget(2), vec![same.clone()]), None);
    let other = offering("c5.xlarge", "a", od, 0.17, 3_900.0);
    let found = multi(&hosts, budget(2), vec![same.clone(), other]).expect("a multi-node replace");
    assert_eq!(found.kind, MoveKind::MultiReplace { cheapest_type: "c5.xlarge".into(), options: 1 });
    assert!((found.saving_per_hour - (0.384 - 0.17)).abs() < 1e-9);
    // A candidate type too small for the pods no other node has room for is no cap:
    // two c5.large-priced nodes merge into one m5.xlarge dearer than either.
    let mut small = hosts.clone();
    for h in &mut small {
        h.instance_type = "c5.large".into();
        h.price = 0.1;
    }
    let small_type = offering("c5.large", "a", od, 0.1, 1_900.0);
    let big = offering("m5.xlarge", "a", od, 0.192, 3_900.0);
    let found = multi(&small, budget(2), vec![small_type, big]).expect("merge into a bigger node");
    assert_eq!(found.kind, MoveKind::MultiReplace { cheapest_type: "m5.xlarge".into(), options: 1 });
    // Spot nodes with the gate off may only be deleted.
    let mut spot = hosts;
    for h in &mut spot {
        h.spot = true;
    }
    let spot_offer = offering("c5.xlarge", "a", CapacityType::Spot, 0.05, 3_900.0);
    assert_eq!(multi(&spot, budget(2), vec![spot_offer]), None);
}
