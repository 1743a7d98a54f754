//! A node as the moves search sees it, and the per-node rules that keep it out of
//! consolidation whatever it costs (core v1.14.1 `state/statenode.go`
//! `ValidateNodeDisruptable` and `ValidatePodsDisruptable`, `disruption/types.go`
//! `NewCandidate`, `disruption/consolidation.go` `ShouldDisrupt`):
//! not managed, not initialized, deleting or tainted `karpenter.sh/disrupted`, nominated in
//! the last 20 s, `karpenter.sh/do-not-disrupt` on the Node or its NodeClaim or on an
//! active pod, a pod whose PDB allows no disruption (or that two PDBs select), a NodePool
//! with `consolidateAfter: Never`, and a node still inside `consolidateAfter`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::{CapacityType, FakeCloud};
use dovetail_world::SimDuration;
use serde_json::Value;

use super::Kept;
use super::budget_left;
use super::clock::ConsolidationClock;
use super::inputs::MoveInputs;
use crate::oracle::protection::do_not_disrupt_active;
use crate::oracle::resources::{Requirement, Resources, allocatable};
use crate::oracle::view::{PodView, View};

/// A node that received a pod is nominated for this long and may not be disrupted
/// (max(2 × BatchMaxDuration, 10 s) with the default 10 s batch: karpenter-behaviour.md §0).
pub const NOMINATION_WINDOW: Duration = Duration::from_secs(20);

/// A pod the node would have to reschedule.
#[derive(Clone, Debug)]
pub struct Movable {
    /// `namespace/name`.
    pub key: String,
    /// Its requests.
    pub requests: Resources,
    /// The pod object (node selectors, tolerations).
    pub object: Arc<Value>,
    /// The preferred node-affinity term Karpenter's simulation holds the pod to (see
    /// [`super::preference`]), if any.
    pub preferred: Option<Vec<Requirement>>,
}

impl Movable {
    /// Whether a node labelled `labels` satisfies the preferred term the pod is held to.
    pub fn preference_allows(&self, labels: &BTreeMap<String, String>) -> bool {
        self.preferred.as_ref().is_none_or(|term| term.iter().all(|r| r.matches(labels)))
    }
}

/// A live node.
#[derive(Clone, Debug)]
pub struct Host {
    /// Node name.
    pub name: String,
    /// Instance type.
    pub instance_type: String,
    /// Spot capacity.
    pub spot: bool,
    /// What it costs now, USD per hour (the cloud's price for its zone and capacity type).
    pub price: f64,
    /// Its NodePool (managed nodes).
    pub nodepool: Option<String>,
    /// Labels and taints.
    pub labels: BTreeMap<String, String>,
    /// Taints.
    pub taints: Vec<Value>,
    /// Allocatable minus every active pod bound to it.
    pub free: Resources,
    /// Its reschedulable pods, largest CPU first.
    pub movable: Vec<Movable>,
    /// The rule that keeps it out of consolidation whatever the search finds, if any.
    pub blocked: Option<String>,
    /// Why the oracle cannot judge where its pods could go, if it cannot.
    pub unjudged: Option<String>,
    /// It may receive rescheduled pods: initialized, not being disrupted, past its
    /// `consolidateAfter` (v1.14 keeps pods off nodes inside it), and none of its pods has
    /// pod anti-affinity (which could turn newcomers away).
    pub target: bool,
    /// Only the `consolidateAfter` clock keeps it: upstream's own clock may already count
    /// it consolidatable, so whether it is a candidate is not known from outside.
    pub waiting: bool,
    /// Its `RescheduleDisruptionCost` (see [`reschedule_cost`]): what upstream's candidate
    /// order, its emptiness and Balanced scoring read.
    pub reschedule_cost: f64,
}

impl Host {
    /// No pod it must reschedule adds a positive eviction cost (core HEAD
    /// `disruption/types.go:151-157` `IsEmpty`): Emptiness deletes it, consolidation skips it.
    pub fn is_empty(&self) -> bool {
        self.reschedule_cost <= PER_NODE_BASE_DISRUPTION_COST
    }

    /// Its savings ratio, price over reschedule disruption cost (`types.go:145-146`).
    pub fn savings_ratio(&self) -> f64 {
        self.price / self.reschedule_cost
    }
}

/// What draining any node costs before its pods (core HEAD `disruption/types.go:134`
/// `PerNodeBaseDisruptionCost`).
pub const PER_NODE_BASE_DISRUPTION_COST: f64 = 1.0;

