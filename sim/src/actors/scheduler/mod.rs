//! An independent model of kube-scheduler: the oracle that places pods in the simulated
//! cluster. It shares no code with the controller's bin-packer.
//!
//! Start with [`Scheduler::schedule`]: it runs one scheduling cycle for a pod against the
//! [`Cache`] (PreFilter, Filter over nodes in zone-interleaved order starting where the last
//! cycle stopped, Score, seeded tie-break) and returns the chosen node or a [`FitError`] whose
//! message matches kube-scheduler's. [`Scheduler::assume`] accounts the binding.
//! [`queue::SchedulingQueue`] orders pending pods and applies backoff. Everything is pure:
//! no I/O, time passed in, randomness from the caller's seeded RNG.
//!
//! # Layout
//! - `cache`: nodes, bound pods and incremental indexes ([`Cache`]).
//! - `plugins`: one file per kube-scheduler plugin (filters and scores), order in
//!   [`FILTER_ORDER`].
//! - [`fit_error`]: the FitError message and the `PodScheduled=False` condition.
//! - [`queue`]: active, backoff and unschedulable queues.
//! - `pod_facts`, `node_info`, `resources`, `selectors`: compiled pod and node views.
//!
//! # Driving it from the store (what the actor does)
//! 1. Feed watch events: `cache_mut().upsert_node/remove_node/upsert_pod/remove_pod`, and
//!    [`SchedulingQueue::add`]/`update`/`delete` for unbound pods; translate node and bound-pod
//!    changes into [`ClusterEvent`]s for [`SchedulingQueue::on_cluster_event`].
//! 2. While [`SchedulingQueue::pop`] yields a pod: [`Scheduler::schedule`]; on success
//!    [`Scheduler::assume`], post [`binding`], report [`Outcome::Scheduled`]; on failure
//!    write [`SchedulingFailure::condition`] and report [`Outcome::Unschedulable`] with
//!    [`SchedulingFailure::rejectors`].
//! 3. Sleep until [`SchedulingQueue::next_deadline`] or the next watch event.
//!
//! # Caveats
//! - Preemption is not performed (see [`queue`]); its message is still produced.
//! - Volumes: VolumeBinding (with VolumeZone's check) is modelled from the claims the actor
//!   resolves ([`VolumeFacts`]); NodeVolumeLimits, DRA and ImageLocality are not (ImageLocality
//!   would score 0 everywhere without image data anyway).
//! - Default spreading uses only the owning controller's selector (recorded with
//!   [`Cache::set_controller_selector`]), not Services selecting the pod.

mod cache;
pub mod fit_error;
mod node_info;
mod plugins;
mod pod_facts;
pub mod queue;
mod resources;
pub(crate) mod selectors;
mod volume_facts;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

pub use cache::{Cache, PodMatcher, TermRole, TopologyIndex};
pub use fit_error::{FitError, FitMessageStyle, SchedulingFailure};
pub use node_info::NodeInfo;
pub use plugins::node_resources_fit::ScoringStrategy;
pub use plugins::volume_binding::REASON_UNBOUND_IMMEDIATE;
pub use plugins::{Code, FILTER_ORDER, Plugin, Status};
pub use pod_facts::{
    AffinityTerm, HostPort, NamespaceSet, PodFacts, PodKey, SpreadConstraint, WeightedTerm, WhenUnsatisfiable,
};
pub use queue::{Admission, ClusterEvent, Outcome, SchedulingQueue};
pub use resources::{Resources, pod_requests, pod_requests_non_zero};
pub use selectors::{LabelRequirement, Labels, PodSelector};
pub use volume_facts::VolumeFacts;

use plugins::{
    balanced_allocation, default_normalize, inter_pod_affinity, node_affinity, node_name, node_ports,
    node_resources_fit, node_unschedulable, pod_topology_spread, taint_toleration, volume_binding,
};

/// kube-scheduler `minFeasibleNodesToFind`: below this many nodes all are evaluated.
pub const FEASIBLE_NODES_MIN: usize = 100;
/// kube-scheduler `minFeasibleNodesPercentageToFind`.
pub const FEASIBLE_NODES_PERCENTAGE_MIN: usize = 5;

/// Score plugin weights of kube-scheduler's default profile (`getDefaultPlugins`).
pub mod weights {
    /// TaintToleration.
    pub const TAINT_TOLERATION: i64 = 3;
    /// NodeAffinity.
    pub const NODE_AFFINITY: i64 = 2;
    /// NodeResourcesFit.
    pub const NODE_RESOURCES_FIT: i64 = 1;
    /// PodTopologySpread.
    pub const POD_TOPOLOGY_SPREAD: i64 = 2;
    /// InterPodAffinity.
    pub const INTER_POD_AFFINITY: i64 = 2;
    /// NodeResourcesBalancedAllocation.
    pub const BALANCED_ALLOCATION: i64 = 1;
}

