//! Pods lost with their node: the disruptions the audit stream cannot see as a pod request.
//!
//! [`super::disruptions`] judges each eviction or pod delete a controller sends. A pod also
//! goes down when its Node object is removed or its instance is terminated while it still
//! runs there, whoever's request did it. This tracker compares each observation with the one
//! before: a node whose Node object vanished, or whose instance an EC2 client terminated
//! (`Client.UserInitiatedShutdown` with no interruption warning — in a world only the
//! controller holds EC2 credentials), takes down every pod that still ran on it and was not
//! already being evicted. Each such loss is judged against the pods as they were at the
//! previous observation: which PodDisruptionBudgets it takes below their minimum and whether
//! the pod had an active `karpenter.sh/do-not-disrupt`.
//!
//! Not the controller's doing, and so not counted: instances the cloud took away (spot
//! reclaim, scheduled events, zone outages: a warning, a `Server.*` reason, or stopped), and
//! pods Karpenter never drains by design — DaemonSet pods, mirror pods and pods tolerating
//! `karpenter.sh/disrupted:NoSchedule` (core `pkg/utils/pod/scheduling.go`, `IsDrainable`).
//! Excused: pods the node's terminationGracePeriod forced off, computed from the NodeClaim's
//! own deletionTimestamp and its pool's `terminationGracePeriod` (see
//! [`crate::oracle::protection::termination_deadline`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::Ctx;
use super::disruptions::PdbBreach;
use crate::apiserver::labels_of;
use crate::apiserver::selector::LabelSelector;
use crate::oracle::protection::{
    desired_healthy, do_not_disrupt_active, forced_off, owned_by_node, termination_deadline, tolerates_disrupted_taint,
};
use crate::oracle::view::{PodView, View, condition_true};

/// One node's pods lost at once.
#[derive(Clone, Debug)]
pub struct NodeLoss {
    /// When it was observed.
    pub at: Duration,
    /// The node.
    pub node: String,
    /// `Node removed` or `instance i-… terminated`.
    pub how: String,
    /// The pods it took down (`namespace/name`), none forced off by the grace period.
    pub pods: Vec<String>,
    /// Of those, the ones with an active `karpenter.sh/do-not-disrupt`.
    pub do_not_disrupt: Vec<String>,
    /// Budgets the loss took below their minimum.
    pub pdb_breaches: Vec<PdbBreach>,
    /// Trace length at the observation.
    pub trace_position: u64,
}

/// What the tracker remembers of a node between observations.
#[derive(Clone, Debug)]
struct NodeState {
    provider_id: String,
    instance_live: bool,
    deadline: Option<Duration>,
}

/// The tracker; feed it every tick.
#[derive(Default)]
pub struct PodLosses {
    nodes: BTreeMap<String, NodeState>,
    pods: Vec<PodView>,
    pdbs: Vec<std::sync::Arc<serde_json::Value>>,
    lost: BTreeSet<String>,
    version: Option<u64>,
}

impl PodLosses {
    /// The node losses since the previous tick, then remembers this one.
    pub fn tick(&mut self, ctx: &Ctx<'_>) -> Vec<NodeLoss> {
        let view = ctx.view;
        let mut out = Vec::new();
        let evicted: BTreeSet<&str> = ctx.recorded.pods.iter().map(|d| d.pod.as_str()).collect();
        // A pod that ran to completion between the two observations was not taken down: a pod
        // killed with its node never reports `Succeeded`, and a terminal pod no longer holds
        // the drain (core `pkg/utils/pod/scheduling.go` `IsWaitingEviction`); the observation
        // before can be a tick too early to see the completion that let the drain finish.
        // Built only when a node is lost: most ticks lose none.
        let mut completed: Option<BTreeSet<&str>> = None;
        for (name, before) in &self.nodes {
            if self.lost.contains(name) {
                continue;
            }
            let instance = view.instances.iter().find(|i| i.provider_id == before.provider_id);
            let removed = !view.nodes.contains_key(name);
            let terminated = before.instance_live && instance.is_some_and(|i| i.terminated_by_client());
            let cloud_took_it = instance.is_some_and(|i| !i.live && !i.terminated_by_client());
            if !(removed || terminated) || cloud_took_it {
                continue;
            }
            let how = match instance {
                Some(i) if terminated => format!("instance {} terminated", i.id),
                _ => "Node removed".to_string(),
            };
            let completed = completed.get_or_insert_with(|| {
                ctx.pods.iter().filter(|p| p.object["status"]["phase"] == "Succeeded").map(|p| p.uid.as_str()).collect()
            });
            let lost: Vec<&PodView> = self
                .pods
                .iter()
                .filter(|p| drained(p) && p.node_name.as_deref() == Some(name.as_str()))
                .filter(|p| !evicted.contains(p.key.as_str()))
                .filter(|p| !completed.contains(p.uid.as_str()))
                .filter(|p| !forced_off(&p.object, before.deadline, view.now))
                .collect();
            if lost.is_empty() {
                continue;
            }
            out.push(NodeLoss {
                at: view.now,
                node: name.clone(),
                how,
                pods: lost.iter().map(|p| p.key.clone()).collect(),
                do_not_disrupt: lost
                    .iter()
                    .filter(|p| do_not_disrupt_active(&p.object, view.now))
                    .map(|p| p.key.clone())
                    .collect(),
                pdb_breaches: breaches(&self.pdbs, &self.pods, &lost),
                trace_position: view.trace_position,
            });
        }
        for loss in &out {
            self.lost.insert(loss.node.clone());
        }
        self.remember(view, ctx.pods);
        out
    }

