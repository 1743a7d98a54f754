//! `consolidationLegality` fires on each illegal command, beside a twin where the rule holds.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::{CapacityType, Catalog, CloudConfig, FakeCloud};
use serde_json::json;

use super::ConsolidationLegality;
use crate::invariants::Violation;
use crate::oracle::disruption_events::{DisruptionEvent, LAUNCHING_REASON};
use crate::oracle::resources::Resources;
use crate::oracle::view::{ClaimView, InstanceView, NodeView, PodView, PoolView, View};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn cloud() -> FakeCloud {
    let config = CloudConfig::new(1, dovetail_world::clock::sim_epoch());
    FakeCloud::new(config, Catalog::load("us-east-1").expect("the shipped catalog"))
}

/// A small world: pools, nodes with their claims and instances, pods.
#[derive(Clone, Default)]
struct World {
    view: View,
    pods: Vec<PodView>,
}

impl World {
    fn pool(mut self, name: &str, disruption: serde_json::Value) -> Self {
        let object = Arc::new(json!({"metadata": {"name": name}, "spec": {"disruption": disruption}}));
        self.view.pools.insert(name.into(), PoolView { name: name.into(), object });
        self
    }

    /// A node `name` (claim `name`, pool `default`) of `instance_type` with 4 CPUs.
    fn node(mut self, name: &str, instance_type: &str, capacity_type: CapacityType) -> Self {
        let provider_id = format!("aws:///us-east-1a/i-{name}");
        self.view.claims.insert(
            name.into(),
            ClaimView { node_name: Some(name.into()), ..ClaimView::for_test(name, "default", &provider_id) },
        );
        self.view.nodes.insert(
            name.into(),
            NodeView {
                provider_id: provider_id.clone(),
                nodepool: Some("default".into()),
                deleting: false,
                disrupted: false,
                initialized: true,
                do_not_disrupt: false,
                taints: Vec::new(),
                ready: true,
                labels: BTreeMap::new(),
                allocatable: Resources { cpu: 4_000.0, memory: 16.0 * GIB, pods: 110.0 },
            },
        );
        self.view.instances.push(InstanceView {
            id: format!("i-{name}"),
            instance_type: instance_type.into(),
            zone: "us-east-1a".into(),
            capacity_type,
            live: true,
            launched: Duration::ZERO,
            nodeclaim: Some(name.into()),
            nodepool: Some("default".into()),
            provider_id,
            involuntary: false,
            fleet: None,
            state_reason: None,
            warned: false,
            reserved: false,
        });
        self
    }

    /// Marks node `name`'s instance as holding a capacity reservation slot.
    fn reserved(mut self, name: &str) -> Self {
        let id = format!("i-{name}");
        if let Some(i) = self.view.instances.iter_mut().find(|i| i.id == id) {
            i.reserved = true;
        }
        self
    }

    fn pod(mut self, name: &str, node: &str, cpu: f64) -> Self {
        self.pods.push(PodView {
            key: format!("default/{name}"),
            uid: format!("uid-{name}"),
            created: Duration::ZERO,
            node_name: Some(node.into()),
            terminal: false,
            terminating: false,
            daemonset: false,
            requests: Resources { cpu, memory: GIB, pods: 1.0 },
            object: Arc::new(json!({"metadata": {"name": name}, "spec": {}})),
        });
        self
    }

    fn mark(mut self, claim: &str, reason: &str) -> Self {
        if let Some(c) = self.view.claims.get_mut(claim) {
            c.disruption_reason = Some(reason.into());
        }
        self
    }

    fn launched(self, claim: &str, at: u64) -> Self {
        self.launched_for(claim, at, "Underutilized")
    }

    /// A replacement launch Event for another command's `reason` (as the controller writes
    /// it: "Launching NodeClaim: <Reason>/<decision>").
    fn launched_for(mut self, claim: &str, at: u64, reason: &str) -> Self {
        self.view.disruption_events.push(DisruptionEvent {
            at: s(at),
            node_claim: claim.into(),
            reason: LAUNCHING_REASON.into(),
            message: format!("Launching NodeClaim: {reason}/replace"),
            resource_version: 0,
        });
        self
    }
}

