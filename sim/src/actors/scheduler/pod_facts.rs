//! What the scheduler needs from a Pod, extracted and compiled once (kube-scheduler `PodInfo`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, Pod, PodAffinityTerm, PodSpec, Toleration};

use super::resources::{Resources, pod_requests, pod_requests_non_zero};
use super::selectors::{LabelRequirement, Labels, PodSelector};

/// A pod's identity in the scheduler: `namespace/name`, ordered for deterministic iteration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodKey {
    /// `metadata.namespace` (`default` when unset).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl PodKey {
    /// The key of a pod object.
    pub fn of(pod: &Pod) -> Self {
        PodKey {
            namespace: pod.metadata.namespace.clone().unwrap_or_else(|| "default".into()),
            name: pod.metadata.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for PodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The namespaces a pod (anti-)affinity term applies to: listed names, plus those whose labels
/// match `namespaceSelector`. Neither given means the owning pod's namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NamespaceSet {
    names: BTreeSet<String>,
    selector: Option<PodSelector>,
}

impl NamespaceSet {
    /// Whether a namespace (with its labels) is covered.
    pub fn contains(&self, namespace: &str, namespace_labels: &Labels) -> bool {
        self.names.contains(namespace) || self.selector.as_ref().is_some_and(|s| s.matches(namespace_labels))
    }

    /// Only the given namespace.
    pub fn only(namespace: &str) -> Self {
        NamespaceSet { names: BTreeSet::from([namespace.to_string()]), selector: None }
    }
}

/// A compiled pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AffinityTerm {
    /// Which namespaces' pods the term looks at.
    pub namespaces: NamespaceSet,
    /// Which pods, by label.
    pub selector: PodSelector,
    /// The node label whose value defines a domain (`kubernetes.io/hostname`, zone...).
    pub topology_key: String,
}

impl AffinityTerm {
    /// Compiles a term of a pod in `owner_namespace` with `owner_labels`. `matchLabelKeys` and
    /// `mismatchLabelKeys` are merged into the selector as `key In (value)` / `key NotIn
    /// (value)` with the owner's values, as the API server does at pod creation (idempotent if
    /// it already did).
    fn compile(owner_namespace: &str, owner_labels: &Labels, term: &PodAffinityTerm) -> Self {
        let names: BTreeSet<String> = term.namespaces.iter().flatten().cloned().collect();
        let namespaces = if names.is_empty() && term.namespace_selector.is_none() {
            NamespaceSet::only(owner_namespace)
        } else {
            NamespaceSet {
                names,
                selector: term.namespace_selector.as_ref().map(|s| PodSelector::from_label_selector(Some(s))),
            }
        };
        let mut selector = PodSelector::from_label_selector(term.label_selector.as_ref());
        for (keys, matching) in [(&term.match_label_keys, true), (&term.mismatch_label_keys, false)] {
            for key in keys.iter().flatten() {
                if let Some(value) = owner_labels.get(key) {
                    let values = BTreeSet::from([value.clone()]);
                    selector = selector.with_requirement(if matching {
                        LabelRequirement::In(key.clone(), values)
                    } else {
                        LabelRequirement::NotIn(key.clone(), values)
                    });
                }
            }
        }
        AffinityTerm { namespaces, selector, topology_key: term.topology_key.clone() }
    }

    /// `AffinityTerm.Matches`: the pod is in a covered namespace and its labels match.
    pub fn matches(&self, namespace: &str, namespace_labels: &Labels, labels: &Labels) -> bool {
        self.namespaces.contains(namespace, namespace_labels) && self.selector.matches(labels)
    }
}

/// A preferred (weighted) affinity term.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct WeightedTerm {
    /// 1..=100.
    pub weight: i64,
    /// The term.
    pub term: AffinityTerm,
}

/// Whether a spread constraint filters or only scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WhenUnsatisfiable {
    /// A hard constraint (PodTopologySpread Filter).
    DoNotSchedule,
    /// A soft constraint (PodTopologySpread Score).
    ScheduleAnyway,
}

/// A compiled topology spread constraint.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpreadConstraint {
    /// Allowed difference between a domain's count and the global minimum.
    pub max_skew: i64,
    /// Node label defining domains.
    pub topology_key: String,
    /// Hard or soft.
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// Selector with `matchLabelKeys` merged in.
    pub selector: PodSelector,
    /// Below this many eligible domains the global minimum is taken as 0 (hard only).
    pub min_domains: i64,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes matching the pod's node
    /// affinity/selector count as domains.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore): nodes with untolerated taints do not count.
    pub honor_node_taints: bool,
}

/// A host port a container asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostPort {
    /// Host IP, `0.0.0.0` when unset.
    pub ip: String,
    /// `TCP`, `UDP` or `SCTP` (`TCP` when unset).
    pub protocol: String,
    /// The port.
    pub port: i32,
}