/// Scheduler settings a scenario may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// NodeResourcesFit scoring strategy. Default LeastAllocated.
    pub scoring_strategy: ScoringStrategy,
    /// `percentageOfNodesToScore`; `None` is kube-scheduler's adaptive default
    /// (`50 - nodes/125`, at least 5%, at least 100 nodes).
    pub percentage_of_nodes_to_score: Option<usize>,
    /// Which release's message wording to produce.
    pub messages: FitMessageStyle,
    /// kube-scheduler's system default soft spreading (zone maxSkew 5, hostname maxSkew 3).
    /// Default true.
    pub system_default_spreading: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            scoring_strategy: ScoringStrategy::LeastAllocated,
            percentage_of_nodes_to_score: None,
            messages: FitMessageStyle::default(),
            system_default_spreading: true,
        }
    }
}

/// A successful scheduling cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleResult {
    /// The chosen node.
    pub node: String,
    /// Nodes the filters looked at.
    pub evaluated_nodes: usize,
    /// Nodes that passed every filter (of those evaluated).
    pub feasible_nodes: usize,
}

/// The kube-scheduler model: a cache plus the round-robin start index. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct Scheduler {
    config: SchedulerConfig,
    cache: Cache,
    next_start_node_index: usize,
}

/// `numFeasibleNodesToFind`.
pub fn feasible_nodes_to_find(percentage: Option<usize>, nodes: usize) -> usize {
    if nodes < FEASIBLE_NODES_MIN {
        return nodes;
    }
    let percentage = match percentage {
        Some(p) if p > 0 => p.min(100),
        _ => 50usize.saturating_sub(nodes / 125).max(FEASIBLE_NODES_PERCENTAGE_MIN),
    };
    (nodes * percentage / 100).max(FEASIBLE_NODES_MIN)
}

/// Runs the filters in kube-scheduler's order, stopping at the first rejection.
fn run_filters(
    pod: &PodFacts,
    slot: usize,
    node: &node_info::NodeInfo,
    spread: Option<&pod_topology_spread::FilterState>,
    affinity: Option<&inter_pod_affinity::FilterState>,
    taint_detail: bool,
) -> Option<Status> {
    node_unschedulable::filter(pod, node)
        .or_else(|| node_name::filter(pod, node))
        .or_else(|| taint_toleration::filter(pod, node, taint_detail))
        .or_else(|| node_affinity::filter(pod, node))
        .or_else(|| node_ports::filter(pod, node))
        .or_else(|| node_resources_fit::filter(pod, node))
        .or_else(|| volume_binding::filter(pod, node))
        .or_else(|| spread.and_then(|s| pod_topology_spread::filter(s, slot)))
        .or_else(|| affinity.and_then(|s| inter_pod_affinity::filter(s, node)))
}

impl Scheduler {
    /// A scheduler with an empty cache.
    pub fn new(config: SchedulerConfig) -> Self {
        Scheduler { config, cache: Cache::new(), next_start_node_index: 0 }
    }

    /// The settings.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// The cluster view (read).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The cluster view, to feed it watch events (`upsert_node`, `upsert_pod`, ...).
    pub fn cache_mut(&mut self) -> &mut Cache {
        &mut self.cache
    }

    /// Accounts `pod` as bound to `node` right away (kube-scheduler's assume), so the next
    /// cycle sees it before the store echoes the binding back.
    pub fn assume(&mut self, pod: &Pod, node: &str) {
        self.assume_facts(PodFacts::new(pod), node);
    }

    /// [`Scheduler::assume`] for a pod already compiled (the actor keeps each queued pod's
    /// facts between attempts).
    pub fn assume_facts(&mut self, mut facts: PodFacts, node: &str) {
        facts.node_name = Some(node.to_string());
        self.cache.add_bound(facts, node.to_string(), true);
    }

    /// One scheduling cycle for a pending pod. Does not change the cache: call
    /// [`Scheduler::assume`] with the result once the binding is decided.
    ///
    /// # Errors
    /// [`SchedulingFailure`] when the cluster has no nodes or no node fits; its
    /// [`SchedulingFailure::condition`] is what the actor writes on the pod.
    pub fn schedule(&mut self, pod: &Pod, rng: &mut ChaCha8Rng) -> Result<ScheduleResult, SchedulingFailure> {
        self.schedule_facts(&PodFacts::new(pod), rng)
    }

