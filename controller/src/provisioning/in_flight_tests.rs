//! Upstream's in-flight behaviour, end to end through [`super::input`] and the scheduler
//! (issue 18; issue 20 deviation 5; karpenter#3121).
//!
//! - A pod nominated to an in-flight NodeClaim is still pending, so the next pass schedules it
//!   again (core `provisioner.go` `Schedule` → `GetPendingPods`); the claim is an ExistingNode
//!   whose room is the launched instance type's allocatable minus the pods *bound* to it (core
//!   `state/statenode.go` `Allocatable`/`Available`, `scheduling/existingnode.go`
//!   `NewExistingNode`), and existing nodes are tried before new claims (core
//!   `scheduling/scheduler.go` `add`: `addToExistingNode`, then `addToInflightNode`, then
//!   `addToNewNodeClaim`). So the pod lands on the same claim and no duplicate is made.
//! - Where the re-pass would deal the in-flight room to other pods first (karpenter#3121),
//!   Dovetail holds each pod on the in-flight claim its last pass nominated it to
//!   (`scheduling/scheduler_held.rs`, a deliberate deviation ahead of upstream).
//! - One batch is one solve: a wave of identical pods that reaches the provisioner in one
//!   batch is packed once, into as few claims as first-fit-decreasing needs.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::input::existing_nodes;
use crate::apis::NodeClaim;
use crate::cloudprovider::fake;
use crate::scheduling::{NodePoolInput, SchedulablePod, SchedulingInput, schedule};
use crate::state::{Memory, Snapshot, key_of};

/// A pending pod kube-scheduler has marked Unschedulable (what the provisioner acts on).
fn pending_pod(name: &str, cpu: &str, memory: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": "default", "name": name, "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    }))
    .expect("pod")
}

/// A NodeClaim the launch has resolved (providerID, allocatable) whose Node has not
/// registered yet: in flight.
fn launched_claim(name: &str, cpu: &str, memory: &str) -> NodeClaim {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {
            "karpenter.sh/nodepool": "default",
            "topology.kubernetes.io/zone": "test-zone-1",
            "node.kubernetes.io/instance-type": "c-2x",
            "karpenter.sh/capacity-type": "on-demand"}},
        "spec": {"requirements": [],
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                 "resources": {"requests": {"cpu": "800m", "memory": "1Gi", "pods": "4"}}},
        "status": {"providerID": format!("aws:///test-zone-1/i-{name}"),
                   "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}
    }))
    .expect("claim")
}

fn pool() -> NodePoolInput {
    let pool = serde_json::from_value(serde_json::json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}
    }))
    .expect("pool");
    NodePoolInput { node_pool: pool, instance_types: fake::instance_types(16) }
}

/// The scheduler input the provisioner builds from `snapshot` (its pending pods, its
/// NodeClaims as existing nodes), over the fake catalog.
fn input_of(snapshot: &Snapshot) -> SchedulingInput {
    SchedulingInput {
        pods: snapshot.pods.values().map(|p| SchedulablePod::from_pod(p).expect("schedulable")).collect(),
        existing_nodes: existing_nodes(snapshot, &Memory::default()),
        node_pools: vec![pool()],
        ..SchedulingInput::default()
    }
}

fn snapshot_of(pods: Vec<Pod>, claims: Vec<NodeClaim>) -> Snapshot {
    Snapshot {
        pods: pods.into_iter().map(|p| (key_of(&p), Arc::new(p))).collect(),
        node_claims: claims.into_iter().map(|c| (key_of(&c), Arc::new(c))).collect(),
        ..Snapshot::default()
    }
}

#[test]
fn pods_nominated_to_an_in_flight_claim_are_packed_onto_it_again() {
    // Pass 1 made `default-a` for four 200m pods and launched it as a 2-vCPU type; its Node
    // has not registered, so the four pods are still pending when the next pass runs.
    let pods: Vec<Pod> = (0..4).map(|i| pending_pod(&format!("web-{i}"), "200m", "256Mi")).collect();
    let snapshot = snapshot_of(pods, vec![launched_claim("default-a", "1900m", "3Gi")]);
    let results = schedule(&input_of(&snapshot));
    assert!(results.new_node_claims.is_empty(), "a duplicate claim: {:?}", results.new_node_claims);
    assert_eq!(results.existing_node_assignments.get("default-a").map(Vec::len), Some(4));
}

