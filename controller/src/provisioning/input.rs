//! Turns the cluster state into the scheduler's input (core provisioner.go `NewScheduler`):
//! existing and in-flight nodes as targets, bound pods for topology, DaemonSet templates for
//! overhead. Kept apart from the loop so the disruption controller can build the same input
//! without its candidates.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::pending::{is_daemon_set_pod, is_terminal};
use crate::apis::condition::StatusConditions;
use crate::apis::{NodeClaim, labels};
use crate::scheduling::pod::pod_requests;
use crate::scheduling::{BoundPod, ExistingNode, HostPort, RequirementsCache, Resources, SchedulablePod, Taint};
use crate::state::{Memory, Snapshot, SnapshotIndex};

/// Whether a Node reports `Ready=True`.
pub fn node_is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether Karpenter has initialized the node (label `karpenter.sh/initialized=true`).
pub fn node_is_initialized(node: &Node) -> bool {
    node.metadata.labels.as_ref().and_then(|l| l.get(labels::NODE_INITIALIZED_LABEL)).is_some_and(|v| v == "true")
}

fn taints_of(node: &Node) -> Vec<Taint> {
    node.spec.as_ref().and_then(|s| s.taints.as_ref()).into_iter().flatten().map(Taint::from_k8s).collect()
}

fn claim_taints(list: &[k8s_openapi::api::core::v1::Taint]) -> Vec<Taint> {
    list.iter().map(Taint::from_k8s).collect()
}

fn quantities(list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>) -> Resources {
    list.and_then(|l| Resources::from_quantities(l).ok()).unwrap_or_default()
}

fn claim_resources(list: Option<&crate::apis::ResourceList>) -> Resources {
    list.and_then(|l| Resources::from_resource_list(l).ok()).unwrap_or_default()
}

/// The host ports a pod's containers bind.
pub fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = &pod.spec else { return Vec::new() };
    spec.containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.filter(|port| *port > 0)?;
            Some(HostPort {
                ip: p.host_ip.clone().unwrap_or_default(),
                port,
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
            })
        })
        .collect()
}

/// What the active pods bound to a node use.
#[derive(Clone, Debug, Default)]
struct NodeUsage {
    requested: Resources,
    host_ports: Vec<HostPort>,
    /// The DaemonSet pods' share of `requested` (core `StateNode.DaemonSetRequests`).
    daemon_requests: Resources,
}

/// Requests and host ports of the active pods bound to each node.
fn usage_by_node(snapshot: &Snapshot) -> BTreeMap<String, NodeUsage> {
    let mut usage: BTreeMap<String, NodeUsage> = BTreeMap::new();
    for pod in snapshot.pods.values() {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else { continue };
        if is_terminal(pod) {
            continue;
        }
        let entry = usage.entry(node).or_default();
        if let Some(spec) = &pod.spec
            && let Ok(mut requests) = pod_requests(spec)
        {
            requests.pods = requests.pods.max(1);
            entry.requested.add(&requests);
            if is_daemon_set_pod(pod) {
                entry.daemon_requests.add(&requests);
            }
        }
        entry.host_ports.extend(host_ports(pod));
    }
    usage
}

/// Labels an in-flight claim's node will carry: its labels plus single-valued requirements.
fn claim_labels(claim: &NodeClaim) -> BTreeMap<String, String> {
    let mut labels = claim.metadata.labels.clone().unwrap_or_default();
    let requirements = crate::scheduling::Requirements::from_node_selector(&claim.spec.requirements);
    for (key, value) in requirements.single_valued_labels() {
        labels.entry(key).or_insert(value);
    }
    labels
}

