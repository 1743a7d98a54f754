//! The scheduler's cluster view: nodes, bound pods and the indexes that make filtering cheap.
//!
//! kube-scheduler recomputes topology counts from every pod on every cycle. At 30,000 pods that
//! would make each cycle O(pods), so this cache keeps, per distinct pod matcher (a selector
//! plus namespaces, as used by a spread constraint or an affinity term), the number of matching
//! bound pods on each node, updated as pods are bound and removed. Existing pods' own
//! (anti-)affinity terms are grouped the same way, so "existing pods' anti-affinity" costs one
//! check per distinct term instead of one per pod.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::node_info::NodeInfo;
use super::pod_facts::{AffinityTerm, NamespaceSet, PodFacts, PodKey};
use super::selectors::{Labels, PodSelector};

static NO_LABELS: Labels = Labels::new();

/// Region and zone labels, used to interleave nodes by zone like kube-scheduler's node tree.
const LABEL_REGION: &str = "topology.kubernetes.io/region";
const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

/// Which bound pods a count index counts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodMatcher {
    /// Namespaces whose pods count.
    pub namespaces: NamespaceSet,
    /// Labels the pods must match.
    pub selector: PodSelector,
    /// Leave out terminating pods (topology spread does, inter-pod affinity does not).
    pub skip_terminating: bool,
}

impl PodMatcher {
    fn matches(&self, pod: &PodFacts, namespace_labels: &Labels) -> bool {
        !(self.skip_terminating && pod.terminating)
            && self.namespaces.contains(&pod.key.namespace, namespace_labels)
            && self.selector.matches(&pod.labels)
    }
}

/// The role an existing pod's (anti-)affinity term plays for incoming pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TermRole {
    /// A required affinity term (scored with `hardPodAffinityWeight`).
    RequiredAffinity,
    /// A required anti-affinity term (filters incoming pods it matches).
    RequiredAntiAffinity,
    /// A preferred affinity term with its weight.
    PreferredAffinity(i64),
    /// A preferred anti-affinity term with its weight.
    PreferredAntiAffinity(i64),
}

/// The values of one topology key (node label) numbered densely, and each node slot's value:
/// lets topology plugins count per domain in vectors instead of string-keyed maps.
#[derive(Debug, Clone, Default)]
pub struct TopologyIndex {
    /// Distinct label values; a domain id indexes this.
    pub values: Vec<String>,
    /// Domain id of each node slot, `None` when the node lacks the label (or the slot is free).
    pub per_slot: Vec<Option<u32>>,
}

impl TopologyIndex {
    /// The domain id of a slot.
    pub fn domain(&self, slot: usize) -> Option<usize> {
        self.per_slot.get(slot).copied().flatten().map(|d| d as usize)
    }
}

/// Per-node counts of matching pods, one vector per distinct matcher, with the matchers
/// bucketed by a label they require so that binding a pod only tries the matchers that can
/// match it.
#[derive(Debug, Clone, Default)]
struct CountIndexes {
    per_slot: Vec<Vec<u32>>,
    matchers: Vec<PodMatcher>,
    ids: BTreeMap<PodMatcher, usize>,
    by_label: BTreeMap<String, BTreeMap<String, Vec<usize>>>,
    unbucketed: Vec<usize>,
}

impl CountIndexes {
    /// Ids of matchers that may match a pod with these labels.
    fn candidates(&self, labels: &Labels) -> Vec<usize> {
        let mut out = self.unbucketed.clone();
        if self.by_label.is_empty() {
            return out;
        }
        for (k, v) in labels {
            if let Some(ids) = self.by_label.get(k).and_then(|values| values.get(v)) {
                out.extend_from_slice(ids);
            }
        }
        out
    }

    fn insert(&mut self, matcher: PodMatcher, per_slot: Vec<u32>) -> usize {
        let id = self.matchers.len();
        match matcher.selector.required_label() {
            Some((k, v)) => self.by_label.entry(k.to_string()).or_default().entry(v.to_string()).or_default().push(id),
            None if matcher.selector == PodSelector::Nothing => {}
            None => self.unbucketed.push(id),
        }
        self.ids.insert(matcher.clone(), id);
        self.matchers.push(matcher);
        self.per_slot.push(per_slot);
        id
    }
}

#[derive(Debug, Clone)]
struct CachedPod {
    facts: PodFacts,
    node: String,
    slot: Option<usize>,
    /// Bound by this scheduler but not yet seen bound in the store.
    assumed: bool,
}