/// Upstream's `RescheduleDisruptionCost` (core HEAD `disruption/types.go:136-143`
/// `computeRescheduleDisruptionCost`): `1 +` Σ `max(0, EvictionCost)` over the pods the
/// node must reschedule (`pod.IsReschedulable`, `utils/pod/scheduling.go:44-51`: active,
/// not DaemonSet, not static; a terminating StatefulSet pod counts there too, which
/// [`Movable`] leaves out).
pub fn reschedule_cost(movable: &[Movable]) -> f64 {
    PER_NODE_BASE_DISRUPTION_COST + movable.iter().map(|m| eviction_cost(&m.object).max(0.0)).sum::<f64>()
}

/// Upstream's `EvictionCost` of one pod (core v1.13.0 `utils/disruption/disruption.go:48`):
/// `1 + pod-deletion-cost / 2^27 + priority / 2^25`, clamped to [−10, 10].
pub fn eviction_cost(pod: &Value) -> f64 {
    let mut cost = 1.0;
    if let Some(d) = pod["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"]
        .as_str()
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        cost += d / 2f64.powi(27);
    }
    if let Some(p) = pod["spec"]["priority"].as_f64() {
        cost += p / 2f64.powi(25);
    }
    cost.clamp(-10.0, 10.0)
}

impl Host {
    /// The host kept by `rule`.
    pub fn kept(&self, rule: &str) -> Kept {
        Kept {
            node: self.name.clone(),
            instance_type: self.instance_type.clone(),
            price: self.price,
            rule: rule.into(),
        }
    }
}

/// A NodePool's consolidation settings and what its budgets allow now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolRules {
    /// `consolidationPolicy: WhenEmpty`.
    pub when_empty: bool,
    /// More nodes it may disrupt now for reason `Empty`.
    pub empty_budget: usize,
    /// … and for reason `Underutilized`.
    pub underutilized_budget: usize,
    /// `spec.weight` (0 when unset): the provisioner tries pools by weight.
    pub weight: i64,
    /// `consolidationPolicy: Balanced`: consolidation moves must pass [`super::balanced`].
    pub balanced: bool,
    /// Its nodes' cost and disruption totals (the Balanced denominators).
    pub totals: Totals,
}

impl PoolRules {
    /// The rules of `pool` (named `name`) over the cluster's `hosts` at `now`.
    pub fn of(pool: &Value, hosts: &[Host], name: &str, now: Duration) -> Self {
        let budgets: Vec<Value> =
            pool.pointer("/spec/disruption/budgets").and_then(Value::as_array).cloned().unwrap_or_default();
        let mine: Vec<&Host> = hosts.iter().filter(|h| h.nodepool.as_deref() == Some(name)).collect();
        let disrupting = mine.iter().filter(|h| h.blocked.as_deref() == Some(BEING_DISRUPTED)).count();
        PoolRules {
            when_empty: pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty",
            empty_budget: budget_left(&budgets, mine.len(), disrupting, "Empty", now),
            underutilized_budget: budget_left(&budgets, mine.len(), disrupting, "Underutilized", now),
            weight: pool["spec"]["weight"].as_i64().unwrap_or(0),
            balanced: pool["spec"]["disruption"]["consolidationPolicy"] == "Balanced",
            totals: Totals::of(&mine),
        }
    }
}

/// A pool's Balanced denominators (core HEAD `disruption/balanced.go` `NodePoolTotals`, `computeNodePoolTotals` l. 38-103): what its
/// nodes cost (USD per hour) and Σ of their reschedule disruption costs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    /// Σ node prices.
    pub cost: f64,
    /// Σ node `RescheduleDisruptionCost`.
    pub disruption: f64,
}

impl Totals {
    /// The totals of one pool's hosts.
    pub fn of(hosts: &[&Host]) -> Self {
        Totals { cost: hosts.iter().map(|h| h.price).sum(), disruption: hosts.iter().map(|h| h.reschedule_cost).sum() }
    }
}

/// The rule of nodes already deleting or tainted for disruption.
pub const BEING_DISRUPTED: &str = "it is being disrupted (deleting or tainted karpenter.sh/disrupted)";