/// Every node the scheduler may place pods on, or counts against limits: NodeClaims (with their
/// Node once registered) and Nodes without a claim. Deleting ones are marked.
///
/// An in-flight claim is a target like any node, as upstream's state node is (core
/// `pkg/controllers/state/statenode.go` l. 377 `Allocatable`: the claim's
/// `status.allocatable` until its Node registers, then the Node's with zeros filled from the
/// claim; l. 395 `Available` subtracts only pods *bound* to it). Pods nominated to it are
/// still pending, so each pass schedules them again, onto it first (core
/// `scheduling/scheduler.go` l. 582 `add` tries `addToExistingNode` before planned and new
/// claims; l. 845 `sortExistingNodes` puts initialized nodes first): the claim is filled again,
/// not duplicated (tested in `in_flight_tests.rs`). Pods the last pass nominated to it are
/// held there first ([`held_pods`], karpenter#3121).
pub fn existing_nodes(snapshot: &Snapshot, memory: &Memory) -> Vec<ExistingNode> {
    let usage = usage_by_node(snapshot);
    // Indexed once: a lookup per claim and per node by scanning was quadratic.
    let index = SnapshotIndex::new(snapshot);
    let mut nodes = Vec::new();
    let mut claimed: BTreeSet<&str> = BTreeSet::new();
    for claim in snapshot.node_claims.values() {
        let node = index.nodes_for_node_claim(claim).first().copied();
        if let Some(node) = node {
            claimed.insert(node.metadata.name.as_deref().unwrap_or_default());
        }
        let claim_name = claim.metadata.name.clone().unwrap_or_default();
        let status = claim.status.as_ref();
        let estimate = status
            .and_then(|s| s.allocatable.as_ref())
            .map(|a| claim_resources(Some(a)))
            .unwrap_or_else(|| claim_resources(claim.spec.resources.as_ref().and_then(|r| r.requests.as_ref())));
        let capacity = status
            .and_then(|s| s.capacity.as_ref())
            .map(|c| claim_resources(Some(c)))
            .unwrap_or_else(|| estimate.clone());
        let deleting = claim.metadata.deletion_timestamp.is_some() || memory.marked_for_deletion.contains(&claim_name);
        let existing = match node {
            Some(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let initialized = node_is_initialized(node) && claim.is_condition_true("Initialized");
                let mut allocatable = quantities(node.status.as_ref().and_then(|s| s.allocatable.as_ref()));
                if !initialized {
                    // Zero values are filled from the claim's estimate until the node reports.
                    for resource in ["cpu", "memory", "ephemeral-storage", "pods"] {
                        if allocatable.get(resource) == 0 {
                            allocatable.set(resource, estimate.get(resource));
                        }
                    }
                }
                let used = usage.get(&name).cloned().unwrap_or_default();
                ExistingNode {
                    labels: node.metadata.labels.clone().unwrap_or_default(),
                    taints: taints_of(node),
                    startup_taints: claim_taints(claim.spec.startup_taints()),
                    allocatable,
                    capacity,
                    requested: used.requested,
                    host_ports: used.host_ports,
                    daemon_requests: used.daemon_requests,
                    initialized,
                    marked_for_deletion: deleting || node.metadata.deletion_timestamp.is_some(),
                    requirements_cache: RequirementsCache::default(),
                    name,
                }
            }
            None => ExistingNode {
                labels: claim_labels(claim),
                taints: claim_taints(claim.spec.taints()),
                startup_taints: claim_taints(claim.spec.startup_taints()),
                allocatable: estimate,
                capacity,
                requested: Resources::default(),
                host_ports: Vec::new(),
                daemon_requests: Resources::default(),
                initialized: false,
                marked_for_deletion: deleting,
                requirements_cache: RequirementsCache::default(),
                name: claim_name,
            },
        };
        nodes.push(existing);
    }
    for node in snapshot.nodes.values() {
        let name = node.metadata.name.clone().unwrap_or_default();
        if claimed.contains(name.as_str()) || index.node_claim_for_node(node).is_some() {
            continue;
        }
        let used = usage.get(&name).cloned().unwrap_or_default();
        nodes.push(ExistingNode {
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: taints_of(node),
            startup_taints: Vec::new(),
            allocatable: quantities(node.status.as_ref().and_then(|s| s.allocatable.as_ref())),
            capacity: quantities(node.status.as_ref().and_then(|s| s.capacity.as_ref())),
            requested: used.requested,
            host_ports: used.host_ports,
            daemon_requests: used.daemon_requests,
            initialized: node_is_ready(node),
            marked_for_deletion: node.metadata.deletion_timestamp.is_some(),
            requirements_cache: RequirementsCache::default(),
            name,
        });
    }
    nodes
}

