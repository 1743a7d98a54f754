//! InterPodAffinity: required pod affinity and anti-affinity (the incoming pod's, and existing
//! pods' anti-affinity against the incoming pod) filter; preferred terms score.
//!
//! Counts are per topology pair (key, value), built in PreFilter/PreScore from the cache's
//! per-node indexes, as kube-scheduler's `preFilterState` and `preScoreState` hold them.

use std::collections::BTreeMap;

use super::{Code, MAX_NODE_SCORE, Plugin, Status};
use crate::actors::scheduler::cache::{Cache, PodMatcher, TermRole};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::{AffinityTerm, PodFacts};

/// kube-scheduler `ErrReasonAffinityRulesNotMatch`.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// kube-scheduler `ErrReasonAntiAffinityRulesNotMatch`.
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// kube-scheduler `ErrReasonExistingAntiAffinityRulesNotMatch`.
pub const REASON_EXISTING_ANTI_AFFINITY: &str = "node(s) didn't satisfy existing pods anti-affinity rules";

/// kube-scheduler `hardPodAffinityWeight` default: how much an existing pod's *required*
/// affinity towards the incoming pod counts in scoring.
pub const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

/// Counts per topology pair, keyed key then value so lookups borrow `&str`; zero entries are
/// removed, as kube-scheduler's `topologyToMatchedTermCount` does.
#[derive(Debug, Clone, Default)]
struct PairCounts(BTreeMap<String, BTreeMap<String, i64>>);

impl PairCounts {
    fn new() -> Self {
        PairCounts::default()
    }

    fn get(&self, key: &str, value: &str) -> i64 {
        self.0.get(key).and_then(|values| values.get(value)).copied().unwrap_or(0)
    }

    fn is_empty(&self) -> bool {
        self.0.values().all(BTreeMap::is_empty)
    }

    /// Whether any pair (key, node's value for key) has a positive count.
    fn any_positive_on(&self, node: &NodeInfo) -> bool {
        self.0.iter().any(|(key, values)| node.labels.get(key).and_then(|v| values.get(v)).is_some_and(|c| *c > 0))
    }
}

fn matcher_for(term: &AffinityTerm) -> PodMatcher {
    PodMatcher { namespaces: term.namespaces.clone(), selector: term.selector.clone(), skip_terminating: false }
}

/// Adds `count * factor` of every slot to the pair (key, node's value) in `out`.
fn spread_over_pairs(cache: &Cache, per_slot: &[u32], key: &str, factor: i64, mut out: impl FnMut(&str, i64)) {
    for (slot, &n) in per_slot.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let node = cache.slot(slot);
        if let Some(value) = node.labels.get(key) {
            out(value, i64::from(n) * factor);
        }
    }
}

fn add_pair(counts: &mut PairCounts, key: &str, value: &str, delta: i64) {
    if !counts.0.contains_key(key) {
        counts.0.insert(key.to_string(), BTreeMap::new());
    }
    let values = counts.0.get_mut(key).expect("inserted above");
    match values.get_mut(value) {
        Some(c) => {
            *c += delta;
            if *c == 0 {
                values.remove(value);
            }
        }
        None if delta != 0 => {
            values.insert(value.to_string(), delta);
        }
        None => {}
    }
}

/// PreFilter state.
#[derive(Debug, Clone, Default)]
pub struct FilterState {
    existing_anti: PairCounts,
    affinity: PairCounts,
    anti: PairCounts,
    affinity_terms: Vec<AffinityTerm>,
    anti_terms: Vec<AffinityTerm>,
    self_matches_all_affinity: bool,
}

/// The PreFilter. `None` when neither the pod nor any existing pod has required terms that
/// could matter (the Filter is skipped).
pub fn pre_filter(cache: &mut Cache, pod: &PodFacts) -> Option<FilterState> {
    let ns_labels = cache.namespace_labels(&pod.key.namespace).clone();
    let mut state = FilterState {
        affinity_terms: pod.required_affinity.clone(),
        anti_terms: pod.required_anti_affinity.clone(),
        self_matches_all_affinity: pod
            .required_affinity
            .iter()
            .all(|t| t.matches(&pod.key.namespace, &ns_labels, &pod.labels)),
        ..FilterState::default()
    };
    let mut existing = PairCounts::new();
    for (role, term, per_slot) in cache.existing_terms() {
        if role != TermRole::RequiredAntiAffinity || !term.matches(&pod.key.namespace, &ns_labels, &pod.labels) {
            continue;
        }
        spread_over_pairs(cache, per_slot, &term.topology_key, 1, |v, d| {
            add_pair(&mut existing, &term.topology_key, v, d)
        });
    }
    state.existing_anti = existing;
    for term in &pod.required_anti_affinity {
        let m = matcher_for(term);
        cache.ensure_counts(&m);
        let mut anti = std::mem::take(&mut state.anti);
        spread_over_pairs(cache, cache.counts(&m), &term.topology_key, 1, |v, d| {
            add_pair(&mut anti, &term.topology_key, v, d)
        });
        state.anti = anti;
    }
    match pod.required_affinity.as_slice() {
        [] => {}
        [term] => {
            let m = matcher_for(term);
            cache.ensure_counts(&m);
            let mut affinity = PairCounts::new();
            spread_over_pairs(cache, cache.counts(&m), &term.topology_key, 1, |v, d| {
                add_pair(&mut affinity, &term.topology_key, v, d)
            });
            state.affinity = affinity;
        }
        terms => {
            // Several terms: a pod counts only if it matches all of them, so walk the pods.
            let mut affinity = PairCounts::new();
            for (other, slot) in cache.bound_pods() {
                let other_ns = cache.namespace_labels(&other.key.namespace);
                if terms.iter().all(|t| t.matches(&other.key.namespace, other_ns, &other.labels)) {
                    let node = cache.slot(slot);
                    for t in terms {
                        if let Some(v) = node.labels.get(&t.topology_key) {
                            add_pair(&mut affinity, &t.topology_key, v, 1);
                        }
                    }
                }
            }
            state.affinity = affinity;
        }
    }
    let nothing_to_check =
        state.existing_anti.is_empty() && state.affinity_terms.is_empty() && state.anti_terms.is_empty();
    (!nothing_to_check).then_some(state)
}

