//! Which nodes voluntary disruption may act on, and what disrupting each costs
//! (karpenter-behaviour.md §5.2; core `GetCandidates`, `NewCandidate`, statenode.go).
//!
//! A candidate is an initialized, managed NodeClaim with its Node, not deleting, not queued,
//! not nominated within the nomination window, without the Node `do-not-disrupt` annotation and
//! whose pods may be evicted: no active pod `do-not-disrupt`, no pod behind more than one PDB
//! or behind a PDB that allows no disruption. Drift (the *eventual* class) ignores the pod
//! blockers on claims that set a `terminationGracePeriod`, since termination will force them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;

use super::blocker::Blocker;
use super::input::DisruptionInput;
use crate::apis::condition::StatusConditions;
use crate::apis::labels::{self, DO_NOT_DISRUPT_ANNOTATION};
use crate::apis::nodeclaim::{CONDITION_CONSOLIDATABLE, CONDITION_DRIFTED, CONDITION_INITIALIZED};
use crate::apis::nodepool::ConsolidationPolicy;
use crate::apis::{NodeClaim, NodePool};
use crate::cloudprovider::InstanceType;
use crate::provisioning::input::must_move;
use crate::provisioning::pending::{is_static_pod, is_terminal, is_terminating};
use crate::runtime::clock::elapsed;
use crate::scheduling::{LabelSelector, SchedulablePod};
use crate::state::SnapshotIndex;
use crate::termination::drain::{has_active_do_not_disrupt, tolerates_disrupted_taint};

/// The pod annotation the ReplicaSet controller reads to pick which pods to delete first.
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Which blockers apply (core `GracefulDisruptionClass` / `EventualDisruptionClass`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisruptionClass {
    /// Emptiness and consolidation: every blocker applies.
    Graceful,
    /// Drift: pod blockers are ignored when the claim has a `terminationGracePeriod`.
    Eventual,
}

/// A node voluntary disruption may act on.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The NodeClaim.
    pub claim: Arc<NodeClaim>,
    /// Its Node.
    pub node: Arc<Node>,
    /// NodeClaim name.
    pub name: String,
    /// Node name.
    pub node_name: String,
    /// NodePool name.
    pub pool: String,
    /// The pool's consolidation policy.
    pub policy: ConsolidationPolicy,
    /// Whether the pool's `consolidateAfter` is not `Never`.
    pub consolidation_enabled: bool,
    /// Whether the pool is static (`replicas` set; core `Candidate.OwnedByStaticNodePool`).
    pub static_pool: bool,
    /// The node's instance type, when the pool still offers it.
    pub instance_type: Option<Arc<InstanceType>>,
    /// Zone label.
    pub zone: String,
    /// Capacity type label.
    pub capacity_type: String,
    /// Hourly price of the node's offering (instance type × zone × capacity type).
    pub price: Option<f64>,
    /// Pods that must move elsewhere if the node goes (not DaemonSet, static or finished).
    pub pods: Vec<Arc<Pod>>,
    /// The pods a simulation moves, parsed for the scheduler: the currently reschedulable ones
    /// (core `disruption/helpers.go` l. 88-92).
    pub schedulable: Vec<SchedulablePod>,
    /// Σ pod eviction costs × lifetime remaining (core `DisruptionCost`).
    pub disruption_cost: f64,
    /// 1 + Σ max(0, eviction cost) over the pods that must move (core
    /// `RescheduleDisruptionCost`, `types.go` l. 136-143): the denominator of
    /// [`Candidate::savings_ratio`].
    pub reschedule_disruption_cost: f64,
}

/// The disruption cost of draining any node, before its pods (core
/// `PerNodeBaseDisruptionCost`, `types.go` l. 134).
pub const PER_NODE_BASE_DISRUPTION_COST: f64 = 1.0;

