//! `schedule_without` over a `ClusterBase` gives exactly what `schedule_with` gives over the
//! cluster without those nodes and their pods (the consolidation probes rely on it to leave
//! every decision unchanged): zone spreads, hostname anti-affinity owners, zone affinity,
//! NodePool limits, an uninitialized and a deleting node, for every single node and several
//! groups of nodes removed.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::apis::labels;
use crate::scheduling::snapshot::{BoundPod, ExistingNode, RequirementsCache, SchedulingView};
use crate::scheduling::{ClusterBase, PoolTemplates, Results, schedule_with, schedule_without};

fn node(name: &str, zone: &str, initialized: bool, deleting: bool) -> ExistingNode {
    ExistingNode {
        name: name.to_owned(),
        labels: BTreeMap::from([
            (labels::TOPOLOGY_ZONE_LABEL.to_owned(), zone.to_owned()),
            (labels::HOSTNAME_LABEL.to_owned(), name.to_owned()),
            (labels::NODE_POOL_LABEL.to_owned(), "default".to_owned()),
        ]),
        taints: Vec::new(),
        startup_taints: Vec::new(),
        allocatable: Resources { pods: 20, ..Resources::cpu_memory(4000, 8 << 30) },
        capacity: Resources { pods: 20, ..Resources::cpu_memory(4000, 8 << 30) },
        requested: Resources::default(),
        host_ports: Vec::new(),
        daemon_requests: Resources::default(),
        initialized,
        marked_for_deletion: deleting,
        requirements_cache: RequirementsCache::default(),
    }
}

fn web(name: &str) -> SchedulablePod {
    let mut p = labelled(pod(name, 700, 256), &[("app", "web")]);
    p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "web"));
    p
}

fn loner(name: &str) -> SchedulablePod {
    let mut p = labelled(pod(name, 300, 128), &[("app", "loner")]);
    p.shape.anti_affinity.push(term(labels::HOSTNAME_LABEL, "web"));
    p
}

fn follower(name: &str) -> SchedulablePod {
    let mut p = labelled(pod(name, 200, 128), &[("app", "follower")]);
    p.shape.affinity.push(term(labels::TOPOLOGY_ZONE_LABEL, "loner"));
    p
}

fn cluster() -> SchedulingInput {
    let zones = ["test-zone-1", "test-zone-2", "test-zone-3"];
    let mut snapshot = input(types(8), vec![web("pending-web"), pod("pending-plain", 500, 256)]);
    snapshot.node_pools =
        vec![pool_input(node_pool("default", serde_json::json!({"limits": {"cpu": 64, "nodes": 12}})), types(8))];
    for n in 0..9 {
        let name = format!("n{n}");
        snapshot.existing_nodes.push(node(&name, zones[n % 3], n != 7, n == 8));
        let pods = [web(&format!("{name}-web")), loner(&format!("{name}-loner")), follower(&format!("{name}-f"))];
        for p in pods.into_iter().take(1 + n % 3) {
            snapshot.bound_pods.push(BoundPod { node_name: name.clone(), pod: p });
        }
        snapshot.bound_pods.push(BoundPod { node_name: name, pod: pod(&format!("n{n}-plain"), 400, 256) });
    }
    // A pod bound to a node the snapshot does not have, and one placed again (its node is
    // being deleted): neither is counted.
    snapshot.bound_pods.push(BoundPod { node_name: "gone".to_owned(), pod: web("orphan") });
    snapshot.pods.push(snapshot.bound_pods.iter().find(|b| b.node_name == "n8").expect("n8 pod").pod.clone());
    snapshot
}

/// The reference: a plain pass over the cluster without the nodes in `removed`, placing the
/// pending pods and the removed nodes' pods.
fn reference(snapshot: &SchedulingInput, templates: &PoolTemplates, removed: &BTreeSet<&str>) -> Results {
    let moved = snapshot.bound_pods.iter().filter(|b| removed.contains(b.node_name.as_str())).map(|b| &b.pod);
    let view = SchedulingView {
        pods: snapshot.pods.iter().chain(moved).collect(),
        existing_nodes: snapshot.existing_nodes.iter().filter(|n| !removed.contains(n.name.as_str())).collect(),
        bound_pods: snapshot.bound_pods.iter().filter(|b| !removed.contains(b.node_name.as_str())).collect(),
        daemon_set_pods: &snapshot.daemon_set_pods,
        options: &snapshot.options,
        held: &snapshot.held,
    };
    schedule_with(&view, templates)
}

#[test]
fn a_pass_without_some_nodes_matches_a_pass_over_the_rest() {
    let snapshot = cluster();
    let templates =
        PoolTemplates::new(&snapshot.node_pools, &snapshot.daemon_set_pods, snapshot.options.min_values_policy);
    let base = ClusterBase::new(
        &snapshot.existing_nodes,
        &snapshot.bound_pods,
        &snapshot.daemon_set_pods,
        &snapshot.options,
        &templates,
    );
    let names: Vec<String> = (0..9).map(|n| format!("n{n}")).collect();
    let mut removals: Vec<BTreeSet<&str>> = vec![BTreeSet::new()];
    removals.extend(names.iter().map(|n| BTreeSet::from([n.as_str()])));
    removals.extend((2..=9).map(|k| names[..k].iter().map(String::as_str).collect()));
    removals.push(BTreeSet::from(["n1", "n4", "n7", "not-a-node"]));
    for removed in removals {
        let expected = reference(&snapshot, &templates, &removed);
        let without = base.without(removed.iter().copied());
        let moved = snapshot.bound_pods.iter().filter(|b| removed.contains(b.node_name.as_str())).map(|b| &b.pod);
        let pods = snapshot.pods.iter().chain(moved).collect();
        let actual = schedule_without(&base, &without, pods, &templates);
        assert_eq!(actual, expected, "without {removed:?}");
        let kept: Vec<&str> = base.remaining_nodes(&without).map(|n| n.name.as_str()).collect();
        let expected_kept: Vec<&str> =
            snapshot.existing_nodes.iter().map(|n| n.name.as_str()).filter(|n| !removed.contains(n)).collect();
        assert_eq!(kept, expected_kept);
    }
}