fn pair_count(counts: &PairCounts, key: &str, value: &str) -> i64 {
    counts.get(key, value)
}

fn satisfies_affinity(state: &FilterState, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    for term in &state.affinity_terms {
        let Some(value) = node.labels.get(&term.topology_key) else {
            return false;
        };
        if pair_count(&state.affinity, &term.topology_key, value) <= 0 {
            pods_exist = false;
        }
    }
    // The first pod of a group with affinity to itself may go anywhere with the topology keys,
    // so that such groups do not stay pending forever.
    pods_exist || (state.affinity.is_empty() && state.self_matches_all_affinity)
}

/// The Filter, in kube-scheduler's order: affinity, anti-affinity, existing anti-affinity.
pub fn filter(state: &FilterState, node: &NodeInfo) -> Option<Status> {
    if !satisfies_affinity(state, node) {
        return Some(Status::new(Plugin::InterPodAffinity, Code::UnschedulableAndUnresolvable, REASON_AFFINITY));
    }
    if !state.anti.is_empty()
        && state
            .anti_terms
            .iter()
            .any(|t| node.labels.get(&t.topology_key).is_some_and(|v| pair_count(&state.anti, &t.topology_key, v) > 0))
    {
        return Some(Status::new(Plugin::InterPodAffinity, Code::Unschedulable, REASON_ANTI_AFFINITY));
    }
    if !state.existing_anti.is_empty() && state.existing_anti.any_positive_on(node) {
        return Some(Status::new(Plugin::InterPodAffinity, Code::Unschedulable, REASON_EXISTING_ANTI_AFFINITY));
    }
    None
}

/// PreScore state: a score per topology key and value.
#[derive(Debug, Clone, Default)]
pub struct ScoreState {
    topology_score: BTreeMap<String, BTreeMap<String, i64>>,
}

fn add_score(scores: &mut BTreeMap<String, BTreeMap<String, i64>>, key: &str, value: &str, delta: i64) {
    if !scores.contains_key(key) {
        scores.insert(key.to_string(), BTreeMap::new());
    }
    let values = scores.get_mut(key).expect("inserted above");
    match values.get_mut(value) {
        Some(score) => *score += delta,
        None => {
            values.insert(value.to_string(), delta);
        }
    }
}

/// The PreScore. `None` when nothing matched (the plugin skips, scoring 0 everywhere).
pub fn pre_score(cache: &mut Cache, pod: &PodFacts) -> Option<ScoreState> {
    let ns_labels = cache.namespace_labels(&pod.key.namespace).clone();
    let mut scores = BTreeMap::new();
    let incoming =
        pod.preferred_affinity.iter().map(|w| (w, 1)).chain(pod.preferred_anti_affinity.iter().map(|w| (w, -1)));
    for (w, sign) in incoming {
        let m = matcher_for(&w.term);
        cache.ensure_counts(&m);
        spread_over_pairs(cache, cache.counts(&m), &w.term.topology_key, w.weight * sign, |v, d| {
            add_score(&mut scores, &w.term.topology_key, v, d)
        });
    }
    for (role, term, per_slot) in cache.existing_terms() {
        let factor = match role {
            TermRole::RequiredAffinity => HARD_POD_AFFINITY_WEIGHT,
            TermRole::PreferredAffinity(w) => w,
            TermRole::PreferredAntiAffinity(w) => -w,
            TermRole::RequiredAntiAffinity => continue,
        };
        if !term.matches(&pod.key.namespace, &ns_labels, &pod.labels) {
            continue;
        }
        spread_over_pairs(cache, per_slot, &term.topology_key, factor, |v, d| {
            add_score(&mut scores, &term.topology_key, v, d)
        });
    }
    (!scores.is_empty()).then_some(ScoreState { topology_score: scores })
}

/// The raw Score of a node: the sum of its domains' scores.
pub fn score(state: &ScoreState, node: &NodeInfo) -> i64 {
    state.topology_score.iter().filter_map(|(key, values)| node.labels.get(key).and_then(|v| values.get(v))).sum()
}

/// NormalizeScore: min-max scaling to 0..=100 (scores may be negative).
pub fn normalize(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    let spread = max - min;
    for s in scores.iter_mut() {
        *s = if spread > 0 { (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / spread as f64)) as i64 } else { 0 };
    }
}
