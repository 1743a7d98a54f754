//! PodTopologySpread: hard constraints (`DoNotSchedule`) filter by skew, soft constraints
//! (`ScheduleAnyway`, and kube-scheduler's system defaults) score.
//!
//! Counting follows kube-scheduler's `calPreFilterState` / `initPreScoreState`: only nodes
//! carrying every constraint's topology key and passing the node inclusion policies form
//! domains; terminating pods and pods of other namespaces do not count. Counts come from the
//! cache's per-node indexes instead of walking every pod.

use super::node_affinity::required_matches;
use super::{Code, MAX_NODE_SCORE, Plugin, Status};
use crate::actors::scheduler::cache::{Cache, PodMatcher, TopologyIndex, count_at};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::{NamespaceSet, PodFacts, SpreadConstraint, WhenUnsatisfiable};
use crate::actors::scheduler::selectors::{PodSelector, tolerations_tolerate};

/// kube-scheduler `ErrReasonConstraintsNotMatch`.
pub const REASON_SKEW: &str = "node(s) didn't match pod topology spread constraints";
/// kube-scheduler `ErrReasonNodeLabelNotMatch`.
pub const REASON_MISSING_LABEL: &str = "node(s) didn't match pod topology spread constraints (missing required label)";

/// The hostname label: its domains are single nodes, counted per node slot.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// The zone label used by the system default constraints.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

fn matcher_for(pod: &PodFacts, c: &SpreadConstraint) -> PodMatcher {
    PodMatcher {
        namespaces: NamespaceSet::only(&pod.key.namespace),
        selector: c.selector.clone(),
        skip_terminating: true,
    }
}

/// `matchNodeInclusionPolicies`.
fn node_included(pod: &PodFacts, node: &NodeInfo, c: &SpreadConstraint) -> bool {
    if c.honor_node_affinity && !required_matches(pod, node) {
        return false;
    }
    if c.honor_node_taints
        && node.taints.iter().any(|t| {
            (t.effect == "NoSchedule" || t.effect == "NoExecute") && !tolerations_tolerate(&pod.tolerations, t)
        })
    {
        return false;
    }
    true
}

/// Domain counts of one hard constraint.
#[derive(Debug, Clone)]
struct HardCounts {
    constraint: SpreadConstraint,
    /// Domain id of each node slot (`None`: the node lacks the key).
    domain_of_slot: Vec<Option<u32>>,
    /// Matching pods per domain id, `None` for domains no eligible node belongs to.
    by_domain: Vec<Option<i64>>,
    self_match: i64,
    min: i64,
}

/// PreFilter state for hard constraints.
#[derive(Debug, Clone)]
pub struct FilterState {
    constraints: Vec<HardCounts>,
}

/// The PreFilter: `None` when the pod has no hard constraints (the Filter is skipped).
pub fn pre_filter(cache: &mut Cache, pod: &PodFacts) -> Option<FilterState> {
    let hard: Vec<SpreadConstraint> =
        pod.spread.iter().filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule).cloned().collect();
    if hard.is_empty() {
        return None;
    }
    let ids: Vec<usize> = hard
        .iter()
        .map(|c| {
            cache.ensure_topology(&c.topology_key);
            cache.ensure_counts(&matcher_for(pod, c))
        })
        .collect();
    let order = cache.node_order().to_vec();
    let cache = &*cache;
    let topologies: Vec<&TopologyIndex> = hard.iter().map(|c| cache.topology(&c.topology_key)).collect();
    let mut by_domain: Vec<Vec<Option<i64>>> = topologies.iter().map(|t| vec![None; t.values.len()]).collect();
    for slot in order {
        let domains: Option<Vec<usize>> = topologies.iter().map(|t| t.domain(slot)).collect();
        let Some(domains) = domains else {
            continue;
        };
        let node = cache.slot(slot);
        for (i, c) in hard.iter().enumerate() {
            if !node_included(pod, node, c) {
                continue;
            }
            let count = count_at(cache.counts_by_id(ids[i]), slot);
            *by_domain[i][domains[i]].get_or_insert(0) += count;
        }
    }
    let constraints = hard
        .into_iter()
        .zip(by_domain)
        .zip(topologies)
        .map(|((c, by_domain), topology)| {
            let domains = by_domain.iter().flatten().count() as i64;
            let min =
                if domains < c.min_domains { 0 } else { by_domain.iter().flatten().copied().min().unwrap_or(i64::MAX) };
            HardCounts {
                self_match: i64::from(c.selector.matches(&pod.labels)),
                domain_of_slot: topology.per_slot.clone(),
                constraint: c,
                by_domain,
                min,
            }
        })
        .collect();
    Some(FilterState { constraints })
}