/// Ticks `worlds` (time, world) in order; returns the violations.
fn run(worlds: &[(u64, World)], spot_to_spot: bool) -> Vec<Violation> {
    run_lagging(worlds, spot_to_spot, &[])
}

/// [`run`], with watch events delayed at the ticks `lagging` lists.
fn run_lagging(worlds: &[(u64, World)], spot_to_spot: bool, lagging: &[u64]) -> Vec<Violation> {
    let cloud = cloud();
    let mut inv = ConsolidationLegality::default();
    let mut out = Vec::new();
    for (t, w) in worlds {
        let mut view = w.view.clone();
        view.now = s(*t);
        inv.lagging = lagging.contains(t);
        inv.observe(&view, &w.pods, &cloud, spot_to_spot, false, &mut out);
    }
    out
}

fn two_nodes(after: &str) -> World {
    World::default()
        .pool("default", json!({"consolidateAfter": after, "consolidationPolicy": "WhenEmptyOrUnderutilized"}))
        .node("a", "m5.xlarge", CapacityType::OnDemand)
        .node("b", "m5.xlarge", CapacityType::OnDemand)
        .pod("p1", "a", 500.0)
}

#[test]
fn a_candidate_disrupted_before_consolidate_after_since_a_pod_arrived_fires() {
    let settled = two_nodes("60s");
    let arrived = settled.clone().pod("p2", "a", 500.0);
    let early = vec![(0, settled.clone()), (100, arrived.clone()), (120, arrived.clone().mark("a", "Underutilized"))];
    let out = run(&early, false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("consolidateAfter"), "{}", out[0].message);
    // 60 s after the arrival, less upstream's 10 s de-duplication and a tick: legal.
    let late = vec![(0, settled), (100, arrived.clone()), (150, arrived.mark("a", "Underutilized"))];
    assert!(run(&late, false).iter().all(|v| !v.message.contains("consolidateAfter")));
}

/// Generated story 315805906: an arrival seen while watch events are delayed may not have
/// reached the controller's informer when it decided, so it does not start the clock
/// (upstream stamps `lastPodEventTime` on delivery, `podevents/controller.go`); the same
/// arrival with the watch on time, or a lag only after it, still fires.
#[test]
fn an_arrival_seen_while_watch_events_are_delayed_does_not_start_the_clock() {
    let settled = two_nodes("60s");
    let arrived = settled.clone().pod("p2", "a", 500.0);
    let early = vec![(0, settled.clone()), (100, arrived.clone()), (120, arrived.clone().mark("a", "Underutilized"))];
    assert!(run_lagging(&early, false, &[100]).iter().all(|v| !v.message.contains("consolidateAfter")));
    let out = run_lagging(&early, false, &[120]);
    assert_eq!(out.len(), 1, "a lag after the arrival excuses nothing: {out:?}");
    assert!(out[0].message.contains("consolidateAfter"), "{}", out[0].message);
}

#[test]
fn a_when_empty_pool_or_a_do_not_disrupt_claim_has_no_underutilized_candidate() {
    let when_empty = World::default()
        .pool("default", json!({"consolidateAfter": "0s", "consolidationPolicy": "WhenEmpty"}))
        .node("a", "m5.xlarge", CapacityType::OnDemand)
        .node("b", "m5.xlarge", CapacityType::OnDemand);
    let out = run(&[(0, when_empty.clone()), (10, when_empty.clone().mark("a", "Underutilized"))], false);
    assert!(out.iter().any(|v| v.message.contains("WhenEmpty")), "{out:?}");
    let empty = run(&[(0, when_empty.clone()), (10, when_empty.mark("a", "Empty"))], false);
    assert!(empty.is_empty(), "Empty is allowed on a WhenEmpty pool: {empty:?}");
    let mut protected = two_nodes("0s");
    protected.view.claims.get_mut("a").expect("a").do_not_disrupt = true;
    let out = run(&[(0, protected.clone()), (10, protected.mark("a", "Underutilized"))], false);
    assert!(out.iter().any(|v| v.message.contains("do-not-disrupt")), "{out:?}");
}

