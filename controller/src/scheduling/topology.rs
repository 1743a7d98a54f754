//! Topology tracking (core `topology.go`, `topologygroup.go`): for every spread constraint and
//! pod (anti-)affinity term in play, a count of matching pods per domain — think
//! `SELECT domain, COUNT(*) ... GROUP BY topology_key` — from which each placement derives a
//! requirement on the topology key (the domain the pod may go to).

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::pod::{LabelSelector, Namespaces, PodShape};
use super::requirements::{Requirement, Requirements};
use super::taints::{Taint, Toleration, untolerated};
use crate::apis::labels::HOSTNAME_LABEL;

/// What a topology group enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupKind {
    /// Topology spread: keep domain counts within `max_skew` of the minimum.
    Spread,
    /// Pod affinity: go where matching pods are.
    Affinity,
    /// Pod anti-affinity: go where matching pods are not.
    AntiAffinity,
}

/// Which nodes count for a spread constraint (`nodeAffinityPolicy`/`nodeTaintsPolicy`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct NodeFilter {
    /// The owner's node-affinity terms (ORed); empty when the policy is Ignore.
    terms: Vec<Requirements>,
    /// The owner's tolerations when taints are honored.
    tolerations: Option<Vec<Toleration>>,
}

impl NodeFilter {
    fn matches(&self, node: &Requirements, taints: &[Taint]) -> bool {
        (self.terms.is_empty() || self.terms.iter().any(|term| node.intersects(term).is_ok()))
            && self.tolerations.as_ref().is_none_or(|tolerations| untolerated(taints, tolerations).is_none())
    }
}

/// Identity of a group: pods with the same constraint share one set of counts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct GroupKey {
    kind: GroupKind,
    /// An inverse anti-affinity group counts the domains of the term's *owners*; pods its
    /// selector matches must avoid them.
    inverse: bool,
    topology_key: String,
    selector: LabelSelector,
    namespaces: Namespaces,
    max_skew: i32,
    min_domains: Option<i32>,
    filter: Option<NodeFilter>,
}

#[derive(Clone, Debug)]
struct Group {
    key: GroupKey,
    counts: BTreeMap<String, i32>,
    /// Bumped whenever a rejection by this group could turn into an acceptance: an affinity
    /// domain gets its first pod, or a spread's minimum count rises. Anti-affinity never
    /// un-rejects, so it never bumps.
    decision_version: u64,
    /// The spread minimum over the known domains when last recorded.
    spread_min: i32,
}

impl Group {
    fn selects(&self, shape: &PodShape) -> bool {
        self.key.namespaces.contains(&shape.namespace) && self.key.selector.matches(&shape.labels)
    }

    fn count(&self, domain: &str) -> i32 {
        self.counts.get(domain).copied().unwrap_or(0)
    }
}

/// Groups relevant to one pod shape, computed once per shape.
#[derive(Clone, Debug, Default)]
struct ShapeGroups {
    /// Groups from the shape's own constraints: they constrain where it goes.
    own: Vec<usize>,
    /// Inverse anti-affinity groups whose selector matches the shape.
    inverse_checks: Vec<usize>,
    /// Non-inverse groups whose selector matches the shape: placing it bumps their counts.
    selected_by: Vec<usize>,
    /// Inverse groups for the shape's own anti-affinity terms: placing it records its domain.
    owns_inverse: Vec<usize>,
    /// The pod's strict requirements (nodeSelector and first required term) when it has
    /// preferred node terms: its topology domains come from these, so a preference does not
    /// narrow a spread (core `nodeclaim.go` l. 201 and `existingnode.go` pass
    /// `StrictRequirements` to `Topology.AddRequirements`).
    strict: Option<Requirements>,
}

/// Why a topology constraint cannot be met on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError {
    /// Human-readable reason, naming the key.
    pub message: String,
    /// Whether the node can never satisfy this shape again in this pass (anti-affinity and
    /// hostname spread counts only grow), which lets the scheduler skip the node next time.
    pub permanent: bool,
}

