//! The DaemonSet controller: one pod per eligible node, pinned with node affinity on
//! `metadata.name` and placed by the scheduler, as Kubernetes has done since 1.12.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::pods::{
    at, controlled, create_from_template, delete_pod, is_active, is_ready, pod_change_matters, ty, write_status,
};
use crate::actors::runtime::Reconciler;
use crate::apiserver::labels_of;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{EventType, Store};

/// Reconciles every DaemonSet.
#[derive(Default)]
pub struct DaemonSetController;

impl Reconciler for DaemonSetController {
    fn name(&self) -> &'static str {
        "daemonset-controller"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("apps", "daemonsets"), ("", "nodes"), ("", "pods")]
    }

    fn wakes_on(&mut self, key: &ResourceKey, event: EventType, obj: &Value) -> bool {
        pod_change_matters("DaemonSet", key, event, obj)
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let dst = ty(store, "apps", "daemonsets");
        let nodes_t = ty(store, "", "nodes");
        // Shared handles to the pass-start objects, not deep copies.
        let all_nodes: Vec<Arc<Value>> = store.iter(&nodes_t.key(), None).cloned().collect();
        let nodes: Vec<Arc<Value>> =
            all_nodes.iter().filter(|n| at(n, &["metadata", "deletionTimestamp"]).is_none()).cloned().collect();
        let all: Vec<Arc<Value>> = store.iter(&dst.key(), None).cloned().collect();
        for ds in all {
            if at(&ds, &["metadata", "deletionTimestamp"]).is_none() {
                reconcile_one(store, &ds, &nodes, &all_nodes);
            }
        }
        None
    }
}

/// The node a DaemonSet pod is pinned to.
fn pinned_node(pod: &Value) -> Option<String> {
    let terms = at(
        pod,
        &["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"],
    )?;
    terms.as_array()?.iter().find_map(|t| {
        t["matchFields"]
            .as_array()?
            .iter()
            .find_map(|f| (f["key"] == "metadata.name").then(|| f["values"][0].as_str().map(String::from)).flatten())
    })
}

/// `nodes` are the Nodes new daemon pods may go to (not deleting); `all_nodes` every Node,
/// deleting ones included, on which a running daemon pod may stay.
fn reconcile_one(store: &mut Store, ds: &Value, nodes: &[Arc<Value>], all_nodes: &[Arc<Value>]) {
    let ns = ds["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    let uid = ds["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let pods_t = ty(store, "", "pods");
    let mut by_node: BTreeMap<String, Vec<Arc<Value>>> = BTreeMap::new();
    for p in controlled(store, &pods_t.key(), &ns, &uid).filter(|p| is_active(p)) {
        if let Some(n) = pinned_node(p) {
            by_node.entry(n).or_default().push(p.clone());
        }
    }
    let template = &ds["spec"]["template"];
    let eligible: Vec<&Value> = nodes.iter().map(|n| &**n).filter(|n| should_run(template, n)).collect();
    let eligible_names: Vec<String> =
        eligible.iter().map(|n| n["metadata"]["name"].as_str().unwrap_or("").to_string()).collect();
    for node in &eligible_names {
        if !by_node.contains_key(node) {
            let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
            let mut spec_extra = json!({"affinity": affinity});
            let mut tolerations = template["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
            tolerations.extend(daemon_tolerations());
            spec_extra["tolerations"] = json!(tolerations);
            create_from_template(store, ds, template, Some(spec_extra));
        }
    }
    // A daemon pod already running keeps running on a node it may no longer be placed on, as
    // long as it tolerates the node's NoExecute taints (Kubernetes
    // `pkg/controller/daemon/daemon_controller.go`, `NodeShouldRunDaemonPod`: a NoSchedule
    // taint stops new daemon pods, not running ones — e.g. `karpenter.sh/disrupted` on a
    // node Karpenter drains, which then evicts the daemon pods itself, last; nor does a
    // Node's deletion, which Karpenter's finalizer holds until the drain is done).
    for (node, pods) in &by_node {
        let continues = all_nodes
            .iter()
            .find(|n| n["metadata"]["name"].as_str() == Some(node.as_str()))
            .is_some_and(|n| should_continue_running(template, n));
        let keep = usize::from(eligible_names.contains(node) || continues);
        for p in pods.iter().skip(keep) {
            delete_pod(store, p);
        }
    }
    let scheduled = by_node.keys().filter(|n| eligible_names.contains(n)).count();
    let ready = by_node.iter().filter(|(n, ps)| eligible_names.contains(n) && ps.iter().any(|p| is_ready(p))).count();
    let status = json!({
        "desiredNumberScheduled": eligible_names.len(),
        "currentNumberScheduled": scheduled,
        "updatedNumberScheduled": scheduled,
        "numberReady": ready,
        "numberAvailable": ready,
        "numberUnavailable": eligible_names.len() - ready,
        "numberMisscheduled": by_node.keys().filter(|n| !eligible_names.contains(n)).count(),
        "observedGeneration": ds["metadata"]["generation"],
    });
    let dst = ty(store, "apps", "daemonsets");
    if let Ok(current) = store.get(&dst, &ns, ds["metadata"]["name"].as_str().unwrap_or("")) {
        write_status(store, &dst, &current, status);
    }
}

/// Tolerations the DaemonSet controller adds to every daemon pod.
fn daemon_tolerations() -> Vec<Value> {
    let mut t: Vec<Value> = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
        .iter()
        .map(|k| json!({"key": k, "operator": "Exists", "effect": "NoExecute"}))
        .collect();
    for k in [
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        t.push(json!({"key": k, "operator": "Exists", "effect": "NoSchedule"}));
    }
    t
}

/// Whether a daemon pod belongs on `node`: its nodeSelector matches and it tolerates the
/// node's NoSchedule/NoExecute taints (with the daemon tolerations added).
fn should_run(template: &Value, node: &Value) -> bool {
    fits(template, node, |effect| effect != "PreferNoSchedule")
}

/// Whether a daemon pod already on `node` may stay: the node selector matches and it
/// tolerates the node's NoExecute taints.
fn should_continue_running(template: &Value, node: &Value) -> bool {
    fits(template, node, |effect| effect == "NoExecute")
}

/// Whether the template's node selector matches `node` and its tolerations (with the daemon
/// ones added) tolerate every taint of `node` whose effect `counts`.
fn fits(template: &Value, node: &Value, counts: impl Fn(&str) -> bool) -> bool {
    let labels = labels_of(node);
    let selector_ok = template
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .is_none_or(|sel| sel.iter().all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str()));
    if !selector_ok {
        return false;
    }
    let mut tolerations = at(template, &["spec", "tolerations"]).and_then(Value::as_array).cloned().unwrap_or_default();
    tolerations.extend(daemon_tolerations());
    at(node, &["spec", "taints"]).and_then(Value::as_array).into_iter().flatten().all(|taint| {
        let effect = taint["effect"].as_str().unwrap_or("");
        !counts(effect) || tolerations.iter().any(|t| tolerates(t, taint))
    })
}

fn tolerates(t: &Value, taint: &Value) -> bool {
    let key_ok = match t["key"].as_str() {
        None | Some("") => t["operator"].as_str() == Some("Exists"),
        Some(k) => Some(k) == taint["key"].as_str(),
    };
    let effect_ok = t["effect"].as_str().is_none_or(|e| e.is_empty() || Some(e) == taint["effect"].as_str());
    let value_ok = t["operator"].as_str() == Some("Exists")
        || t["value"].as_str().unwrap_or("") == taint["value"].as_str().unwrap_or("");
    key_ok && effect_ok && value_ok
}