#[test]
fn only_the_overflow_of_an_in_flight_claim_gets_a_new_claim() {
    // Twelve pods of 200m: nine fit the in-flight claim's 1900m, the other three get one new
    // claim, and the in-flight claim keeps pods nominated to it (it is still wanted).
    let pods: Vec<Pod> = (0..12).map(|i| pending_pod(&format!("web-{i:02}"), "200m", "256Mi")).collect();
    let snapshot = snapshot_of(pods, vec![launched_claim("default-a", "1900m", "3Gi")]);
    let results = schedule(&input_of(&snapshot));
    assert_eq!(results.existing_node_assignments.get("default-a").map(Vec::len), Some(9));
    assert_eq!(results.new_node_claims.len(), 1);
    assert_eq!(results.new_node_claims[0].pods.len(), 3);
}

#[test]
fn a_wave_in_one_batch_is_packed_once_into_the_first_fit_decreasing_count() {
    // Fifty identical 200m pods (10 vCPU in all) in one batch: one solve, one claim, whose
    // options are the types that hold all fifty (the fake catalog goes up to 16 vCPU).
    let pods: Vec<Pod> = (0..50).map(|i| pending_pod(&format!("burst-{i:02}"), "200m", "256Mi")).collect();
    let snapshot = snapshot_of(pods, Vec::new());
    let results = schedule(&input_of(&snapshot));
    assert!(results.pod_errors.is_empty(), "{:?}", results.pod_errors);
    assert_eq!(results.new_node_claims.len(), 1);
    assert_eq!(results.new_node_claims[0].pods.len(), 50);
    assert!(results.new_node_claims[0].instance_type_options.iter().all(|it| it.allocatable().cpu_milli >= 10_000));
}

#[test]
fn a_created_claim_holds_the_next_pass_until_its_launch_resolves() {
    // Core `state/cluster.go` `Synced`: a NodeClaim without a providerID has no resolved
    // instance type, so provisioning waits instead of packing its pods again.
    let mut created = launched_claim("default-a", "1900m", "3Gi");
    created.status = None;
    assert!(!snapshot_of(Vec::new(), vec![created]).launches_resolved());
    assert!(snapshot_of(Vec::new(), vec![launched_claim("default-a", "1900m", "3Gi")]).launches_resolved());
}

/// A pending 1500m pod, optionally pinned to a zone by a node selector.
fn zonal_pod(name: &str, zone: Option<&str>) -> Pod {
    let mut pod = pending_pod(name, "1500m", "256Mi");
    if let (Some(zone), Some(spec)) = (zone, pod.spec.as_mut()) {
        spec.node_selector = Some([("topology.kubernetes.io/zone".to_string(), zone.to_string())].into());
    }
    pod
}

/// karpenter#3121 in miniature: a re-pass deals in-flight room again in queue order. Pass 1
/// put `p-late` (pinned to zone 1) on `default-a`, the only claim in zone 1 with room for
/// one, and `p-early` on `default-b` (zone 2). Re-packed as upstream does, `p-early` comes
/// first in the queue and takes `default-a` (first by name), and `p-late` needs a new claim.
/// Held where the last pass nominated them (`Memory::held_pods`), neither moves.
#[test]
fn pods_held_on_their_in_flight_claims_are_not_dealt_again() {
    let mut b = launched_claim("default-b", "7900m", "15Gi");
    if let Some(labels) = b.metadata.labels.as_mut() {
        labels.insert("topology.kubernetes.io/zone".into(), "test-zone-2".into());
    }
    let snapshot = snapshot_of(
        vec![zonal_pod("p-early", None), zonal_pod("p-late", Some("test-zone-1"))],
        vec![launched_claim("default-a", "1900m", "3Gi"), b],
    );
    let solve = |memory: &Memory| {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let (input, unparsed) =
            super::input::scheduling_input(&snapshot, memory, now, vec![pool()], Default::default());
        assert!(unparsed.is_empty());
        schedule(&input)
    };
    let repacked = solve(&Memory::default());
    assert_eq!(repacked.existing_node_assignments.get("default-a"), Some(&vec!["default/p-early".to_string()]));
    assert_eq!(repacked.new_node_claims.len(), 1, "upstream's re-pass opens a claim for p-late");

    let mut memory = Memory::default();
    memory.held_pods.insert("default/p-late".into(), "default-a".into());
    memory.held_pods.insert("default/p-early".into(), "default-b".into());
    let held = solve(&memory);
    assert!(held.new_node_claims.is_empty(), "{:?}", held.new_node_claims);
    assert_eq!(held.existing_node_assignments.get("default-a"), Some(&vec!["default/p-late".to_string()]));
    assert_eq!(held.existing_node_assignments.get("default-b"), Some(&vec!["default/p-early".to_string()]));
}