impl Candidate {
    /// No pod that must move adds a positive eviction cost (core `Candidate.IsEmpty`,
    /// `types.go` l. 151-157): DaemonSet, static and finished pods do not count, nor pods
    /// whose eviction cost clamps to zero or below (a deletion cost or priority that low);
    /// the Empty reason and budgets then govern the node.
    pub fn is_empty(&self) -> bool {
        self.reschedule_disruption_cost <= PER_NODE_BASE_DISRUPTION_COST
    }

    /// The node's price per unit of disruption (core `Candidate.SavingsRatio`, `types.go`
    /// l. 145-146): consolidation tries the highest first. A node whose offering is no longer
    /// offered has price 0 (core `resolveNodePrice` l. 117-131).
    pub fn savings_ratio(&self) -> f64 {
        self.price.unwrap_or(0.0) / self.reschedule_disruption_cost
    }

    /// `Consolidatable=True` on the claim.
    pub fn is_consolidatable(&self) -> bool {
        self.claim.is_condition_true(CONDITION_CONSOLIDATABLE)
    }

    /// When the claim became `Drifted=True`, if it is drifted.
    pub fn drifted_since(&self) -> Option<jiff::Timestamp> {
        self.claim.condition(CONDITION_DRIFTED).filter(|c| c.is_true()).map(|c| c.last_transition_time.0)
    }

    /// Whether the node runs spot capacity.
    pub fn is_spot(&self) -> bool {
        self.capacity_type == labels::CAPACITY_TYPE_SPOT
    }
}

/// A node that would be a candidate but for something that blocks it (a `DisruptionBlocked`
/// event).
#[derive(Clone, Debug)]
pub struct Blocked {
    /// The NodeClaim.
    pub claim: Arc<NodeClaim>,
    /// Its Node.
    pub node: Arc<Node>,
    /// Why.
    pub reason: Blocker,
}

/// Karpenter's per-pod eviction cost: `1 + deletionCost/2^27 + priority/2^25`, clamped to
/// [−10, 10], so higher-priority and costlier-to-delete pods make a node dearer to disrupt.
pub fn pod_eviction_cost(pod: &Pod) -> f64 {
    let mut cost = 1.0;
    if let Some(deletion_cost) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST_ANNOTATION))
        .and_then(|v| v.parse::<i32>().ok())
    {
        cost += f64::from(deletion_cost) / 2f64.powi(27);
    }
    if let Some(priority) = pod.spec.as_ref().and_then(|s| s.priority) {
        cost += f64::from(priority) / 2f64.powi(25);
    }
    cost.clamp(-10.0, 10.0)
}

/// The fraction of the claim's `expireAfter` still ahead of it, in [0, 1] (1 when `Never`).
pub fn lifetime_remaining(claim: &NodeClaim, now: jiff::Timestamp) -> f64 {
    let Some(expire_after) = claim.spec.expire_after().duration() else { return 1.0 };
    let Some(created) = claim.metadata.creation_timestamp.as_ref() else { return 1.0 };
    if expire_after.is_zero() {
        return 0.0;
    }
    let age = elapsed(created.0, now);
    (1.0 - age.as_secs_f64() / expire_after.as_secs_f64()).clamp(0.0, 1.0)
}

/// The node's disruption cost: Σ pod eviction costs × lifetime remaining.
pub fn disruption_cost(pods: &[Arc<Pod>], claim: &NodeClaim, now: jiff::Timestamp) -> f64 {
    pods.iter().map(|p| pod_eviction_cost(p)).sum::<f64>() * lifetime_remaining(claim, now)
}

fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A PodDisruptionBudget as the candidate filter needs it.
struct PdbLimit {
    key: String,
    namespace: String,
    selector: Option<LabelSelector>,
    disruptions_allowed: i32,
    always_allow_unhealthy: bool,
}

fn pdb_limits(input: &DisruptionInput) -> Vec<PdbLimit> {
    input
        .snapshot
        .pdbs
        .iter()
        .map(|(key, pdb)| {
            let spec = pdb.spec.as_ref();
            PdbLimit {
                key: key.clone(),
                namespace: pdb.namespace().unwrap_or_default(),
                selector: spec.and_then(|s| s.selector.as_ref()).map(LabelSelector::from_k8s),
                disruptions_allowed: pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed),
                always_allow_unhealthy: spec.and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
                    == Some("AlwaysAllow"),
            }
        })
        .collect()
}