/// Nodes and bound pods, with incremental accounting. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct Cache {
    slots: Vec<Option<NodeInfo>>,
    free_slots: Vec<usize>,
    by_name: BTreeMap<String, usize>,
    order: Vec<usize>,
    order_dirty: bool,
    pods: BTreeMap<PodKey, CachedPod>,
    waiting_for_node: BTreeMap<String, BTreeSet<PodKey>>,
    namespaces: BTreeMap<String, Labels>,
    controller_selectors: BTreeMap<String, PodSelector>,
    counts: CountIndexes,
    topologies: BTreeMap<String, TopologyIndex>,
    terms: BTreeMap<(TermRole, AffinityTerm), Vec<u32>>,
}

fn bump(per_slot: &mut Vec<u32>, slot: usize, up: bool) {
    if per_slot.len() <= slot {
        per_slot.resize(slot + 1, 0);
    }
    if up {
        per_slot[slot] += 1;
    } else {
        debug_assert!(per_slot[slot] > 0, "count index underflow");
        per_slot[slot] -= 1;
    }
}

/// Reads a per-slot count (slots beyond the vector hold zero).
pub fn count_at(per_slot: &[u32], slot: usize) -> i64 {
    i64::from(per_slot.get(slot).copied().unwrap_or(0))
}

fn term_roles(pod: &PodFacts) -> Vec<(TermRole, AffinityTerm)> {
    let mut out = Vec::new();
    out.extend(pod.required_affinity.iter().map(|t| (TermRole::RequiredAffinity, t.clone())));
    out.extend(pod.required_anti_affinity.iter().map(|t| (TermRole::RequiredAntiAffinity, t.clone())));
    out.extend(pod.preferred_affinity.iter().map(|w| (TermRole::PreferredAffinity(w.weight), w.term.clone())));
    out.extend(pod.preferred_anti_affinity.iter().map(|w| (TermRole::PreferredAntiAffinity(w.weight), w.term.clone())));
    out
}

impl Cache {
    /// An empty cluster.
    pub fn new() -> Self {
        Cache::default()
    }

    /// Adds or updates a node (Node add/update watch event).
    pub fn upsert_node(&mut self, node: &Node) {
        self.topologies.clear();
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Some(&slot) = self.by_name.get(&name) {
            let info = self.slots[slot].as_mut().expect("named slot is occupied");
            let zone_before = zone_key(&info.labels);
            info.set_node(node);
            if zone_key(&info.labels) != zone_before {
                self.order_dirty = true;
            }
            return;
        }
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.slots[slot] = Some(NodeInfo::new(node));
        self.by_name.insert(name.clone(), slot);
        self.order_dirty = true;
        for key in self.waiting_for_node.remove(&name).unwrap_or_default() {
            self.attach(&key, slot);
        }
    }

    /// Removes a node. Its pods stay cached (as kube-scheduler's do) until they are deleted,
    /// and count again if a node of that name returns.
    pub fn remove_node(&mut self, name: &str) {
        self.topologies.clear();
        let Some(slot) = self.by_name.remove(name) else {
            return;
        };
        let keys: Vec<PodKey> = self.slots[slot].as_ref().map(|n| n.pods.iter().cloned().collect()).unwrap_or_default();
        for key in keys {
            self.detach(&key);
            self.waiting_for_node.entry(name.to_string()).or_default().insert(key);
        }
        self.slots[slot] = None;
        self.free_slots.push(slot);
        self.order_dirty = true;
    }

    /// Adds, updates or forgets a pod (Pod watch events). Only pods bound to a node and not
    /// terminal (`Succeeded`/`Failed`) are accounted, as kube-scheduler's informer filters. An
    /// unbound version of a pod this scheduler has assumed is ignored (the binding may not have
    /// reached the store yet); use [`Cache::forget_assumed`] if the binding failed.
    pub fn upsert_pod(&mut self, pod: &Pod) {
        let facts = PodFacts::new(pod);
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let terminal = matches!(phase, Some("Succeeded" | "Failed"));
        let assumed = self.pods.get(&facts.key).is_some_and(|c| c.assumed);
        if facts.node_name.is_none() && assumed && !terminal {
            return;
        }
        self.remove_pod(&facts.key);
        if terminal {
            return;
        }
        if let Some(node) = facts.node_name.clone() {
            self.add_bound(facts, node, false);
        }
    }