#[test]
fn a_delete_whose_pods_fit_nowhere_fires_and_one_that_fits_does_not() {
    // 3.5 CPUs on a; b has 4 CPUs, 0.5 of them used: 3.5 free, so a's pods fit.
    let fits = two_nodes("0s").pod("p2", "a", 3_000.0).pod("q", "b", 500.0);
    let out = run(
        &[(0, fits.clone()), (10, fits.clone().mark("a", "Underutilized")), (20, fits.mark("a", "Underutilized"))],
        false,
    );
    assert!(out.is_empty(), "{out:?}");
    let full = two_nodes("0s").pod("p2", "a", 3_000.0).pod("q", "b", 1_000.0);
    let out = run(
        &[
            (0, full.clone()),
            (10, full.clone().mark("a", "Underutilized")),
            (20, full.clone().mark("a", "Underutilized")),
        ],
        false,
    );
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("without a replacement"), "{}", out[0].message);
    // The same command with a replacement launched is a replace: no fit judgement.
    let replaced = full.node("r", "m5.large", CapacityType::OnDemand).launched("r", 10).mark("a", "Underutilized");
    let out = run(
        &[(0, two_nodes("0s").pod("p2", "a", 3_000.0).pod("q", "b", 1_000.0)), (10, replaced.clone()), (20, replaced)],
        false,
    );
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn an_on_demand_replacement_must_cost_less_and_spot_to_spot_needs_the_gate() {
    let base = two_nodes("0s");
    let dearer =
        base.clone().node("r", "m5.2xlarge", CapacityType::OnDemand).launched("r", 10).mark("a", "Underutilized");
    let out = run(&[(0, base.clone()), (10, dearer)], false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("must cost strictly less"), "{}", out[0].message);
    let cheaper =
        base.clone().node("r", "m5.large", CapacityType::OnDemand).launched("r", 10).mark("a", "Underutilized");
    assert!(run(&[(0, base), (10, cheaper)], false).is_empty());

    let spot = World::default()
        .pool("default", json!({"consolidateAfter": "0s"}))
        .node("a", "m5.xlarge", CapacityType::Spot)
        .node("b", "m5.xlarge", CapacityType::Spot)
        .pod("p1", "a", 500.0);
    let replaced = spot.clone().node("r", "m5.large", CapacityType::Spot).launched("r", 10).mark("a", "Underutilized");
    let out = run(&[(0, spot.clone()), (10, replaced.clone())], false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("SpotToSpotConsolidation is off"), "{}", out[0].message);
    assert!(run(&[(0, spot), (10, replaced)], true).is_empty());
}

/// Karpenter prices a reserved node at on-demand / 10^7 (aws
/// `offering/reserved_capacity_resolver.go` l. 73-80), so an on-demand replacement of a
/// reserved candidate is never cheaper and fires, though its on-demand price is below the
/// candidate type's; a reserved replacement of an on-demand candidate costs almost nothing
/// and passes, though its type's on-demand price is higher.
#[test]
fn reserved_capacity_is_priced_at_a_ten_millionth_of_on_demand() {
    let base = two_nodes("0s").reserved("a");
    let on_demand =
        base.clone().node("r", "m5.large", CapacityType::OnDemand).launched("r", 10).mark("a", "Underutilized");
    let out = run(&[(0, base.clone()), (10, on_demand)], false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("must cost strictly less"), "{}", out[0].message);

    let base = two_nodes("0s");
    let into_reservation = base
        .clone()
        .node("r", "m5.2xlarge", CapacityType::OnDemand)
        .reserved("r")
        .launched("r", 10)
        .mark("a", "Underutilized");
    assert!(run(&[(0, base), (10, into_reservation)], false).is_empty());
}

/// A Drift replacement launched within seconds of an Underutilized delete in the same pool is
/// the Drift command's, not the delete's: the delete is judged as a delete (its pod fits on
/// b), and the dearer replacement is not held against it. Its twin, the same launch for
/// Underutilized, is the command's replacement and fires for its price.
#[test]
fn a_replacement_launched_for_another_reason_is_not_the_commands() {
    let base = two_nodes("0s");
    let drift = base.clone().node("r", "m5.2xlarge", CapacityType::OnDemand).launched_for("r", 10, "Drifted");
    let out = run(&[(0, base.clone()), (10, drift.clone().mark("a", "Underutilized")), (20, drift)], false);
    assert!(out.is_empty(), "{out:?}");
    let own = base.clone().node("r", "m5.2xlarge", CapacityType::OnDemand).launched_for("r", 10, "Underutilized");
    let out = run(&[(0, base), (10, own.mark("a", "Underutilized"))], false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("must cost strictly less"), "{}", out[0].message);
}