/// The Filter for the node in `slot`: `count(domain) + self - globalMin <= maxSkew` for every
/// hard constraint.
pub fn filter(state: &FilterState, slot: usize) -> Option<Status> {
    for h in &state.constraints {
        let Some(domain) = h.domain_of_slot.get(slot).copied().flatten() else {
            return Some(Status::new(
                Plugin::PodTopologySpread,
                Code::UnschedulableAndUnresolvable,
                REASON_MISSING_LABEL,
            ));
        };
        let count = h.by_domain[domain as usize].unwrap_or(0);
        let skew = count.saturating_add(h.self_match).saturating_sub(h.min);
        if skew > h.constraint.max_skew {
            return Some(Status::new(Plugin::PodTopologySpread, Code::Unschedulable, REASON_SKEW));
        }
    }
    None
}

/// kube-scheduler's system default constraints (`systemDefaulted`): soft spreading by zone
/// (maxSkew 5) and hostname (maxSkew 3) over the pod's controller's selector.
pub fn system_default_constraints(selector: PodSelector) -> Vec<SpreadConstraint> {
    [(LABEL_ZONE, 5), (LABEL_HOSTNAME, 3)]
        .into_iter()
        .map(|(key, skew)| SpreadConstraint {
            max_skew: skew,
            topology_key: key.to_string(),
            when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
            selector: selector.clone(),
            min_domains: 1,
            honor_node_affinity: true,
            honor_node_taints: false,
        })
        .collect()
}

#[derive(Debug, Clone)]
struct SoftCounts {
    constraint: SpreadConstraint,
    counts_id: usize,
    hostname: bool,
    /// Domain id of each slot; nodes without the key map to the "" domain when topologies
    /// are not required (kube-scheduler reads a missing label as "").
    domain_of_slot: Vec<Option<u32>>,
    missing_domain: u32,
    /// Matching pods per domain id (the last id is the "" domain); `None`: not a candidate
    /// domain.
    by_domain: Vec<Option<i64>>,
    weight: f64,
}

impl SoftCounts {
    fn domain(&self, slot: usize) -> Option<usize> {
        self.domain_of_slot.get(slot).copied().flatten().map(|d| d as usize)
    }
}

/// PreScore state for soft constraints.
#[derive(Debug, Clone)]
pub struct ScoreState {
    constraints: Vec<SoftCounts>,
    ignored: Vec<bool>,
}