    /// Drops an assumed pod whose binding failed, so its resources are free again.
    pub fn forget_assumed(&mut self, key: &PodKey) {
        if self.pods.get(key).is_some_and(|c| c.assumed) {
            self.remove_pod(key);
        }
    }

    /// Accounts an already-compiled pod on a node; `assumed` marks the scheduler's own
    /// binding decision not yet confirmed by the store.
    pub fn add_bound(&mut self, facts: PodFacts, node: String, assumed: bool) {
        let key = facts.key.clone();
        self.remove_pod(&key);
        self.pods.insert(key.clone(), CachedPod { facts, node: node.clone(), slot: None, assumed });
        match self.by_name.get(&node) {
            Some(&slot) => self.attach(&key, slot),
            None => {
                self.waiting_for_node.entry(node).or_default().insert(key);
            }
        }
    }

    /// Forgets a pod (Pod delete watch event).
    pub fn remove_pod(&mut self, key: &PodKey) {
        if !self.pods.contains_key(key) {
            return;
        }
        self.detach(key);
        let cached = self.pods.remove(key).expect("checked above");
        if let Some(waiting) = self.waiting_for_node.get_mut(&cached.node) {
            waiting.remove(key);
            if waiting.is_empty() {
                self.waiting_for_node.remove(&cached.node);
            }
        }
    }

    fn attach(&mut self, key: &PodKey, slot: usize) {
        let Some(cached) = self.pods.get_mut(key) else {
            return;
        };
        debug_assert!(cached.slot.is_none());
        cached.slot = Some(slot);
        let facts = &cached.facts;
        let ns_labels = self.namespaces.get(&facts.key.namespace).unwrap_or(&NO_LABELS);
        self.slots[slot].as_mut().expect("attach to an occupied slot").add_pod(facts);
        for id in self.counts.candidates(&facts.labels) {
            if self.counts.matchers[id].matches(facts, ns_labels) {
                bump(&mut self.counts.per_slot[id], slot, true);
            }
        }
        for role in term_roles(facts) {
            bump(self.terms.entry(role).or_default(), slot, true);
        }
    }

    fn detach(&mut self, key: &PodKey) {
        let Some(cached) = self.pods.get_mut(key) else {
            return;
        };
        let Some(slot) = cached.slot.take() else {
            return;
        };
        let facts = &cached.facts;
        let ns_labels = self.namespaces.get(&facts.key.namespace).unwrap_or(&NO_LABELS);
        self.slots[slot].as_mut().expect("detach from an occupied slot").remove_pod(facts);
        for id in self.counts.candidates(&facts.labels) {
            if self.counts.matchers[id].matches(facts, ns_labels) {
                bump(&mut self.counts.per_slot[id], slot, false);
            }
        }
        for role in term_roles(facts) {
            if let Some(per_slot) = self.terms.get_mut(&role) {
                bump(per_slot, slot, false);
                if per_slot.iter().all(|c| *c == 0) {
                    self.terms.remove(&role);
                }
            }
        }
    }

    /// Records a namespace's labels (for `namespaceSelector` in affinity terms). Count indexes
    /// are rebuilt lazily afterwards.
    pub fn set_namespace_labels(&mut self, namespace: &str, labels: Labels) {
        self.namespaces.insert(namespace.to_string(), labels);
        self.counts = CountIndexes::default();
    }

    /// Labels of a namespace (empty if unknown).
    pub fn namespace_labels(&self, namespace: &str) -> &Labels {
        self.namespaces.get(namespace).unwrap_or(&NO_LABELS)
    }

    /// Records the selector of a controller (ReplicaSet, StatefulSet...) by UID, so pods it
    /// owns get kube-scheduler's default soft spreading. `None` forgets it.
    pub fn set_controller_selector(&mut self, uid: &str, selector: Option<&LabelSelector>) {
        match selector {
            Some(s) => {
                self.controller_selectors.insert(uid.to_string(), PodSelector::from_label_selector(Some(s)));
            }
            None => {
                self.controller_selectors.remove(uid);
            }
        }
    }

    /// The selector of a controller, if recorded.
    pub fn controller_selector(&self, uid: &str) -> Option<&PodSelector> {
        self.controller_selectors.get(uid)
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.by_name.len()
    }