/// Active pods on nodes, for topology counts and inverse anti-affinity: neither terminal nor
/// terminating, as core leaves such pods out of its counts (`provisioning/scheduling/
/// topology.go` `IgnoredForTopology`, l. 614–616, skipped in `countDomains`, l. 405).
pub fn bound_pods(snapshot: &Snapshot) -> Vec<BoundPod> {
    bound_pods_keyed(snapshot).into_iter().map(|(_, bound)| bound).collect()
}

/// [`bound_pods`], each with its pod's key in the snapshot.
pub fn bound_pods_keyed(snapshot: &Snapshot) -> Vec<(&String, BoundPod)> {
    snapshot
        .pods
        .iter()
        .filter(|(_, pod)| !is_terminal(pod) && !super::pending::is_terminating(pod))
        .filter_map(|(key, pod)| {
            let node_name = pod.spec.as_ref()?.node_name.clone()?;
            Some((key, BoundPod { node_name, pod: SchedulablePod::from_pod(pod).ok()? }))
        })
        .collect()
}

/// One pod per DaemonSet, from its template, for per-template overhead.
pub fn daemon_set_pods(snapshot: &Snapshot) -> Vec<SchedulablePod> {
    snapshot
        .daemon_sets
        .values()
        .filter_map(|ds| {
            let template = ds.spec.as_ref()?.template.clone();
            let pod = Pod {
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    namespace: ds.metadata.namespace.clone(),
                    name: ds.metadata.name.clone(),
                    labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                    ..Default::default()
                },
                spec: template.spec,
                status: None,
            };
            SchedulablePod::from_pod(&pod).ok()
        })
        .collect()
}

/// The scheduler's input from state (core `provisioner.go` `Schedule` l. 372-391 and
/// `NewScheduler`): the pending provisionable pods and the currently reschedulable pods of
/// deleting nodes (`pods_to_place`), every node from state, the bound pods, the DaemonSets'
/// pod templates and the usable `node_pools` with their instance types. Pods that do not
/// parse come back beside it, for the caller to report.
pub fn scheduling_input(
    snapshot: &Snapshot,
    memory: &Memory,
    now: jiff::Timestamp,
    node_pools: Vec<crate::scheduling::NodePoolInput>,
    options: crate::scheduling::SchedulerOptions,
) -> (crate::scheduling::SchedulingInput, Vec<(Arc<Pod>, String)>) {
    let existing = existing_nodes(snapshot, memory);
    let mut pods = Vec::new();
    let mut unparsed = Vec::new();
    for (key, pod, source) in super::reschedulable::pods_to_place(snapshot, &existing, now) {
        match SchedulablePod::from_pod(pod) {
            Ok(mut p) => {
                let pending = source == super::reschedulable::PodSource::Pending;
                match super::volume_topology::add_volume_topology(snapshot, pod, &mut p, pending) {
                    Ok(()) => pods.push(p),
                    // Core `provisioner.go` l. 603-605: logged, the pod left out of the pass.
                    Err(error) => tracing::debug!(pod = %key, %error, "ignoring pod, volume topology"),
                }
            }
            Err(error) => unparsed.push((Arc::clone(pod), error)),
        }
    }
    let held = held_pods(snapshot, memory, &existing);
    let input = crate::scheduling::SchedulingInput {
        pods,
        existing_nodes: existing,
        bound_pods: bound_pods(snapshot),
        node_pools,
        daemon_set_pods: daemon_set_pods(snapshot),
        options,
        held,
    };
    (input, unparsed)
}