/// Whether a new NodeClaim could launch in a domain (`(topology key, domain)`): some instance
/// type option left on the claim allows the domain, has an available offering there and room
/// for the pod. Used only to break a topology-spread tie (see [`Topology::add_requirements`]).
pub type Launchable<'a> = &'a dyn Fn(&str, &str) -> bool;

/// Domain counts for every constraint in the pass.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    groups: Vec<Group>,
    index: BTreeMap<GroupKey, usize>,
    /// Known domains per topology key (zones from NodePools and nodes; node hostnames).
    universe: BTreeMap<String, BTreeSet<String>>,
    shape_groups: Vec<Option<Rc<ShapeGroups>>>,
}

impl Topology {
    /// An empty topology with no known domains.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a domain that exists or can be created (a zone a NodePool can launch in).
    pub fn register_domain(&mut self, key: &str, domain: &str) {
        // Allocates only for a key or domain not seen yet: every pass registers every node's.
        match self.universe.get_mut(key) {
            Some(domains) => {
                if !domains.contains(domain) {
                    domains.insert(domain.to_owned());
                }
            }
            None => {
                self.universe.insert(key.to_owned(), BTreeSet::from([domain.to_owned()]));
            }
        }
    }

    /// Declares `domains` under `key` at once (every node's hostname, for a pass prepared from
    /// a `ClusterBase`): the same as [`Self::register_domain`] for each.
    pub fn register_domains(&mut self, key: &str, domains: BTreeSet<String>) {
        match self.universe.get_mut(key) {
            Some(known) => known.extend(domains),
            None => {
                self.universe.insert(key.to_owned(), domains);
            }
        }
    }

    /// Whether [`Self::record`]ing a pod of `shape` changes any count (some group selects it
    /// or it owns an inverse group): when not, a pass may skip recording its bound pods.
    pub fn records_anything(&mut self, shape_id: usize, shape: &PodShape) -> bool {
        let groups = self.groups_for(shape_id, shape);
        !groups.selected_by.is_empty() || !groups.owns_inverse.is_empty()
    }

    /// Creates the groups for every constraint of `shape` (preferences included: they are
    /// enforced until relaxed) and an inverse group per anti-affinity term.
    pub fn ensure_groups(&mut self, shape: &PodShape) {
        let (own, inverse) = shape_keys(shape);
        for key in own.into_iter().chain(inverse) {
            if !self.index.contains_key(&key) {
                self.index.insert(key.clone(), self.groups.len());
                self.groups.push(Group { key, counts: BTreeMap::new(), decision_version: 0, spread_min: 0 });
                self.shape_groups.iter_mut().for_each(|cached| *cached = None);
            }
        }
    }

    fn groups_for(&mut self, shape_id: usize, shape: &PodShape) -> Rc<ShapeGroups> {
        if self.shape_groups.len() <= shape_id {
            self.shape_groups.resize(shape_id + 1, None);
        }
        if self.shape_groups[shape_id].is_none() {
            self.ensure_groups(shape);
            let computed = self.compute_groups(shape);
            self.shape_groups[shape_id] = Some(Rc::new(computed));
        }
        Rc::clone(self.shape_groups[shape_id].as_ref().expect("just computed"))
    }

    fn compute_groups(&self, shape: &PodShape) -> ShapeGroups {
        let (own, inverse) = shape_keys(shape);
        let mut groups = ShapeGroups {
            own: own.iter().filter_map(|key| self.index.get(key).copied()).collect(),
            owns_inverse: inverse.iter().filter_map(|key| self.index.get(key).copied()).collect(),
            strict: (!shape.preferred_node_terms.is_empty())
                .then(|| shape.strict_requirements().into_iter().next().unwrap_or_default()),
            ..ShapeGroups::default()
        };
        for (index, group) in self.groups.iter().enumerate() {
            if !group.selects(shape) {
                continue;
            }
            if group.key.inverse {
                groups.inverse_checks.push(index);
            } else {
                groups.selected_by.push(index);
            }
        }
        groups
    }