/// Why the pods of a node cannot all be evicted now, if they cannot (core
/// `ValidatePodsDisruptable` + `pdb.Limits.CanEvictPods`).
fn pod_blocker(pods: &[&Arc<Pod>], pdbs: &[PdbLimit], now: jiff::Timestamp) -> Option<Blocker> {
    for pod in pods {
        if has_active_do_not_disrupt(pod, now) {
            return Some(Blocker::DoNotDisruptPod { pod: key_of(pod) });
        }
    }
    for pod in pods {
        if tolerates_disrupted_taint(pod) || is_static_pod(pod) {
            continue;
        }
        let empty = std::collections::BTreeMap::new();
        let pod_labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let matching: Vec<&PdbLimit> = pdbs
            .iter()
            .filter(|p| p.namespace == namespace && p.selector.as_ref().is_some_and(|s| s.matches(pod_labels)))
            .collect();
        if matching.len() > 1 {
            let pdbs = matching.iter().map(|p| p.key.clone()).collect();
            return Some(Blocker::MultiplePdbs { pod: key_of(pod), pdbs });
        }
        if let Some(pdb) = matching.first()
            && pdb.disruptions_allowed <= 0
            && (!pdb.always_allow_unhealthy || is_pod_ready(pod))
        {
            return Some(Blocker::PdbPreventsEviction { pdb: pdb.key.clone() });
        }
    }
    None
}

fn key_of(pod: &Pod) -> String {
    format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or("default"), pod.metadata.name.as_deref().unwrap_or(""))
}

/// Every candidate (in claim-name order) and every blocked node, for `class`.
pub fn get_candidates(input: &DisruptionInput, class: DisruptionClass) -> (Vec<Candidate>, Vec<Blocked>) {
    let snapshot = &input.snapshot;
    let pdbs = pdb_limits(input);
    // One index per call: a lookup per claim by scanning every node and pod made this
    // quadratic in the cluster size.
    let index = SnapshotIndex::new(snapshot);
    let mut candidates = Vec::new();
    let mut blocked = Vec::new();
    for (name, claim) in &snapshot.node_claims {
        let Some(node) = index.nodes_for_node_claim(claim).first().copied().cloned() else { continue };
        if !claim.is_condition_true(CONDITION_INITIALIZED)
            || claim.metadata.deletion_timestamp.is_some()
            || node.metadata.deletion_timestamp.is_some()
            || input.memory.marked_for_deletion.contains(name)
            || input.queued.contains(name)
        {
            continue;
        }
        let node_name = node.name_any();
        let block = |reason: Blocker| Blocked { claim: claim.clone(), node: node.clone(), reason };
        let Some(pool_name) = claim.node_pool_name() else { continue };
        let Some(pool) = snapshot.node_pools.get(pool_name) else {
            blocked.push(block(Blocker::NodePoolNotFound { pool: pool_name.to_owned() }));
            continue;
        };
        let nominated = [name.as_str(), node_name.as_str()].iter().any(|n| {
            input.memory.nominated.get(*n).is_some_and(|at| elapsed(*at, input.now) < input.options.nomination_window)
        });
        if nominated {
            blocked.push(block(Blocker::Nominated));
            continue;
        }
        if node.annotations().get(DO_NOT_DISRUPT_ANNOTATION).is_some_and(|v| v == "true") {
            blocked.push(block(Blocker::DoNotDisruptNode));
            continue;
        }
        let active: Vec<&Arc<Pod>> =
            index.pods_on_node(&node_name).filter(|p| !is_terminal(p) && !is_terminating(p)).collect();
        let forced_by_tgp = class == DisruptionClass::Eventual && claim.spec.termination_grace_period.is_some();
        if !forced_by_tgp && let Some(reason) = pod_blocker(&active, &pdbs, input.now) {
            blocked.push(block(reason));
            continue;
        }
        candidates.push(new_candidate(input, &index, claim, &node, pool, pool_name));
    }
    (candidates, blocked)
}