/// The PreScore over the feasible node slots. `defaults` are the system default constraints
/// to use when the pod declares none. `None` means the plugin skips (scores 0 everywhere).
pub fn pre_score(
    cache: &mut Cache,
    pod: &PodFacts,
    feasible: &[usize],
    defaults: Option<Vec<SpreadConstraint>>,
) -> Option<ScoreState> {
    let (constraints, require_all) = if pod.spread.is_empty() {
        (defaults.unwrap_or_default(), false)
    } else {
        let soft: Vec<_> =
            pod.spread.iter().filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway).cloned().collect();
        (soft, true)
    };
    if constraints.is_empty() {
        return None;
    }
    let mut soft: Vec<SoftCounts> = constraints
        .into_iter()
        .map(|c| {
            cache.ensure_topology(&c.topology_key);
            let topology = cache.topology(&c.topology_key);
            let missing_domain = topology.values.len() as u32;
            let domain_of_slot = topology
                .per_slot
                .iter()
                .map(|d| if require_all { *d } else { Some(d.unwrap_or(missing_domain)) })
                .collect();
            SoftCounts {
                counts_id: cache.ensure_counts(&matcher_for(pod, &c)),
                hostname: c.topology_key == LABEL_HOSTNAME,
                by_domain: vec![None; missing_domain as usize + 1],
                constraint: c,
                domain_of_slot,
                missing_domain,
                weight: 0.0,
            }
        })
        .collect();
    let slot_count = cache.node_order().iter().copied().max().map_or(0, |m| m + 1);
    let order = cache.node_order().to_vec();
    let cache = &*cache;
    let all_keys = |slot: usize, soft: &[SoftCounts]| {
        soft.iter().all(|s| s.domain(slot).is_some_and(|d| d as u32 != s.missing_domain))
    };
    let mut ignored = vec![false; slot_count.max(feasible.iter().copied().max().map_or(0, |m| m + 1))];
    let mut ignored_count = 0usize;
    for &slot in feasible {
        if require_all && !all_keys(slot, &soft) {
            ignored[slot] = true;
            ignored_count += 1;
            continue;
        }
        for s in soft.iter_mut().filter(|s| !s.hostname) {
            if let Some(d) = s.domain(slot) {
                s.by_domain[d].get_or_insert(0);
            }
        }
    }
    for s in soft.iter_mut() {
        let size = if s.hostname { feasible.len() - ignored_count } else { s.by_domain.iter().flatten().count() };
        s.weight = ((size + 2) as f64).ln();
    }
    for slot in order {
        if require_all && !all_keys(slot, &soft) {
            continue;
        }
        let node = cache.slot(slot);
        for s in soft.iter_mut().filter(|s| !s.hostname) {
            let Some(d) = s.domain(slot) else {
                continue;
            };
            if s.by_domain[d].is_none() || !node_included(pod, node, &s.constraint) {
                continue;
            }
            let count = count_at(cache.counts_by_id(s.counts_id), slot);
            *s.by_domain[d].get_or_insert(0) += count;
        }
    }
    Some(ScoreState { constraints: soft, ignored })
}

/// The raw Score of one node: `sum(count * ln(domains + 2) + maxSkew - 1)`, rounded.
pub fn score(state: &ScoreState, cache: &Cache, slot: usize) -> i64 {
    if state.ignored.get(slot).copied().unwrap_or(false) {
        return 0;
    }
    let mut total = 0.0f64;
    for s in &state.constraints {
        // Only constraints whose key the node actually has contribute.
        let Some(d) = s.domain(slot).filter(|&d| d as u32 != s.missing_domain) else {
            continue;
        };
        let count =
            if s.hostname { count_at(cache.counts_by_id(s.counts_id), slot) } else { s.by_domain[d].unwrap_or(0) };
        total += count as f64 * s.weight + (s.constraint.max_skew - 1) as f64;
    }
    total.round() as i64
}

/// NormalizeScore: fewer matching pods score higher; ignored nodes score 0.
pub fn normalize(state: &ScoreState, feasible: &[usize], scores: &mut [i64]) {
    let is_ignored = |slot: usize| state.ignored.get(slot).copied().unwrap_or(false);
    let mut min = i64::MAX;
    let mut max = 0i64;
    for (i, &slot) in feasible.iter().enumerate() {
        if is_ignored(slot) {
            continue;
        }
        min = min.min(scores[i]);
        max = max.max(scores[i]);
    }
    for (i, &slot) in feasible.iter().enumerate() {
        scores[i] = if is_ignored(slot) {
            0
        } else if max == 0 {
            MAX_NODE_SCORE
        } else {
            MAX_NODE_SCORE * (max + min - scores[i]) / max
        };
    }
}
