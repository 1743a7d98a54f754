//! Sick kubelets (`nodeConditions` faults): chosen Nodes report a condition unhealthy, as a
//! kubelet whose container runtime hung (`Ready` False) or the EKS node monitoring agent
//! (`KernelReady` False) would, until the fault heals. For `Ready` the node lifecycle
//! controller's `node.kubernetes.io/not-ready` taints come with it, as in a real cluster.
//!
//! The nodes are chosen when the fault starts: Karpenter's Nodes (label
//! `karpenter.sh/nodepool`, of the fault's NodePool if it names one) that are not being
//! deleted, in name order, the first `count` or `ceil(fraction × matching)`. The condition's
//! `reason` is [`SICK_KUBELET_REASON`], which the node agents
//! (`crate::actors::node_agent`) leave alone instead of reporting the node Ready again.
//! Healing restores the healthy status on the chosen Nodes that still exist.

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_world::clock::{rfc3339, sim_epoch};

use serde_json::{Value, json};

use crate::actors::node_agent::SICK_KUBELET_REASON;
use crate::apiserver::ApiServer;
use crate::apiserver::store::{Part, Store, WriteOptions};
use crate::scenario::drawn_fault::DrawnFault;

/// The Karpenter NodePool label.
const NODE_POOL_LABEL: &str = "karpenter.sh/nodepool";
/// The node lifecycle controller's taint for a Node whose `Ready` is False.
const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// The Nodes each active occurrence made sick, and what they reported.
#[derive(Default)]
pub struct NodeConditionsState {
    sick: BTreeMap<usize, (Vec<String>, String)>,
}

/// The status that means healthy for a condition whose unhealthy status is `sick`: `Ready`
/// style conditions (sick False/Unknown) are healthy True, pressure style ones (sick True)
/// healthy False.
pub fn healthy_status(sick: &str) -> &'static str {
    if sick == "True" { "False" } else { "True" }
}

/// The Nodes an occurrence picks from `nodes` (name, pool, deleting), in name order.
pub fn choose(
    nodes: &[(String, Option<String>, bool)],
    pool: Option<&str>,
    count: Option<u32>,
    fraction: Option<f64>,
) -> Vec<String> {
    let mut matching: Vec<&String> = nodes
        .iter()
        .filter(|(_, p, deleting)| !deleting && p.is_some() && (pool.is_none() || p.as_deref() == pool))
        .map(|(n, _, _)| n)
        .collect();
    matching.sort();
    let take = crate::scenario::selection::how_many(count, fraction, matching.len());
    matching.into_iter().take(take).cloned().collect()
}

impl NodeConditionsState {
    /// Starts occurrence `id`: picks its Nodes and makes them report the condition.
    pub fn start(&mut self, server: &ApiServer, id: usize, fault: &DrawnFault, now: Duration) -> Vec<String> {
        let DrawnFault::NodeConditions { node_pool, count, fraction, condition, status } = fault else {
            return Vec::new();
        };
        let mut store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        let nodes_t = store.registry().get("", "nodes").expect("built in");
        let nodes: Vec<(String, Option<String>, bool)> = store
            .iter(&nodes_t.key(), None)
            .map(|n| {
                let name = n["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                let pool = n["metadata"]["labels"][NODE_POOL_LABEL].as_str().map(str::to_owned);
                (name, pool, !n["metadata"]["deletionTimestamp"].is_null())
            })
            .collect();
        let chosen = choose(&nodes, node_pool.as_deref(), *count, *fraction);
        let at = rfc3339(sim_epoch() + now);
        for name in &chosen {
            report(&mut store, name, condition, status, false, &at);
        }
        self.sick.insert(id, (chosen.clone(), condition.clone()));
        chosen
    }

    /// Heals occurrence `id`: its Nodes that still exist report the healthy status again.
    pub fn stop(&mut self, server: &ApiServer, id: usize, fault: &DrawnFault, now: Duration) {
        let Some((names, condition)) = self.sick.remove(&id) else { return };
        let DrawnFault::NodeConditions { status, .. } = fault else { return };
        let mut store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        let at = rfc3339(sim_epoch() + now);
        for name in &names {
            report(&mut store, name, &condition, healthy_status(status), true, &at);
        }
    }
}

/// Writes `condition` = `status` on Node `name` (a status write, as the kubelet's), and for
/// `Ready` the matching not-ready taints (a spec write, as the node lifecycle controller's);
/// `healthy` says whether this is the recovery, `now` the simulated time as RFC 3339 (the runner
/// plays faults between steps, outside any host, where the store's clock reads the epoch).
fn report(store: &mut Store, name: &str, condition: &str, status: &str, healthy: bool, now: &str) {
    let nodes_t = store.registry().get("", "nodes").expect("built in");
    let Ok(node) = store.get(&nodes_t, "", name) else { return };
    let mut new = (*node).clone();
    let (reason, message) = if healthy {
        ("KubeletReady", "kubelet is posting ready status")
    } else {
        (SICK_KUBELET_REASON, "PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s")
    };
    let mut conditions: Vec<Value> =
        new.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    if conditions.iter().any(|c| c["type"] == condition && c["status"] == status) {
        return;
    }
    conditions.retain(|c| c["type"] != condition);
    conditions.push(json!({"type": condition, "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": now, "lastTransitionTime": now}));
    new["status"]["conditions"] = json!(conditions);
    let _ = store.update(&nodes_t, "", name, new, Part::Status, WriteOptions::default());
    if condition != "Ready" {
        return;
    }
    let Ok(node) = store.get(&nodes_t, "", name) else { return };
    let mut new = (*node).clone();
    let mut taints: Vec<Value> = new.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    taints.retain(|t| t["key"] != NOT_READY_TAINT);
    if !healthy {
        for effect in ["NoSchedule", "NoExecute"] {
            taints.push(json!({"key": NOT_READY_TAINT, "effect": effect, "timeAdded": now}));
        }
    }
    if taints.is_empty() {
        new["spec"].as_object_mut().map(|m| m.remove("taints"));
    } else {
        new["spec"]["taints"] = json!(taints);
    }
    let _ = store.update(&nodes_t, "", name, new, Part::Main, WriteOptions::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<(String, Option<String>, bool)> {
        vec![
            ("n3".into(), Some("a".into()), false),
            ("n1".into(), Some("a".into()), false),
            ("n2".into(), Some("b".into()), false),
            ("n4".into(), Some("a".into()), true),
            ("system".into(), None, false),
        ]
    }

    #[test]
    fn chooses_live_karpenter_nodes_in_name_order() {
        assert_eq!(choose(&nodes(), None, Some(2), None), vec!["n1", "n2"]);
        assert_eq!(choose(&nodes(), Some("a"), None, Some(0.5)), vec!["n1"], "ceil(0.5 × 2)");
        assert_eq!(choose(&nodes(), Some("a"), None, Some(1.0)), vec!["n1", "n3"], "deleting n4 is not chosen");
        assert_eq!(choose(&nodes(), None, Some(10), None).len(), 3, "the unlabelled node is not Karpenter's");
        assert!(choose(&nodes(), Some("c"), Some(1), None).is_empty());
    }

    #[test]
    fn healthy_is_the_opposite_of_sick() {
        assert_eq!(healthy_status("False"), "True");
        assert_eq!(healthy_status("Unknown"), "True");
        assert_eq!(healthy_status("True"), "False");
    }
}