/// The disruption simulation schedules against every NodePool (core `provisioner.go`
/// `NewScheduler`), so a replacement from another pool is the command's: the delete whose pods
/// fit nowhere is a replace, judged by price. The same launch cannot serve two commands: a
/// second delete in another pool is still judged as a delete and fires.
#[test]
fn a_replacement_from_another_pool_counts_once() {
    let full = || two_nodes("0s").pod("p2", "a", 3_000.0).pod("q", "b", 1_000.0);
    let mut replaced =
        full().node("r", "m5.large", CapacityType::OnDemand).launched("r", 10).mark("a", "Underutilized");
    replaced.view.claims.get_mut("r").expect("r").nodepool = "other".into();
    let out = run(&[(0, full()), (10, replaced.clone()), (20, replaced.clone())], false);
    assert!(out.is_empty(), "{out:?}");

    let mut dearer =
        full().node("r", "m5.2xlarge", CapacityType::OnDemand).launched("r", 10).mark("a", "Underutilized");
    dearer.view.claims.get_mut("r").expect("r").nodepool = "other".into();
    let out = run(&[(0, full()), (10, dearer)], false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("must cost strictly less"), "{}", out[0].message);

    // Two commands in two pools (c in pool "second", its pods fit nowhere; marked a tick
    // after a, when r is full), one launch: it serves a's command, c's is a delete.
    let two = || {
        let mut w = full().node("c", "m5.xlarge", CapacityType::OnDemand).pod("p3", "c", 3_900.0);
        w.view.claims.get_mut("c").expect("c").nodepool = "second".into();
        w
    };
    let mut first = two().node("r", "m5.large", CapacityType::OnDemand).launched("r", 10);
    first.view.claims.get_mut("r").expect("r").nodepool = "default".into();
    let first = first.pod("moved", "r", 4_000.0).mark("a", "Underutilized");
    let both = first.clone().mark("c", "Underutilized");
    let out = run(&[(0, two()), (10, first), (11, both.clone()), (20, both.clone()), (60, both)], false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("without a replacement") && out[0].message.contains('c'), "{}", out[0].message);
}

/// Found by generated story 777000184: a multi-node command over a spot node of one pool and
/// an on-demand node of another, replaced by one spot node with SpotToSpotConsolidation off.
/// Upstream applies the spot-to-spot rules only when every candidate is spot (core
/// `consolidation.go:201-214`, `allExistingAreSpot`), so the mixed command is legal; the same
/// command over two spot nodes of two pools still fires.
#[test]
fn spot_to_spot_is_judged_over_the_whole_command_across_pools() {
    let world = |second: CapacityType| {
        let mut w = World::default()
            .pool("default", json!({"consolidateAfter": "0s"}))
            .pool("second", json!({"consolidateAfter": "0s"}))
            .node("a", "m5.xlarge", CapacityType::Spot)
            .node("c", "m5.xlarge", second)
            .node("b", "m5.xlarge", CapacityType::OnDemand)
            .pod("p1", "a", 500.0)
            .pod("p2", "c", 500.0);
        w.view.claims.get_mut("c").expect("c").nodepool = "second".into();
        w
    };
    let replaced = |w: World| {
        w.node("r", "m5.large", CapacityType::Spot)
            .launched("r", 10)
            .mark("a", "Underutilized")
            .mark("c", "Underutilized")
    };
    let mixed = world(CapacityType::OnDemand);
    let out = run(&[(0, mixed.clone()), (10, replaced(mixed))], false);
    assert!(out.is_empty(), "{out:?}");
    let spot = world(CapacityType::Spot);
    let out = run(&[(0, spot.clone()), (10, replaced(spot))], false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("SpotToSpotConsolidation is off"), "{}", out[0].message);
    assert!(out[0].objects.iter().any(|o| o == "NodePool second"), "{:?}", out[0].objects);
}