/// The cluster's live nodes, in name order, with their rules.
pub fn hosts(
    view: &View,
    pods: &[PodView],
    cloud: &FakeCloud,
    inputs: &MoveInputs,
    clock: &ConsolidationClock,
) -> Vec<Host> {
    let instances: BTreeMap<&str, _> =
        view.instances.iter().filter(|i| i.live).map(|i| (i.provider_id.as_str(), i)).collect();
    let mut on_node: BTreeMap<&str, Vec<&PodView>> = BTreeMap::new();
    for p in pods {
        let Some(n) = p.node_name.as_deref() else { continue };
        if p.active() {
            on_node.entry(n).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    for (name, node) in &view.nodes {
        let Some(instance) = instances.get(node.provider_id.as_str()) else { continue };
        let Some(info) = cloud.catalog().get(&instance.instance_type) else { continue };
        let spot = instance.capacity_type == CapacityType::Spot;
        let price = crate::oracle::instance_price::instance_price(cloud, &view.overlays, instance).unwrap_or(0.0);
        let facts = inputs.nodes.get(name).cloned().unwrap_or_default();
        let mut used = Resources::default();
        let mut movable = Vec::new();
        let mut pod_rule = None;
        let mut unjudged = None;
        let mut anti_affinity = false;
        for p in on_node.get(name.as_str()).into_iter().flatten() {
            used.add(&p.requests);
            anti_affinity |= !p.object["spec"]["affinity"]["podAntiAffinity"].is_null();
            if p.daemonset || is_static(&p.object) {
                continue;
            }
            if pod_rule.is_none() {
                pod_rule = pod_blocks(p, inputs, view.now);
            }
            if unjudged.is_none() {
                unjudged = placement_rule(&p.object).map(|r| format!("not judged: pod {} has {r}", p.key));
            }
            movable.push(Movable {
                key: p.key.clone(),
                requests: p.requests,
                object: p.object.clone(),
                preferred: None,
            });
        }
        movable.sort_by(|a, b| {
            b.requests.cpu.total_cmp(&a.requests.cpu).then(b.requests.memory.total_cmp(&a.requests.memory))
        });
        let pool = node.nodepool.as_ref().and_then(|n| view.pools.get(n));
        let claim = view.claims.values().find(|c| c.node_name.as_deref() == Some(name.as_str()));
        let state = NodeState {
            managed: claim.is_some() && node.nodepool.is_some(),
            initialized: node.initialized && claim.is_some_and(|c| c.initialized),
            disrupted: node.deleting || node.disrupted || claim.is_some_and(|c| c.deleting_since.is_some()),
            pool_exists: pool.is_some(),
            consolidate_after: pool.and_then(|p| consolidate_after(&p.object)),
            node_do_not_disrupt: node.do_not_disrupt,
            claim_do_not_disrupt: inputs.claim_do_not_disrupt.contains(name),
            pod_rule,
            last_event: clock.last_event(name),
            now: view.now,
        };
        let (blocked, settled) = state.rule();
        let waiting = blocked.is_some() && state.definite_rule().is_none();
        let reschedule_cost = reschedule_cost(&movable);
        out.push(Host {
            name: name.clone(),
            instance_type: instance.instance_type.clone(),
            spot,
            price,
            nodepool: node.nodepool.clone(),
            labels: facts.labels,
            taints: facts.taints,
            free: allocatable(info).minus(&used),
            movable,
            target: node.initialized && !state.disrupted && settled && !anti_affinity,
            blocked,
            unjudged,
            waiting,
            reschedule_cost,
        });
    }
    out
}

/// What the per-node rules look at.
#[derive(Clone, Debug, Default)]
pub struct NodeState {
    /// It has a NodeClaim and a NodePool label.
    pub managed: bool,
    /// The Node and its NodeClaim are initialized.
    pub initialized: bool,
    /// Deleting, or tainted `karpenter.sh/disrupted`.
    pub disrupted: bool,
    /// Its NodePool exists.
    pub pool_exists: bool,
    /// The pool's `consolidateAfter`: `Some(None)` for `Never`, `None` when unparsable.
    pub consolidate_after: Option<Option<Duration>>,
    /// The Node is annotated `karpenter.sh/do-not-disrupt: "true"`.
    pub node_do_not_disrupt: bool,
    /// Its NodeClaim is.
    pub claim_do_not_disrupt: bool,
    /// Why one of its pods blocks it, if one does (see [`pod_blocks`]).
    pub pod_rule: Option<String>,
    /// Its last pod event (see [`ConsolidationClock::last_event`]).
    pub last_event: Option<Duration>,
    /// Now.
    pub now: Duration,
}

impl NodeState {
    /// The first rule that keeps the node out of consolidation, if any, and whether it is
    /// past `consolidateAfter` and the nomination window (so it may also receive pods).
    pub fn rule(&self) -> (Option<String>, bool) {
        let settled = match (self.last_event, self.consolidate_after) {
            (Some(at), Some(Some(after))) => self.now.saturating_sub(at) >= after.max(NOMINATION_WINDOW),
            _ => false,
        };
        let rule = self.definite_rule().or_else(|| {
            (!settled).then(|| {
                let since = self.last_event.map_or("not seen initialized yet".to_string(), |at| {
                    format!("{}s since its last pod event", self.now.saturating_sub(at).as_secs())
                });
                format!("inside consolidateAfter or the nomination window ({since})")
            })
        });
        (rule, settled)
    }

    /// The first rule that keeps the node out of consolidation whatever the
    /// `consolidateAfter` clock says, if any.
    pub fn definite_rule(&self) -> Option<String> {
        if !self.managed {
            Some("not managed by Karpenter (no NodeClaim or NodePool label)".to_string())
        } else if !self.initialized {
            Some("it is not initialized yet".to_string())
        } else if self.disrupted {
            Some(BEING_DISRUPTED.to_string())
        } else if !self.pool_exists {
            Some("its NodePool does not exist".to_string())
        } else if self.consolidate_after == Some(None) {
            Some("its NodePool has consolidateAfter: Never".to_string())
        } else if self.node_do_not_disrupt {
            Some("the Node is annotated karpenter.sh/do-not-disrupt".to_string())
        } else if self.claim_do_not_disrupt {
            Some("its NodeClaim is annotated karpenter.sh/do-not-disrupt".to_string())
        } else {
            self.pod_rule.clone()
        }
    }
}

/// A pool's `consolidateAfter`: `None` when absent or unparsable, `Some(None)` for `Never`.
fn consolidate_after(pool: &Value) -> Option<Option<Duration>> {
    match pool["spec"]["disruption"]["consolidateAfter"].as_str() {
        Some("Never") => Some(None),
        Some(d) => SimDuration::parse(d).ok().map(|d| Some(d.0)),
        None => Some(Some(Duration::ZERO)),
    }
}

/// Why an active pod keeps its node out of graceful disruption, if it does: an active
/// do-not-disrupt annotation, or PDBs (two selecting it, or one allowing no disruption).
pub fn pod_blocks(pod: &PodView, inputs: &MoveInputs, now: Duration) -> Option<String> {
    if do_not_disrupt_active(&pod.object, now) {
        return Some(format!("pod {} is annotated karpenter.sh/do-not-disrupt", pod.key));
    }
    let pdbs: Vec<_> = inputs.pdbs_of(&pod.object).collect();
    if pdbs.len() > 1 {
        return Some(format!("pod {} is selected by more than one PDB", pod.key));
    }
    pdbs.first()
        .filter(|p| p.disruptions_allowed <= 0)
        .map(|p| format!("pod {}'s PDB {} allows no disruption now", pod.key, p.name))
}

/// A mirror (static) pod: Kubernetes owns it through its Node, and nothing reschedules it.
fn is_static(pod: &Value) -> bool {
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|o| o.iter().any(|o| o["kind"] == "Node"))
}

/// Placement rules the packing model does not follow: room elsewhere may not be a place
/// such a pod can go (Karpenter's simulation treats even `ScheduleAnyway` spread as
/// required first).
fn placement_rule(pod: &Value) -> Option<&'static str> {
    let spec = &pod["spec"];
    if spec["topologySpreadConstraints"].as_array().is_some_and(|c| !c.is_empty()) {
        Some("topology spread constraints")
    } else if !spec["affinity"]["podAffinity"].is_null() || !spec["affinity"]["podAntiAffinity"].is_null() {
        Some("pod (anti-)affinity")
    } else if spec["volumes"].as_array().is_some_and(|v| v.iter().any(|v| !v["persistentVolumeClaim"].is_null())) {
        Some("a persistent volume claim")
    } else if spec["containers"].as_array().is_some_and(|c| {
        c.iter().any(|c| c["ports"].as_array().is_some_and(|p| p.iter().any(|p| !p["hostPort"].is_null())))
    }) {
        Some("a host port")
    } else {
        None
    }
}