    /// A node by name.
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.by_name.get(name).and_then(|&s| self.slots[s].as_ref())
    }

    /// A node by slot.
    pub fn slot(&self, slot: usize) -> &NodeInfo {
        self.slots[slot].as_ref().expect("slot in node order is occupied")
    }

    /// The slot of a node.
    pub fn slot_of(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Node slots interleaved by zone (zones sorted, nodes by name within a zone), the order
    /// kube-scheduler's node tree lists nodes in.
    pub fn node_order(&mut self) -> &[usize] {
        if self.order_dirty {
            let mut zones: BTreeMap<String, Vec<(&str, usize)>> = BTreeMap::new();
            for (name, &slot) in &self.by_name {
                let labels = &self.slots[slot].as_ref().expect("occupied").labels;
                zones.entry(zone_key(labels)).or_default().push((name, slot));
            }
            let mut order = Vec::with_capacity(self.by_name.len());
            let longest = zones.values().map(Vec::len).max().unwrap_or(0);
            for i in 0..longest {
                for nodes in zones.values() {
                    if let Some((_, slot)) = nodes.get(i) {
                        order.push(*slot);
                    }
                }
            }
            self.order = order;
            self.order_dirty = false;
        }
        &self.order
    }

    /// Makes sure a count index exists for `matcher` (built from all bound pods once) and
    /// returns its id for [`Cache::counts_by_id`]. Ids stay valid until namespace labels change.
    pub fn ensure_counts(&mut self, matcher: &PodMatcher) -> usize {
        if let Some(&id) = self.counts.ids.get(matcher) {
            return id;
        }
        let mut per_slot = vec![0u32; self.slots.len()];
        for cached in self.pods.values() {
            if let Some(slot) = cached.slot {
                let ns_labels = self.namespace_labels(&cached.facts.key.namespace);
                if matcher.matches(&cached.facts, ns_labels) {
                    per_slot[slot] += 1;
                }
            }
        }
        self.counts.insert(matcher.clone(), per_slot)
    }

    /// Makes sure the topology index of a label key exists (rebuilt after node changes).
    pub fn ensure_topology(&mut self, key: &str) {
        if self.topologies.contains_key(key) {
            return;
        }
        let mut index = TopologyIndex { values: Vec::new(), per_slot: vec![None; self.slots.len()] };
        let mut ids: BTreeMap<&str, u32> = BTreeMap::new();
        for (slot, info) in self.slots.iter().enumerate() {
            let Some(value) = info.as_ref().and_then(|n| n.labels.get(key)) else {
                continue;
            };
            let id = *ids.entry(value.as_str()).or_insert_with(|| {
                index.values.push(value.clone());
                (index.values.len() - 1) as u32
            });
            index.per_slot[slot] = Some(id);
        }
        self.topologies.insert(key.to_string(), index);
    }

    /// The topology index of a key; call [`Cache::ensure_topology`] first.
    pub fn topology(&self, key: &str) -> &TopologyIndex {
        static EMPTY: TopologyIndex = TopologyIndex { values: Vec::new(), per_slot: Vec::new() };
        self.topologies.get(key).unwrap_or(&EMPTY)
    }

    /// Per-slot counts of a count index by id (cheap: no matcher comparison).
    pub fn counts_by_id(&self, id: usize) -> &[u32] {
        &self.counts.per_slot[id]
    }

    /// Per-slot counts of bound pods matching `matcher`; call [`Cache::ensure_counts`] first.
    pub fn counts(&self, matcher: &PodMatcher) -> &[u32] {
        self.counts.ids.get(matcher).map(|&id| self.counts.per_slot[id].as_slice()).unwrap_or(&[])
    }

    /// Existing pods' (anti-)affinity terms, grouped, with per-slot counts of pods carrying each.
    pub fn existing_terms(&self) -> impl Iterator<Item = (TermRole, &AffinityTerm, &[u32])> {
        self.terms.iter().map(|((role, term), c)| (*role, term, c.as_slice()))
    }

    /// Bound pods on known nodes with their slots.
    pub fn bound_pods(&self) -> impl Iterator<Item = (&PodFacts, usize)> {
        self.pods.values().filter_map(|c| c.slot.map(|s| (&c.facts, s)))
    }

    /// A cached pod and the node it is bound to.
    pub fn pod(&self, key: &PodKey) -> Option<(&PodFacts, &str)> {
        self.pods.get(key).map(|c| (&c.facts, c.node.as_str()))
    }
}

fn zone_key(labels: &Labels) -> String {
    let region = labels.get(LABEL_REGION).map(String::as_str).unwrap_or("");
    let zone = labels.get(LABEL_ZONE).map(String::as_str).unwrap_or("");
    format!("{region}:\0:{zone}")
}