/// Core `consolidation.go:307-315`: one spot node is replaced by a spot node only with at least
/// 15 cheaper spot types. A pool allowing three m5 sizes cannot offer them, so the replace
/// fires with the gate on; the twin pool allowing the whole catalog holds, and so does a
/// two-node command over the small pool (no such rule for several candidates).
#[test]
fn a_single_spot_to_spot_replace_needs_fifteen_spot_types_in_the_pool() {
    let pool = |types: Option<&[&str]>| {
        let requirements = match types {
            Some(t) => json!([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": t}]),
            None => json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]),
        };
        let mut w = World::default()
            .node("a", "m5.2xlarge", CapacityType::Spot)
            .node("b", "m5.2xlarge", CapacityType::Spot)
            .pod("p1", "a", 500.0)
            .pod("p2", "b", 500.0);
        w.view.pools.insert(
            "default".into(),
            PoolView {
                name: "default".into(),
                object: Arc::new(json!({"metadata": {"name": "default"}, "spec": {
                    "disruption": {"consolidateAfter": "0s"},
                    "template": {"spec": {"requirements": requirements}}}})),
            },
        );
        w
    };
    let small = pool(Some(&["m5.large", "m5.xlarge", "m5.2xlarge"]));
    let replaced = |w: World| w.node("r", "m5.large", CapacityType::Spot).launched("r", 10).mark("a", "Underutilized");
    let out = run(&[(0, small.clone()), (10, replaced(small.clone())), (20, replaced(small.clone()))], true);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("allows only 3 instance types with a spot offering"), "{}", out[0].message);
    assert!(out[0].message.contains("at least 15"), "{}", out[0].message);

    let wide = pool(None);
    assert!(run(&[(0, wide.clone()), (10, replaced(wide.clone())), (20, replaced(wide))], true).is_empty());

    let both = replaced(small.clone()).mark("b", "Underutilized");
    assert!(run(&[(0, small.clone()), (10, both.clone()), (20, both)], true).is_empty());
    // A two-node command whose second mark is seen a tick later is not taken for a single one.
    let first = replaced(small.clone());
    let second = first.clone().mark("b", "Underutilized");
    let out = run(&[(0, small), (10, first), (11, second.clone()), (20, second)], true);
    assert!(out.is_empty(), "{out:?}");
}

/// Found by generated story 47951154: the candidates of one multi-node command are marked one
/// write after another, and under a slow API server the marks straddled two ticks; judged as
/// two commands, the first looked like a one-node replace by a dearer node, the rest like a
/// delete without room. Marks within the replacement window of a command still waiting for
/// its replacement join it: an m5.xlarge replacing an m5.large and an m5.xlarge marked a
/// second apart is legal. Marked six seconds apart they are two commands, and the first,
/// replaced by the dearer m5.xlarge, still fires.
#[test]
fn marks_of_one_command_that_straddle_ticks_are_one_command() {
    let base = World::default()
        .pool("default", json!({"consolidateAfter": "0s"}))
        .node("a", "m5.large", CapacityType::OnDemand)
        .node("c", "m5.xlarge", CapacityType::OnDemand)
        .node("b", "m5.4xlarge", CapacityType::OnDemand)
        .pod("p1", "a", 500.0)
        .pod("p2", "c", 500.0);
    let first = base.clone().mark("a", "Underutilized");
    let both =
        first.clone().node("r", "m5.xlarge", CapacityType::OnDemand).launched("r", 11).mark("c", "Underutilized");
    let out = run(&[(0, base.clone()), (10, first.clone()), (11, both.clone()), (20, both)], false);
    assert!(out.is_empty(), "{out:?}");

    let launched = first.clone().node("r", "m5.xlarge", CapacityType::OnDemand).launched("r", 11);
    let late = launched.clone().mark("c", "Underutilized");
    let out = run(&[(0, base), (10, first), (11, launched), (16, late.clone()), (30, late)], false);
    assert!(out.iter().any(|v| v.message.contains("must cost strictly less")), "{out:?}");
}