    fn remember(&mut self, view: &View, pods: &[PodView]) {
        let claims: BTreeMap<&str, &crate::oracle::view::ClaimView> =
            view.claims.values().filter_map(|c| Some((c.node_name.as_deref()?, c))).collect();
        self.nodes = view
            .nodes
            .iter()
            .map(|(name, n)| {
                let claim = claims.get(name.as_str()).copied();
                let pool = claim.and_then(|c| view.pools.get(&c.nodepool));
                let state = NodeState {
                    provider_id: n.provider_id.clone(),
                    instance_live: view.instances.iter().any(|i| i.provider_id == n.provider_id && i.live),
                    deadline: termination_deadline(claim.and_then(|c| c.deleting_since), pool.map(|p| &*p.object)),
                };
                (name.clone(), state)
            })
            .collect();
        self.lost.retain(|n| view.nodes.contains_key(n));
        // Pods and PDBs live in the store: unchanged when its resourceVersion is.
        if self.version != Some(view.resource_version) {
            self.version = Some(view.resource_version);
            self.pods = pods.iter().filter(|p| p.active()).cloned().collect();
            self.pdbs = view.pdbs.clone();
        }
    }
}

/// A running pod Karpenter must drain before its node goes: bound, active, not a DaemonSet
/// or mirror pod, not tolerating the disrupted taint.
fn drained(p: &PodView) -> bool {
    p.active()
        && p.node_name.is_some()
        && !p.daemonset
        && p.object["status"]["phase"] == "Running"
        && !owned_by_node(&p.object)
        && !tolerates_disrupted_taint(&p.object)
}

/// Budgets losing `lost` at once takes below their minimum, over `pods` (all of them; the
/// inactive are left out):
/// expected = active matching pods, healthy = the Ready ones.
pub fn breaches(pdbs: &[std::sync::Arc<serde_json::Value>], pods: &[PodView], lost: &[&PodView]) -> Vec<PdbBreach> {
    let mut out = Vec::new();
    for pdb in pdbs {
        let namespace = pdb["metadata"]["namespace"].as_str().unwrap_or_default();
        let Some(selector) = pdb
            .pointer("/spec/selector")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .and_then(|s| LabelSelector::from_api(&s).ok())
        else {
            continue;
        };
        let covered =
            |p: &PodView| p.key.split('/').next() == Some(namespace) && selector.matches(&labels_of(&p.object));
        let lost_healthy = lost.iter().filter(|p| covered(p) && condition_true(&p.object, "Ready")).count() as i64;
        if lost_healthy == 0 {
            continue;
        }
        let matching: Vec<&PodView> = pods.iter().filter(|p| p.active() && covered(p)).collect();
        let healthy = matching.iter().filter(|p| condition_true(&p.object, "Ready")).count() as i64;
        let Some(desired) = desired_healthy(&pdb["spec"], matching.len() as i64) else { continue };
        if healthy - lost_healthy < desired {
            out.push(PdbBreach {
                pdb: format!("{namespace}/{}", pdb["metadata"]["name"].as_str().unwrap_or_default()),
                healthy,
                desired,
            });
        }
    }
    out
}