    /// The topology requirements for placing a pod of `shape` on a node with `node`
    /// requirements (core `AddRequirements`): one `key In [domains]` per constraint.
    ///
    /// `launchable` (new NodeClaims only) breaks a topology-spread tie between min-count
    /// domains: core returns "any random domain" among them (`topologygroup.go`
    /// `nextDomainTopologySpread`, Go map order over `t.domains`), and the zone universe comes
    /// from every NodePool (`topology.go` `buildDomainGroups`), so the pick may be a zone the
    /// claim's own instance types cannot launch in. Core then fails that pass
    /// (`filterInstanceTypesByRequirements` finds no type) and, its map order changing, picks
    /// another tied zone on a later pass until one launches. Picking, within the pass, the
    /// first tied domain some option can launch in reaches that same state deterministically
    /// (name order otherwise, as before). It never picks a domain core could not: only the
    /// minimum-count domains are candidates, so a single min-count domain that cannot launch
    /// still fails, as it does in core on every pass.
    pub fn add_requirements(
        &mut self,
        shape_id: usize,
        shape: &PodShape,
        pod: &Requirements,
        node: &Requirements,
        launchable: Option<Launchable>,
    ) -> Result<Requirements, TopologyError> {
        let groups = self.groups_for(shape_id, shape);
        if groups.own.is_empty() && groups.inverse_checks.is_empty() {
            return Ok(Requirements::new());
        }
        let pod = groups.strict.as_ref().unwrap_or(pod);
        let mut result = Requirements::new();
        for &index in groups.own.iter().chain(&groups.inverse_checks) {
            let group = &self.groups[index];
            let key = group.key.topology_key.as_str();
            let pod_domains = pod.get(key);
            let node_domains = node.get(key);
            let domains = match group.key.kind {
                GroupKind::Spread => self.next_spread(group, shape, pod_domains, node_domains, launchable),
                GroupKind::Affinity => self.next_affinity(group, shape, pod_domains, node_domains),
                GroupKind::AntiAffinity => self.next_anti_affinity(group, pod_domains, node_domains),
            };
            let permanent = group.key.kind == GroupKind::AntiAffinity
                || (group.key.kind == GroupKind::Spread && key == HOSTNAME_LABEL);
            if domains.is_empty() {
                return Err(TopologyError {
                    message: format!(
                        "unsatisfiable topology constraint for {}, key={key}",
                        match group.key.kind {
                            GroupKind::Spread => "topology spread",
                            GroupKind::Affinity => "pod affinity",
                            GroupKind::AntiAffinity => "pod anti-affinity",
                        }
                    ),
                    permanent,
                });
            }
            result.add(key, domains);
            if result.get(key).is_some_and(Requirement::is_empty) {
                return Err(TopologyError {
                    message: format!("conflicting topology constraints for key={key}"),
                    permanent,
                });
            }
        }
        Ok(result)
    }

