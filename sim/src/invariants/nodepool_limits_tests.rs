//! Which instances count toward a pool's limits: Karpenter's marked-for-deletion rule, each
//! exclusion beside the twin where it does not apply.

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_fakecloud::CapacityType;

use super::counts_for_limits;
use crate::oracle::resources::Resources;
use crate::oracle::view::{ClaimView, InstanceView, NodeView, View};

fn instance(id: &str, claim: Option<&str>) -> InstanceView {
    InstanceView {
        id: id.into(),
        instance_type: "m5.large".into(),
        zone: "us-east-1a".into(),
        capacity_type: CapacityType::OnDemand,
        live: true,
        launched: Duration::ZERO,
        nodeclaim: claim.map(str::to_string),
        nodepool: Some("default".into()),
        provider_id: format!("aws:///us-east-1a/{id}"),
        involuntary: false,
        fleet: None,
        state_reason: None,
        warned: false,
        reserved: false,
    }
}

fn claim(name: &str, id: &str) -> ClaimView {
    ClaimView::for_test(name, "default", &format!("aws:///us-east-1a/{id}"))
}

fn node(id: &str) -> NodeView {
    NodeView {
        provider_id: format!("aws:///us-east-1a/{id}"),
        nodepool: Some("default".into()),
        deleting: false,
        disrupted: false,
        initialized: true,
        do_not_disrupt: false,
        taints: Vec::new(),
        ready: true,
        labels: BTreeMap::new(),
        allocatable: Resources::default(),
    }
}

/// One instance `i-1` with claim `c1` and its Node, each adjusted by the closures.
fn world(adjust_claim: impl FnOnce(&mut ClaimView), adjust_node: impl FnOnce(&mut NodeView)) -> View {
    let mut view = View::default();
    let mut c = claim("c1", "i-1");
    adjust_claim(&mut c);
    let mut n = node("i-1");
    adjust_node(&mut n);
    view.claims.insert("c1".into(), c);
    view.nodes.insert("n1".into(), n);
    view
}

#[test]
fn a_live_unmarked_instance_counts() {
    let view = world(|_| {}, |_| {});
    assert!(counts_for_limits(&view, &instance("i-1", Some("c1"))));
}

#[test]
fn a_deleting_claim_does_not_count_but_its_live_neighbour_does() {
    let mut view = world(|c| c.deleting_since = Some(Duration::from_secs(5)), |_| {});
    assert!(!counts_for_limits(&view, &instance("i-1", Some("c1"))));
    view.claims.insert("c2".into(), claim("c2", "i-2"));
    assert!(counts_for_limits(&view, &instance("i-2", Some("c2"))), "an unmarked claim beside it still counts");
}

#[test]
fn an_instance_terminating_claim_does_not_count() {
    let view = world(|c| c.instance_terminating = true, |_| {});
    assert!(!counts_for_limits(&view, &instance("i-1", Some("c1"))));
}

#[test]
fn a_node_marked_by_disruption_or_deleting_does_not_count() {
    let tainted = world(|_| {}, |n| n.disrupted = true);
    assert!(!counts_for_limits(&tainted, &instance("i-1", Some("c1"))));
    let deleting = world(|_| {}, |n| n.deleting = true);
    assert!(!counts_for_limits(&deleting, &instance("i-1", Some("c1"))));
}

#[test]
fn the_claim_is_found_by_provider_id_when_the_tag_is_missing() {
    let view = world(|c| c.deleting_since = Some(Duration::from_secs(5)), |_| {});
    assert!(!counts_for_limits(&view, &instance("i-1", None)), "found by providerID, so excused");
    let live = world(|_| {}, |_| {});
    assert!(counts_for_limits(&live, &instance("i-1", None)), "found by providerID, live, so counted");
}

#[test]
fn an_in_flight_claim_without_a_node_counts_and_a_claimless_undeleted_node_counts() {
    let mut view = View::default();
    view.claims.insert("c1".into(), claim("c1", "i-1"));
    assert!(counts_for_limits(&view, &instance("i-1", Some("c1"))), "launched, not registered: counted");
    let mut view = View::default();
    view.nodes.insert("n1".into(), node("i-1"));
    assert!(counts_for_limits(&view, &instance("i-1", Some("gone"))), "a Node without claim still counts");
}

#[test]
fn an_instance_with_neither_claim_nor_node_has_no_state_node() {
    let view = View::default();
    assert!(!counts_for_limits(&view, &instance("i-1", Some("gone"))));
}