/// Everything the scheduler reads from a pod, compiled.
#[derive(Debug, Clone)]
pub struct PodFacts {
    /// namespace/name.
    pub key: PodKey,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `spec.priority` (0 when unset).
    pub priority: i32,
    /// Requests for filtering.
    pub requests: Resources,
    /// Requests for Least/MostAllocated scoring.
    pub requests_non_zero: Resources,
    /// `spec.nodeName`, if already bound.
    pub node_name: Option<String>,
    /// `spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// Required node affinity terms (ORed), if any.
    pub required_node_terms: Option<Vec<NodeSelectorTerm>>,
    /// Preferred node affinity terms with weights.
    pub preferred_node_terms: Vec<(i64, NodeSelectorTerm)>,
    /// `spec.tolerations`.
    pub tolerations: Vec<Toleration>,
    /// Host ports requested by containers.
    pub host_ports: Vec<HostPort>,
    /// Required pod affinity terms.
    pub required_affinity: Vec<AffinityTerm>,
    /// Required pod anti-affinity terms.
    pub required_anti_affinity: Vec<AffinityTerm>,
    /// Preferred pod affinity terms.
    pub preferred_affinity: Vec<WeightedTerm>,
    /// Preferred pod anti-affinity terms.
    pub preferred_anti_affinity: Vec<WeightedTerm>,
    /// Topology spread constraints.
    pub spread: Vec<SpreadConstraint>,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `spec.preemptionPolicy: Never`.
    pub preemption_never: bool,
    /// `spec.schedulingGates` is non-empty.
    pub scheduling_gated: bool,
    /// UID of the controlling owner (`ownerReferences[controller=true]`), for default spreading.
    pub controller_uid: Option<String>,
    /// What the pod's PersistentVolumeClaims say, resolved by the actor from the store at
    /// each attempt (`None`: no claims, or not resolved).
    pub volumes: Option<super::volume_facts::VolumeFacts>,
}

impl PodFacts {
    /// Compiles a pod.
    pub fn new(pod: &Pod) -> Self {
        let key = PodKey::of(pod);
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let no_spec = PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&no_spec);
        let affinity = spec.affinity.as_ref();
        let node_affinity = affinity.and_then(|a| a.node_affinity.as_ref());
        let pod_affinity = affinity.and_then(|a| a.pod_affinity.as_ref());
        let pod_anti = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let ns = key.namespace.clone();
        let compile = |terms: Option<&Vec<PodAffinityTerm>>| -> Vec<AffinityTerm> {
            terms.into_iter().flatten().map(|t| AffinityTerm::compile(&ns, &labels, t)).collect()
        };
        let compile_weighted = |terms: Option<&Vec<k8s_openapi::api::core::v1::WeightedPodAffinityTerm>>| {
            terms
                .into_iter()
                .flatten()
                .map(|w| WeightedTerm {
                    weight: i64::from(w.weight),
                    term: AffinityTerm::compile(&ns, &labels, &w.pod_affinity_term),
                })
                .collect::<Vec<_>>()
        };
        let spread = spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .map(|c| {
                let mut selector = PodSelector::from_label_selector(c.label_selector.as_ref());
                for k in c.match_label_keys.iter().flatten() {
                    if let Some(v) = labels.get(k) {
                        selector =
                            selector.with_requirement(LabelRequirement::In(k.clone(), BTreeSet::from([v.clone()])));
                    }
                }
                let hard = c.when_unsatisfiable == "DoNotSchedule";
                SpreadConstraint {
                    max_skew: i64::from(c.max_skew),
                    topology_key: c.topology_key.clone(),
                    when_unsatisfiable: if hard {
                        WhenUnsatisfiable::DoNotSchedule
                    } else {
                        WhenUnsatisfiable::ScheduleAnyway
                    },
                    selector,
                    min_domains: if hard { i64::from(c.min_domains.unwrap_or(1)) } else { 1 },
                    honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                    honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
                }
            })
            .collect();
        let host_ports = spec
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .filter(|p| p.host_port.unwrap_or(0) > 0)
            .map(|p| HostPort {
                ip: p.host_ip.clone().filter(|ip| !ip.is_empty()).unwrap_or_else(|| "0.0.0.0".into()),
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                port: p.host_port.unwrap_or(0),
            })
            .collect();
        PodFacts {
            requests: pod_requests(pod),
            requests_non_zero: pod_requests_non_zero(pod),
            priority: spec.priority.unwrap_or(0),
            node_name: spec.node_name.clone().filter(|n| !n.is_empty()),
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            required_node_terms: node_affinity
                .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
                .map(|r| r.node_selector_terms.clone()),
            preferred_node_terms: node_affinity
                .and_then(|n| n.preferred_during_scheduling_ignored_during_execution.as_ref())
                .into_iter()
                .flatten()
                .map(|p| (i64::from(p.weight), p.preference.clone()))
                .collect(),
            tolerations: spec.tolerations.clone().unwrap_or_default(),
            host_ports,
            required_affinity: compile(
                pod_affinity.and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
            ),
            required_anti_affinity: compile(
                pod_anti.and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
            ),
            preferred_affinity: compile_weighted(
                pod_affinity.and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
            ),
            preferred_anti_affinity: compile_weighted(
                pod_anti.and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
            ),
            spread,
            terminating: pod.metadata.deletion_timestamp.is_some(),
            preemption_never: spec.preemption_policy.as_deref() == Some("Never"),
            scheduling_gated: spec.scheduling_gates.as_ref().is_some_and(|g| !g.is_empty()),
            controller_uid: pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .map(|o| o.uid.clone()),
            key,
            labels,
            volumes: None,
        }
    }

    /// Whether the pod has any pod (anti-)affinity at all (kube `podWithAffinity`).
    pub fn has_pod_affinity_terms(&self) -> bool {
        !self.required_affinity.is_empty()
            || !self.required_anti_affinity.is_empty()
            || !self.preferred_affinity.is_empty()
            || !self.preferred_anti_affinity.is_empty()
    }
}