    fn candidates<'a>(&'a self, key: &str, node: Option<&'a Requirement>) -> Box<dyn Iterator<Item = &'a String> + 'a> {
        match node {
            Some(node) if !node.is_complement() => Box::new(node.values().iter()),
            _ => Box::new(self.universe.get(key).into_iter().flatten()),
        }
    }

    fn next_spread(
        &self,
        group: &Group,
        shape: &PodShape,
        pod: Option<&Requirement>,
        node: Option<&Requirement>,
        launchable: Option<Launchable>,
    ) -> Requirement {
        let key = group.key.topology_key.as_str();
        let allows = |r: Option<&Requirement>, d: &str| r.is_none_or(|r| r.has(d));
        // Hostname spreads have one candidate per new claim: no tie to break.
        let launchable = launchable.filter(|_| key != HOSTNAME_LABEL);
        let min = if key == HOSTNAME_LABEL {
            // A new hostname can always be created, so the global minimum is zero.
            0
        } else {
            let mut min = i32::MAX;
            let mut eligible = 0;
            for domain in self.universe.get(key).into_iter().flatten().filter(|d| allows(pod, d)) {
                eligible += 1;
                min = min.min(group.count(domain));
            }
            if eligible == 0 || group.key.min_domains.is_some_and(|m| eligible < m) { 0 } else { min }
        };
        let self_selecting = i32::from(group.selects(shape));
        // The first min-count domain in name order; on a tie, the first one `launchable` accepts
        // (asked lazily, only when a tie appears; the third field caches its answer for `best`).
        let mut best: Option<(&String, i32, Option<bool>)> = None;
        for domain in self.candidates(key, node) {
            if !allows(node, domain) || !allows(pod, domain) {
                continue;
            }
            let count = group.count(domain) + self_selecting;
            if count - min > group.key.max_skew {
                continue;
            }
            best = match (best, launchable) {
                (None, _) => Some((domain, count, None)),
                (Some((_, c, _)), _) if count < c => Some((domain, count, None)),
                (Some((b, c, known)), Some(launches)) if count == c && known != Some(true) => {
                    if known.unwrap_or_else(|| launches(key, b)) {
                        Some((b, c, Some(true)))
                    } else if launches(key, domain) {
                        Some((domain, c, Some(true)))
                    } else {
                        Some((b, c, Some(false)))
                    }
                }
                (kept, _) => kept,
            };
        }
        match best {
            Some((domain, _, _)) => Requirement::in_values([domain.clone()]),
            None => Requirement::does_not_exist(),
        }
    }

    fn next_affinity(
        &self,
        group: &Group,
        shape: &PodShape,
        pod: Option<&Requirement>,
        node: Option<&Requirement>,
    ) -> Requirement {
        let key = group.key.topology_key.as_str();
        let allows = |r: Option<&Requirement>, d: &str| r.is_none_or(|r| r.has(d));
        let options: Vec<String> = match node {
            Some(node) if !node.is_complement() => {
                node.values().iter().filter(|d| allows(pod, d) && group.count(d) > 0).cloned().collect()
            }
            _ => group.counts.iter().filter(|(d, c)| **c > 0 && allows(pod, d)).map(|(d, _)| d.clone()).collect(),
        };
        // Bootstrap only a self-selecting pod, and only while no domain the pod may use holds a
        // matching pod (core `topologygroup.go` `nextDomainAffinity` l. 364-366,
        // `anyCompatiblePodDomain` l. 390-400): otherwise it must join those pods, and a node
        // outside their domains is no option.
        let any_compatible = group.counts.iter().any(|(d, c)| *c > 0 && allows(pod, d));
        if !options.is_empty() || !group.selects(shape) || any_compatible {
            return Requirement::in_values(options);
        }
        // Self-selecting with no matching pod yet: bootstrap in the first allowed domain.
        let first = self
            .candidates(key, node)
            .find(|d| allows(node, d) && allows(pod, d))
            .or_else(|| self.universe.get(key).into_iter().flatten().find(|d| allows(pod, d)));
        Requirement::in_values(first.cloned())
    }

    fn next_anti_affinity(&self, group: &Group, pod: Option<&Requirement>, node: Option<&Requirement>) -> Requirement {
        let key = group.key.topology_key.as_str();
        let allows = |r: Option<&Requirement>, d: &str| r.is_none_or(|r| r.has(d));
        Requirement::in_values(
            self.candidates(key, node)
                .filter(|d| allows(node, d) && allows(pod, d) && group.count(d) == 0)
                .cloned()
                .collect::<Vec<_>>(),
        )
    }

    /// Records a pod of `shape` placed on a node with `node` requirements and `taints`.
    /// Spread and affinity count only a known single domain; anti-affinity blocks every domain
    /// the node could still be in.
    pub fn record(&mut self, shape_id: usize, shape: &PodShape, node: &Requirements, taints: &[Taint]) {
        let groups = self.groups_for(shape_id, shape);
        for &index in &groups.selected_by {
            let group = &mut self.groups[index];
            if group.key.filter.as_ref().is_some_and(|f| !f.matches(node, taints)) {
                continue;
            }
            let first = Self::bump(group, node);
            self.bump_versions(index, first);
        }
        for &index in &groups.owns_inverse {
            Self::bump(&mut self.groups[index], node);
        }
    }

    /// A stamp of the state that decides topology rejections for `shape`: while it is
    /// unchanged, a node that was rejected for topology reasons stays rejected. `None` when the
    /// pod restricts a spread key itself (its own minimum is not tracked), so no caching.
    pub fn rejection_stamp(&mut self, shape_id: usize, shape: &PodShape, pod: &Requirements) -> Option<u64> {
        let groups = self.groups_for(shape_id, shape);
        let pod = groups.strict.as_ref().unwrap_or(pod);
        let mut stamp: u64 = 0;
        for &index in groups.own.iter().chain(&groups.inverse_checks) {
            let group = &self.groups[index];
            if group.key.kind == GroupKind::Spread && pod.has(&group.key.topology_key) {
                return None;
            }
            stamp = stamp.wrapping_add(group.decision_version);
        }
        Some(stamp)
    }

    fn bump_versions(&mut self, index: usize, first_in_domain: bool) {
        let group = &self.groups[index];
        match group.key.kind {
            GroupKind::Affinity if first_in_domain => self.groups[index].decision_version += 1,
            GroupKind::Spread if group.key.topology_key != HOSTNAME_LABEL => {
                let key = group.key.topology_key.as_str();
                let min = self.universe.get(key).into_iter().flatten().map(|d| group.count(d)).min().unwrap_or(0);
                if min != group.spread_min {
                    let group = &mut self.groups[index];
                    group.spread_min = min;
                    group.decision_version += 1;
                }
            }
            _ => {}
        }
    }

    fn bump(group: &mut Group, node: &Requirements) -> bool {
        let Some(domains) = node.get(&group.key.topology_key) else { return false };
        if domains.is_complement() {
            return false;
        }
        if group.key.kind == GroupKind::AntiAffinity {
            let mut first = false;
            for domain in domains.values() {
                first |= Self::increment(&mut group.counts, domain);
            }
            first
        } else if let Some(domain) = domains.single_value() {
            Self::increment(&mut group.counts, domain)
        } else {
            false
        }
    }

    /// Adds one to `domain`; whether it was the domain's first pod.
    fn increment(counts: &mut BTreeMap<String, i32>, domain: &str) -> bool {
        match counts.get_mut(domain) {
            Some(count) => {
                *count += 1;
                *count == 1
            }
            None => {
                counts.insert(domain.to_owned(), 1);
                true
            }
        }
    }
}