    /// [`Scheduler::schedule`] for a pod already compiled ([`PodFacts::new`] is a pure
    /// function of the pod, so the result is the same).
    ///
    /// # Errors
    /// As [`Scheduler::schedule`].
    pub fn schedule_facts(
        &mut self,
        facts: &PodFacts,
        rng: &mut ChaCha8Rng,
    ) -> Result<ScheduleResult, SchedulingFailure> {
        let num_all_nodes = self.cache.node_count();
        if num_all_nodes == 0 {
            return Err(SchedulingFailure::NoNodes);
        }
        let mut candidates: Vec<usize> = self.cache.node_order().to_vec();
        let mut absent_status = None;
        match node_affinity::pre_filter(facts) {
            node_affinity::PreFilter::AllNodes => {}
            node_affinity::PreFilter::Conflict => {
                let status = Status::new(
                    Plugin::NodeAffinity,
                    Code::UnschedulableAndUnresolvable,
                    node_affinity::REASON_CONFLICT,
                );
                return Err(self.unfit(facts, BTreeMap::new(), Some(status), true));
            }
            node_affinity::PreFilter::Only(names) => {
                candidates = names.iter().filter_map(|n| self.cache.slot_of(n)).collect();
                absent_status = Some(Status::new(
                    Plugin::NodeAffinity,
                    Code::UnschedulableAndUnresolvable,
                    "node(s) didn't satisfy plugin(s) [NodeAffinity]",
                ));
            }
        }
        if let Some(status) = volume_binding::pre_filter(facts) {
            return Err(self.unfit(facts, BTreeMap::new(), Some(status), true));
        }
        let spread = pod_topology_spread::pre_filter(&mut self.cache, facts);
        let affinity = inter_pod_affinity::pre_filter(&mut self.cache, facts);
        let (feasible, statuses) = self.find_feasible(facts, &candidates, spread.as_ref(), affinity.as_ref());
        if feasible.is_empty() {
            return Err(self.unfit(facts, statuses, absent_status, false));
        }
        let evaluated_nodes = feasible.len() + statuses.len();
        let chosen = if feasible.len() == 1 {
            feasible[0]
        } else {
            let scores = self.score(facts, &feasible);
            select_host(&feasible, &scores, rng)
        };
        Ok(ScheduleResult {
            node: self.cache.slot(chosen).name.clone(),
            evaluated_nodes,
            feasible_nodes: feasible.len(),
        })
    }

    /// Filters candidates round-robin from the last start index until enough feasible nodes
    /// are found (`findNodesThatPassFilters`).
    fn find_feasible(
        &mut self,
        pod: &PodFacts,
        candidates: &[usize],
        spread: Option<&pod_topology_spread::FilterState>,
        affinity: Option<&inter_pod_affinity::FilterState>,
    ) -> (Vec<usize>, BTreeMap<String, Status>) {
        let mut feasible = Vec::new();
        let mut statuses = BTreeMap::new();
        if candidates.is_empty() {
            return (feasible, statuses);
        }
        let wanted = feasible_nodes_to_find(self.config.percentage_of_nodes_to_score, candidates.len());
        let detail = self.config.messages.untolerated_taint_detail;
        let mut processed = 0usize;
        for i in 0..candidates.len() {
            let slot = candidates[(self.next_start_node_index + i) % candidates.len()];
            let node = self.cache.slot(slot);
            processed += 1;
            match run_filters(pod, slot, node, spread, affinity, detail) {
                None => {
                    feasible.push(slot);
                    if feasible.len() >= wanted {
                        break;
                    }
                }
                Some(status) => {
                    statuses.insert(node.name.clone(), status);
                }
            }
        }
        self.next_start_node_index = (self.next_start_node_index + processed) % candidates.len();
        (feasible, statuses)
    }

    fn unfit(
        &self,
        pod: &PodFacts,
        node_statuses: BTreeMap<String, Status>,
        absent_status: Option<Status>,
        pre_filter_rejected: bool,
    ) -> SchedulingFailure {
        let num_all_nodes = self.cache.node_count();
        let (preemption, might_help) = if pod.preemption_never {
            (fit_error::PREEMPTION_POLICY_NEVER.to_string(), false)
        } else {
            fit_error::preemption_message(
                num_all_nodes,
                node_statuses.iter().map(|(name, s)| self.preemption_dry_run(pod, name, s)),
            )
        };
        SchedulingFailure::Unfit(Box::new(FitError {
            num_all_nodes,
            pre_filter_message: if pre_filter_rejected {
                absent_status.as_ref().map(|s| s.reasons.join(", "))
            } else {
                None
            },
            node_statuses,
            absent_status,
            post_filter_message: fit_error::post_filter_message(&preemption, self.config.messages),
            preemption_might_help: might_help,
        }))
    }