fn new_candidate(
    input: &DisruptionInput,
    index: &SnapshotIndex<'_>,
    claim: &Arc<NodeClaim>,
    node: &Arc<Node>,
    pool: &NodePool,
    pool_name: &str,
) -> Candidate {
    let node_name = node.name_any();
    let node_labels = node.labels();
    let label = |key: &str| {
        node_labels
            .get(key)
            .or_else(|| claim.metadata.labels.as_ref().and_then(|l| l.get(key)))
            .cloned()
            .unwrap_or_default()
    };
    let zone = label(labels::TOPOLOGY_ZONE_LABEL);
    let capacity_type = label(labels::CAPACITY_TYPE_LABEL);
    let instance_type = input.instance_type(pool_name, &label(labels::INSTANCE_TYPE_LABEL)).cloned();
    let price = instance_type.as_ref().and_then(|it| {
        it.offerings
            .iter()
            .filter(|o| o.zone == zone && o.capacity_type == capacity_type)
            .map(|o| o.price)
            .min_by(f64::total_cmp)
    });
    let keyed: Vec<(&str, &Arc<Pod>)> = index.keyed_pods_on_node(&node_name).filter(|(_, p)| must_move(p)).collect();
    let pods: Vec<Arc<Pod>> = keyed.iter().map(|(_, p)| Arc::clone(p)).collect();
    // Core helpers.go l. 88-92: only the candidate's currently reschedulable pods are
    // simulated (no do-not-disrupt pods, no pods fully blocked by PDBs).
    let schedulable = keyed
        .iter()
        .filter(|(_, p)| input.eviction_limits.is_currently_reschedulable(p, input.now))
        .filter_map(|(key, p)| input.schedulable_pod(key, p))
        .collect();
    let disruption_cost = disruption_cost(&pods, claim, input.now);
    let reschedule_disruption_cost = reschedule_disruption_cost(&pods);
    Candidate {
        claim: claim.clone(),
        node: node.clone(),
        name: claim.name_any(),
        node_name,
        pool: pool_name.to_owned(),
        policy: pool.spec.consolidation_policy(),
        consolidation_enabled: !pool.spec.consolidate_after().is_never(),
        static_pool: pool.spec.is_static(),
        instance_type,
        zone,
        capacity_type,
        price,
        pods,
        schedulable,
        disruption_cost,
        reschedule_disruption_cost,
    }
}

/// 1 + Σ max(0, eviction cost) over `pods` (core `computeRescheduleDisruptionCost`,
/// `types.go` l. 136-143).
pub fn reschedule_disruption_cost(pods: &[Arc<Pod>]) -> f64 {
    PER_NODE_BASE_DISRUPTION_COST + pods.iter().map(|p| pod_eviction_cost(p).max(0.0)).sum::<f64>()
}

/// Sorts by savings ratio descending, ties by name: the order every consolidation method
/// tries candidates in (core `consolidation.go` `sortCandidates`, l. 138-154, used by
/// emptiness, single-node and multi-node consolidation; upstream's `sort.Slice` leaves ties
/// in no particular order, the name makes ours deterministic). Until upstream's Balanced
/// policy change (kubernetes-sigs/karpenter#2962) the order was disruption cost ascending.
pub fn sort_by_savings_ratio(candidates: &mut [Candidate]) {
    candidates.sort_by(savings_order);
}

/// [`sort_by_savings_ratio`] over references (same comparator, same stable sort, so the same
/// order), for callers that clone only the candidates they keep.
pub fn sort_refs_by_savings_ratio(candidates: &mut [&Candidate]) {
    candidates.sort_by(|a, b| savings_order(a, b));
}

fn savings_order(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.savings_ratio().total_cmp(&a.savings_ratio()).then_with(|| a.name.cmp(&b.name))
}
