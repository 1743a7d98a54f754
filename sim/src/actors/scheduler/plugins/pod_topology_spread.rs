//! PodTopologySpread: hard constraints (`DoNotSchedule`) filter by skew, soft constraints
//! (`ScheduleAnyway`, and kube-scheduler's system defaults) score.
//!
//! Counting follows kube-scheduler's `calPreFilterState` / `initPreScoreState`: only nodes
//! carrying every constraint's topology key and passing the node inclusion policies form
//! domains; terminating pods and pods of other namespaces do not count. Counts come from the
//! cache's per-node indexes instead of walking every pod.

use std::collections::BTreeMap;

use super::node_affinity::required_matches;
use super::{Code, MAX_NODE_SCORE, Plugin, Status};
use crate::actors::scheduler::cache::{Cache, PodMatcher, count_at};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::{
    NamespaceSet, PodFacts, SpreadConstraint, WhenUnsatisfiable,
};
use crate::actors::scheduler::selectors::{PodSelector, tolerations_tolerate};

/// kube-scheduler `ErrReasonConstraintsNotMatch`.
pub const REASON_SKEW: &str = "node(s) didn't match pod topology spread constraints";
/// kube-scheduler `ErrReasonNodeLabelNotMatch`.
pub const REASON_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

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
            (t.effect == "NoSchedule" || t.effect == "NoExecute")
                && !tolerations_tolerate(&pod.tolerations, t)
        })
    {
        return false;
    }
    true
}

fn has_all_keys(node: &NodeInfo, constraints: &[SpreadConstraint]) -> bool {
    constraints
        .iter()
        .all(|c| node.labels.contains_key(&c.topology_key))
}

/// Domain counts of one hard constraint.
#[derive(Debug, Clone)]
struct HardCounts {
    constraint: SpreadConstraint,
    by_domain: BTreeMap<String, i64>,
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
    let hard: Vec<SpreadConstraint> = pod
        .spread
        .iter()
        .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
        .cloned()
        .collect();
    if hard.is_empty() {
        return None;
    }
    let ids: Vec<usize> = hard
        .iter()
        .map(|c| cache.ensure_counts(&matcher_for(pod, c)))
        .collect();
    let mut by_domain: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new(); hard.len()];
    let order = cache.node_order().to_vec();
    for slot in order {
        let node = cache.slot(slot);
        if !has_all_keys(node, &hard) {
            continue;
        }
        for (i, c) in hard.iter().enumerate() {
            if !node_included(pod, node, c) {
                continue;
            }
            let value = &node.labels[&c.topology_key];
            let count = count_at(cache.counts_by_id(ids[i]), slot);
            match by_domain[i].get_mut(value) {
                Some(total) => *total += count,
                None => {
                    by_domain[i].insert(value.clone(), count);
                }
            }
        }
    }
    let constraints = hard
        .into_iter()
        .zip(by_domain)
        .map(|(c, by_domain)| {
            let domains = by_domain.len() as i64;
            let min = if domains < c.min_domains {
                0
            } else {
                by_domain.values().copied().min().unwrap_or(i64::MAX)
            };
            HardCounts {
                self_match: i64::from(c.selector.matches(&pod.labels)),
                constraint: c,
                by_domain,
                min,
            }
        })
        .collect();
    Some(FilterState { constraints })
}

/// The Filter: `count(domain) + self - globalMin <= maxSkew` for every hard constraint.
pub fn filter(state: &FilterState, node: &NodeInfo) -> Option<Status> {
    for h in &state.constraints {
        let Some(value) = node.labels.get(&h.constraint.topology_key) else {
            return Some(Status::new(
                Plugin::PodTopologySpread,
                Code::UnschedulableAndUnresolvable,
                REASON_MISSING_LABEL,
            ));
        };
        let count = h.by_domain.get(value).copied().unwrap_or(0);
        let skew = count.saturating_add(h.self_match).saturating_sub(h.min);
        if skew > h.constraint.max_skew {
            return Some(Status::new(
                Plugin::PodTopologySpread,
                Code::Unschedulable,
                REASON_SKEW,
            ));
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
    by_domain: BTreeMap<String, i64>,
    weight: f64,
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
        let soft: Vec<_> = pod
            .spread
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
            .cloned()
            .collect();
        (soft, true)
    };
    if constraints.is_empty() {
        return None;
    }
    let mut soft: Vec<SoftCounts> = constraints
        .into_iter()
        .map(|c| SoftCounts {
            counts_id: cache.ensure_counts(&matcher_for(pod, &c)),
            constraint: c,
            by_domain: BTreeMap::new(),
            weight: 0.0,
        })
        .collect();
    let slot_count = feasible.iter().copied().max().map_or(0, |m| m + 1);
    let mut ignored = vec![false; slot_count];
    let plain: Vec<SpreadConstraint> = soft.iter().map(|s| s.constraint.clone()).collect();
    let mut ignored_count = 0usize;
    for &slot in feasible {
        let node = cache.slot(slot);
        if require_all && !has_all_keys(node, &plain) {
            ignored[slot] = true;
            ignored_count += 1;
            continue;
        }
        for s in soft.iter_mut() {
            if s.constraint.topology_key == LABEL_HOSTNAME {
                continue;
            }
            let value = node
                .labels
                .get(&s.constraint.topology_key)
                .map(String::as_str)
                .unwrap_or("");
            if !s.by_domain.contains_key(value) {
                s.by_domain.insert(value.to_string(), 0);
            }
        }
    }
    for s in soft.iter_mut() {
        let size = if s.constraint.topology_key == LABEL_HOSTNAME {
            feasible.len() - ignored_count
        } else {
            s.by_domain.len()
        };
        s.weight = ((size + 2) as f64).ln();
    }
    let order = cache.node_order().to_vec();
    for slot in order {
        let node = cache.slot(slot);
        if require_all && !has_all_keys(node, &plain) {
            continue;
        }
        for s in soft.iter_mut() {
            if s.constraint.topology_key == LABEL_HOSTNAME
                || !node_included(pod, node, &s.constraint)
            {
                continue;
            }
            let value = node
                .labels
                .get(&s.constraint.topology_key)
                .map(String::as_str)
                .unwrap_or("");
            if let Some(total) = s.by_domain.get_mut(value) {
                *total += count_at(cache.counts_by_id(s.counts_id), slot);
            }
        }
    }
    Some(ScoreState {
        constraints: soft,
        ignored,
    })
}

/// The raw Score of one node: `sum(count * ln(domains + 2) + maxSkew - 1)`, rounded.
pub fn score(state: &ScoreState, cache: &Cache, slot: usize) -> i64 {
    if state.ignored.get(slot).copied().unwrap_or(false) {
        return 0;
    }
    let node = cache.slot(slot);
    let mut total = 0.0f64;
    for s in &state.constraints {
        let Some(value) = node.labels.get(&s.constraint.topology_key) else {
            continue;
        };
        let count = if s.constraint.topology_key == LABEL_HOSTNAME {
            count_at(cache.counts_by_id(s.counts_id), slot)
        } else {
            s.by_domain.get(value).copied().unwrap_or(0)
        };
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