    /// DefaultPreemption's dry run on one rejected node: remove every lower-priority pod and
    /// re-check. Resources and host ports are re-checked exactly; a topology or affinity
    /// rejection with victims present is reported as [`fit_error::DryRun::WouldFit`] (kube
    /// would re-run those filters with the victims removed).
    fn preemption_dry_run(&self, pod: &PodFacts, node: &str, status: &Status) -> fit_error::DryRun {
        use fit_error::DryRun;
        if status.code == Code::UnschedulableAndUnresolvable {
            return DryRun::NotHelpful;
        }
        let Some(info) = self.cache.node(node) else {
            return DryRun::NotHelpful;
        };
        if !info.has_lower_priority_pod(pod.priority) {
            return DryRun::NoVictims;
        }
        let mut without_victims = info.clone();
        for key in &info.pods {
            if let Some((victim, _)) = self.cache.pod(key)
                && victim.priority < pod.priority
            {
                without_victims.remove_pod(victim);
            }
        }
        let recheck = match status.plugin {
            Plugin::NodeResourcesFit | Plugin::NodePorts => {
                node_ports::filter(pod, &without_victims).or_else(|| node_resources_fit::filter(pod, &without_victims))
            }
            _ => None,
        };
        match recheck {
            Some(still) => DryRun::StillFails(still),
            None => DryRun::WouldFit(status.clone()),
        }
    }

    /// Weighted sum of normalised plugin scores per feasible node.
    fn score(&mut self, pod: &PodFacts, feasible: &[usize]) -> Vec<i64> {
        let mut total = vec![0i64; feasible.len()];
        let mut add = |scores: &[i64], weight: i64| {
            for (t, s) in total.iter_mut().zip(scores) {
                *t += s * weight;
            }
        };
        let cache = &self.cache;
        let mut taints: Vec<i64> = feasible.iter().map(|&s| taint_toleration::score(pod, cache.slot(s))).collect();
        default_normalize(&mut taints, true);
        add(&taints, weights::TAINT_TOLERATION);
        if !pod.preferred_node_terms.is_empty() {
            let mut affinity: Vec<i64> = feasible.iter().map(|&s| node_affinity::score(pod, cache.slot(s))).collect();
            default_normalize(&mut affinity, false);
            add(&affinity, weights::NODE_AFFINITY);
        }
        let strategy = self.config.scoring_strategy;
        let fit: Vec<i64> = feasible.iter().map(|&s| node_resources_fit::score(pod, cache.slot(s), strategy)).collect();
        add(&fit, weights::NODE_RESOURCES_FIT);
        if balanced_allocation::applies(pod) {
            let balanced: Vec<i64> = feasible.iter().map(|&s| balanced_allocation::score(pod, cache.slot(s))).collect();
            add(&balanced, weights::BALANCED_ALLOCATION);
        }
        let defaults = (self.config.system_default_spreading && pod.spread.is_empty())
            .then(|| {
                pod.controller_uid
                    .as_deref()
                    .and_then(|uid| self.cache.controller_selector(uid))
                    .cloned()
                    .map(pod_topology_spread::system_default_constraints)
            })
            .flatten();
        if let Some(state) = pod_topology_spread::pre_score(&mut self.cache, pod, feasible, defaults) {
            let mut spread: Vec<i64> =
                feasible.iter().map(|&s| pod_topology_spread::score(&state, &self.cache, s)).collect();
            pod_topology_spread::normalize(&state, feasible, &mut spread);
            add(&spread, weights::POD_TOPOLOGY_SPREAD);
        }
        if let Some(state) = inter_pod_affinity::pre_score(&mut self.cache, pod) {
            let mut ipa: Vec<i64> =
                feasible.iter().map(|&s| inter_pod_affinity::score(&state, self.cache.slot(s))).collect();
            inter_pod_affinity::normalize(&mut ipa);
            add(&ipa, weights::INTER_POD_AFFINITY);
        }
        total
    }
}

/// `selectHost`: the highest total; ties broken uniformly by reservoir sampling with the
/// caller's seeded RNG (kube-scheduler uses `rand.Intn` the same way).
fn select_host(feasible: &[usize], scores: &[i64], rng: &mut ChaCha8Rng) -> usize {
    debug_assert_eq!(feasible.len(), scores.len());
    let mut best = 0usize;
    let mut ties = 1u32;
    for i in 1..feasible.len() {
        if scores[i] > scores[best] {
            best = i;
            ties = 1;
        } else if scores[i] == scores[best] {
            ties += 1;
            if rng.random_range(0..ties) == 0 {
                best = i;
            }
        }
    }
    feasible[best]
}

/// The Binding the actor posts to `pods/<name>/binding` (kube-scheduler's DefaultBinder).
pub fn binding(pod: &Pod, node: &str) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: pod.metadata.name.clone(),
            namespace: pod.metadata.namespace.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            kind: Some("Node".into()),
            name: Some(node.to_string()),
            ..ObjectReference::default()
        },
    }
}

/// The `Scheduled` event message kube-scheduler emits on success.
pub fn scheduled_message(pod: &PodKey, node: &str) -> String {
    format!("Successfully assigned {pod} to {node}")
}