/// Each NodeClaim, by name, with the name it has among the scheduler's existing nodes: its
/// Node's once registered, else its own. One pass over the Nodes and one over the claims,
/// for the provisioner's held pods.
pub fn existing_names_of_claims(snapshot: &Snapshot) -> BTreeMap<String, String> {
    let node_by_provider: BTreeMap<&str, &str> = snapshot
        .nodes
        .values()
        .filter_map(|n| Some((n.spec.as_ref()?.provider_id.as_deref()?, n.metadata.name.as_deref()?)))
        .collect();
    snapshot
        .node_claims
        .values()
        .filter_map(|c| {
            let claim = c.metadata.name.clone()?;
            let node = c
                .provider_id()
                .and_then(|p| node_by_provider.get(p))
                .map_or_else(|| claim.clone(), |n| (*n).to_owned());
            Some((claim, node))
        })
        .collect()
}

/// The pods the last pass nominated to a NodeClaim still in flight (live, not being deleted,
/// not initialized), by the name that claim has among `existing` (its Node's once registered):
/// the pass holds them there first (`scheduling/scheduler_held.rs`, karpenter#3121).
fn held_pods(snapshot: &Snapshot, memory: &Memory, existing: &[ExistingNode]) -> BTreeMap<String, String> {
    if memory.held_pods.is_empty() {
        return BTreeMap::new();
    }
    let in_flight = existing_names_of_claims(snapshot);
    let open: BTreeSet<&str> =
        existing.iter().filter(|n| !n.initialized && !n.marked_for_deletion).map(|n| n.name.as_str()).collect();
    memory
        .held_pods
        .iter()
        .filter_map(|(pod, claim)| {
            let name = in_flight.get(claim)?;
            open.contains(name.as_str()).then(|| (pod.clone(), name.clone()))
        })
        .collect()
}

/// Whether a pod belongs to no DaemonSet and is active: the pods a deleting node must shed.
pub fn pods_to_reschedule<'a>(snapshot: &'a Snapshot, node_name: &'a str) -> impl Iterator<Item = &'a Arc<Pod>> + 'a {
    snapshot.pods_on_node(node_name).filter(|pod| must_move(pod))
}

/// Whether a pod bound to a node would have to move if the node went: the filter of
/// [`pods_to_reschedule`], for callers that found the node's pods another way (an index).
pub fn must_move(pod: &Pod) -> bool {
    super::pending::is_reschedulable(pod) && !is_daemon_set_pod(pod)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;

    use super::bound_pods;
    use crate::state::{Snapshot, key_of};

    fn pod_on_node(name: &str, phase: &str, deleting: bool) -> Pod {
        let mut pod = serde_json::json!({
            "metadata": {"namespace": "default", "name": name, "uid": format!("uid-{name}")},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
            "status": {"phase": phase}
        });
        if deleting {
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        }
        serde_json::from_value(pod).expect("pod")
    }

    /// Topology counts leave out terminal and terminating pods (core `topology.go`
    /// `IgnoredForTopology`): a zone whose pods are all terminating counts zero.
    #[test]
    fn terminating_and_terminal_pods_are_not_counted_for_topology() {
        let mut snapshot = Snapshot::default();
        for pod in [
            pod_on_node("running", "Running", false),
            pod_on_node("leaving", "Running", true),
            pod_on_node("done", "Succeeded", false),
        ] {
            snapshot.pods.insert(key_of(&pod), Arc::new(pod));
        }
        let keys: Vec<String> = bound_pods(&snapshot).into_iter().map(|b| b.pod.key).collect();
        assert_eq!(keys, vec!["default/running".to_string()]);
    }
}