/// The group keys of a shape's own constraints, and of its inverse anti-affinity groups.
fn shape_keys(shape: &PodShape) -> (BTreeSet<GroupKey>, BTreeSet<GroupKey>) {
    let mut own = BTreeSet::new();
    let mut inverse = BTreeSet::new();
    for spread in &shape.spreads {
        let filter = NodeFilter {
            terms: if spread.honor_node_affinity { shape.strict_requirements() } else { Vec::new() },
            tolerations: spread.honor_node_taints.then(|| shape.tolerations.clone()),
        };
        own.insert(GroupKey {
            kind: GroupKind::Spread,
            inverse: false,
            topology_key: spread.topology_key.clone(),
            selector: spread.selector.clone(),
            namespaces: Namespaces::Listed(BTreeSet::from([shape.namespace.clone()])),
            max_skew: spread.max_skew,
            min_domains: spread.min_domains,
            filter: Some(filter),
        });
    }
    let term_key = |anti: bool, term: &super::pod::AffinityTerm| GroupKey {
        kind: if anti { GroupKind::AntiAffinity } else { GroupKind::Affinity },
        inverse: false,
        topology_key: term.topology_key.clone(),
        selector: term.selector.clone(),
        namespaces: term.namespaces.clone(),
        max_skew: 0,
        min_domains: None,
        filter: None,
    };
    for (anti, term) in shape.enforced_affinity_terms() {
        own.insert(term_key(anti, term));
    }
    // Inverse groups only for *required* anti-affinity: core does not track preferred terms
    // for the pods they select ("We intentionally don't track inverse anti-affinity
    // preferences", `topology.go` `updateInverseAntiAffinity` l. 328-335).
    for term in &shape.anti_affinity {
        inverse.insert(GroupKey { inverse: true, ..term_key(true, term) });
    }
    (own, inverse)
}
