//! The scheduler's view of a pod: its resource requests and every placement constraint, parsed
//! once from the Kubernetes object into comparable values so identical pods can be grouped.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as K8sLabelSelector;

use super::requirements::{Requirement, Requirements};
use super::resources::{RESOURCE_PODS, Resources};
use super::taints::Toleration;
use crate::apis::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};

/// A label selector (`matchLabels` + `matchExpressions`) over pod labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelSelector {
    /// Every `key: value` must be present.
    pub match_labels: BTreeMap<String, String>,
    /// Every expression must hold (operators In, NotIn, Exists, DoesNotExist).
    pub match_expressions: Vec<(String, NodeSelectorOperator, BTreeSet<String>)>,
}

impl LabelSelector {
    /// Selects pods carrying all of `labels`.
    pub fn labels<I: IntoIterator<Item = (K, V)>, K: Into<String>, V: Into<String>>(labels: I) -> Self {
        Self { match_labels: labels.into_iter().map(|(k, v)| (k.into(), v.into())).collect(), ..Self::default() }
    }

    /// Converts the Kubernetes type; `None` (no selector) selects nothing, as in Kubernetes.
    pub fn from_k8s(selector: &K8sLabelSelector) -> Self {
        Self {
            match_labels: selector.match_labels.clone().unwrap_or_default(),
            match_expressions: selector
                .match_expressions
                .iter()
                .flatten()
                .map(|e| {
                    let operator = NodeSelectorOperator::from_api(&e.operator).unwrap_or(NodeSelectorOperator::In);
                    (e.key.clone(), operator, e.values.iter().flatten().cloned().collect())
                })
                .collect(),
        }
    }

    /// Whether `labels` satisfy the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|(key, operator, values)| {
                let value = labels.get(key);
                match operator {
                    NodeSelectorOperator::In => value.is_some_and(|v| values.contains(v)),
                    NodeSelectorOperator::NotIn => value.is_none_or(|v| !values.contains(v)),
                    NodeSelectorOperator::Exists => value.is_some(),
                    NodeSelectorOperator::DoesNotExist => value.is_none(),
                    _ => false,
                }
            })
    }
}

/// Which namespaces a pod-affinity term or spread constraint looks at.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Namespaces {
    /// The listed namespaces (by default the pod's own).
    Listed(BTreeSet<String>),
    /// Every namespace (an empty `namespaceSelector`).
    All,
}

impl Namespaces {
    /// Whether `namespace` is in scope.
    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            Self::Listed(names) => names.contains(namespace),
            Self::All => true,
        }
    }
}

/// A pod (anti-)affinity term: pods matching `selector` in `namespaces`, grouped by `topology_key`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AffinityTerm {
    /// Node label defining the domains (`kubernetes.io/hostname`, zone, ...).
    pub topology_key: String,
    /// Which pods count.
    pub selector: LabelSelector,
    /// Where those pods are looked for.
    pub namespaces: Namespaces,
}

/// A topology spread constraint.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopologySpread {
    /// Node label defining the domains.
    pub topology_key: String,
    /// Maximum allowed difference between a domain's count and the minimum.
    pub max_skew: i32,
    /// With fewer eligible domains than this, the global minimum is taken as zero.
    pub min_domains: Option<i32>,
    /// `ScheduleAnyway` constraints are preferences, relaxed last (§2.3).
    pub schedule_anyway: bool,
    /// Which pods count (in the pod's namespace).
    pub selector: LabelSelector,
    /// `nodeAffinityPolicy: Honor` (default): only nodes matching the pod's node affinity count.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore): only nodes whose taints the pod tolerates count.
    pub honor_node_taints: bool,
}

/// A host port a pod binds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    /// Host IP; empty or `0.0.0.0` means every address.
    pub ip: String,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// Port number.
    pub port: i32,
}

impl HostPort {
    /// Whether two bindings collide on a node (same port and protocol, overlapping IPs).
    pub fn conflicts(&self, other: &Self) -> bool {
        let wildcard = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.port == other.port
            && self.protocol == other.protocol
            && (wildcard(&self.ip) || wildcard(&other.ip) || self.ip == other.ip)
    }
}

/// Everything about a pod that decides where it may go. Two pods with equal shapes are
/// interchangeable for the scheduler, which lets it cache failures per shape.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodShape {
    /// Namespace.
    pub namespace: String,
    /// Pod labels (topology counting selects on them).
    pub labels: BTreeMap<String, String>,
    /// Resource requests: max(Σ containers, max init) + pod overhead, plus one pod slot.
    pub requests: Resources,
    /// `nodeSelector` as requirements.
    pub node_selector: Requirements,
    /// Required node-affinity terms, ORed; relaxation drops them front first while >1 remain.
    pub required_node_terms: Vec<Requirements>,
    /// Preferred node-affinity terms, heaviest first; the first is enforced until relaxed.
    pub preferred_node_terms: Vec<(i32, Requirements)>,
    /// Tolerations.
    pub tolerations: Vec<Toleration>,
    /// Topology spread constraints.
    pub spreads: Vec<TopologySpread>,
    /// Required pod affinity.
    pub affinity: Vec<AffinityTerm>,
    /// Required pod anti-affinity.
    pub anti_affinity: Vec<AffinityTerm>,
    /// Preferred pod affinity, heaviest first; enforced until relaxed.
    pub preferred_affinity: Vec<(i32, AffinityTerm)>,
    /// Preferred pod anti-affinity, heaviest first; enforced until relaxed.
    pub preferred_anti_affinity: Vec<(i32, AffinityTerm)>,
    /// Host ports bound.
    pub host_ports: Vec<HostPort>,
    /// Volume topology alternatives from the pod's claims (core `PodData.VolumeRequirements`,
    /// `provisioning/volume_topology.rs`): the node must meet one; empty when unconstrained.
    pub volume_requirements: Vec<Requirements>,
}

impl PodShape {
    /// The node requirements the pod currently enforces (core `NewPodRequirements`): the
    /// nodeSelector, the first required OR-term and the heaviest preferred term.
    pub fn requirements(&self) -> Requirements {
        let mut requirements = self.node_selector.clone();
        if let Some((_, preferred)) = self.preferred_node_terms.first() {
            requirements.add_all(preferred);
        }
        if let Some(required) = self.required_node_terms.first() {
            requirements.add_all(required);
        }
        requirements
    }

    /// The strict node requirements only (no preferences), used to decide which nodes count for
    /// this pod's spread constraints under `nodeAffinityPolicy: Honor`.
    pub fn strict_requirements(&self) -> Vec<Requirements> {
        if self.required_node_terms.is_empty() {
            return vec![self.node_selector.clone()];
        }
        self.required_node_terms
            .iter()
            .map(|term| {
                let mut requirements = self.node_selector.clone();
                requirements.add_all(term);
                requirements
            })
            .collect()
    }

    /// Every affinity-style term the pod enforces now, as (anti, term).
    pub fn enforced_affinity_terms(&self) -> impl Iterator<Item = (bool, &AffinityTerm)> {
        self.affinity
            .iter()
            .map(|t| (false, t))
            .chain(self.preferred_affinity.iter().map(|(_, t)| (false, t)))
            .chain(self.anti_affinity.iter().map(|t| (true, t)))
            .chain(self.preferred_anti_affinity.iter().map(|(_, t)| (true, t)))
    }
}

/// A pod to place.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulablePod {
    /// `namespace/name`: the key of results and errors.
    pub key: String,
    /// UID, the last sort tie-break.
    pub uid: String,
    /// Creation time in nanoseconds since the epoch (sort tie-break: older first).
    pub created_nanos: i128,
    /// Placement constraints and requests.
    pub shape: PodShape,
}

impl SchedulablePod {
    /// A pod with only requests (CPU milli, memory bytes) and labels; the common test shape.
    pub fn new(namespace: &str, name: &str, requests: Resources) -> Self {
        let mut requests = requests;
        requests.pods = requests.pods.max(1);
        Self {
            key: format!("{namespace}/{name}"),
            uid: format!("{namespace}/{name}"),
            created_nanos: 0,
            shape: PodShape { namespace: namespace.to_owned(), requests, ..PodShape::default() },
        }
    }

    /// Parses a Kubernetes pod. Fails on unparseable quantities or unknown operators, which the
    /// provisioner reports as a pod error rather than guessing.
    pub fn from_pod(pod: &Pod) -> Result<Self, String> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let name = pod.metadata.name.clone().unwrap_or_default();
        let spec = pod.spec.clone().unwrap_or_default();
        let mut shape = PodShape {
            namespace: namespace.clone(),
            labels: pod.metadata.labels.clone().unwrap_or_default(),
            requests: pod_requests(&spec)?,
            node_selector: Requirements::from_labels(spec.node_selector.iter().flatten()),
            tolerations: spec.tolerations.iter().flatten().map(Toleration::from_k8s).collect(),
            ..PodShape::default()
        };
        let own_namespace = || Namespaces::Listed(BTreeSet::from([namespace.clone()]));
        let affinity_term = |term: &k8s_openapi::api::core::v1::PodAffinityTerm| AffinityTerm {
            topology_key: term.topology_key.clone(),
            selector: term.label_selector.as_ref().map(LabelSelector::from_k8s).unwrap_or_default(),
            namespaces: match (&term.namespace_selector, &term.namespaces) {
                (Some(selector), _)
                    if selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
                        && selector.match_expressions.as_ref().is_none_or(Vec::is_empty) =>
                {
                    Namespaces::All
                }
                (_, Some(names)) if !names.is_empty() => Namespaces::Listed(names.iter().cloned().collect()),
                _ => own_namespace(),
            },
        };
        if let Some(affinity) = &spec.affinity {
            if let Some(node) = &affinity.node_affinity {
                if let Some(required) = &node.required_during_scheduling_ignored_during_execution {
                    for term in &required.node_selector_terms {
                        shape.required_node_terms.push(node_selector_term(term.match_expressions.iter().flatten())?);
                    }
                }
                for preferred in node.preferred_during_scheduling_ignored_during_execution.iter().flatten() {
                    let term = node_selector_term(preferred.preference.match_expressions.iter().flatten())?;
                    shape.preferred_node_terms.push((preferred.weight, term));
                }
                shape.preferred_node_terms.sort_by_key(|term| std::cmp::Reverse(term.0));
            }
            if let Some(pod_affinity) = &affinity.pod_affinity {
                for term in pod_affinity.required_during_scheduling_ignored_during_execution.iter().flatten() {
                    shape.affinity.push(affinity_term(term));
                }
                for term in pod_affinity.preferred_during_scheduling_ignored_during_execution.iter().flatten() {
                    shape.preferred_affinity.push((term.weight, affinity_term(&term.pod_affinity_term)));
                }
                shape.preferred_affinity.sort_by_key(|term| std::cmp::Reverse(term.0));
            }
            if let Some(anti) = &affinity.pod_anti_affinity {
                for term in anti.required_during_scheduling_ignored_during_execution.iter().flatten() {
                    shape.anti_affinity.push(affinity_term(term));
                }
                for term in anti.preferred_during_scheduling_ignored_during_execution.iter().flatten() {
                    shape.preferred_anti_affinity.push((term.weight, affinity_term(&term.pod_affinity_term)));
                }
                shape.preferred_anti_affinity.sort_by_key(|term| std::cmp::Reverse(term.0));
            }
        }
        for constraint in spec.topology_spread_constraints.iter().flatten() {
            let mut selector = constraint.label_selector.as_ref().map(LabelSelector::from_k8s).unwrap_or_default();
            // matchLabelKeys: the pod's own values for those keys join the selector.
            for key in constraint.match_label_keys.iter().flatten() {
                if let Some(value) = shape.labels.get(key) {
                    selector.match_labels.insert(key.clone(), value.clone());
                }
            }
            shape.spreads.push(TopologySpread {
                topology_key: constraint.topology_key.clone(),
                max_skew: constraint.max_skew,
                min_domains: constraint.min_domains,
                schedule_anyway: constraint.when_unsatisfiable == "ScheduleAnyway",
                selector,
                honor_node_affinity: constraint.node_affinity_policy.as_deref() != Some("Ignore"),
                honor_node_taints: constraint.node_taints_policy.as_deref() == Some("Honor"),
            });
        }
        for container in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
            for port in container.ports.iter().flatten() {
                if let Some(host_port) = port.host_port.filter(|p| *p > 0) {
                    shape.host_ports.push(HostPort {
                        ip: port.host_ip.clone().unwrap_or_default(),
                        protocol: port.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
                        port: host_port,
                    });
                }
            }
        }
        let created_nanos = pod.metadata.creation_timestamp.as_ref().map_or(0, |t| t.0.as_nanosecond());
        Ok(Self {
            key: format!("{namespace}/{name}"),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            created_nanos,
            shape,
        })
    }
}

pub(crate) fn node_selector_term<'a, I>(expressions: I) -> Result<Requirements, String>
where
    I: IntoIterator<Item = &'a k8s_openapi::api::core::v1::NodeSelectorRequirement>,
{
    let mut requirements = Vec::new();
    for expression in expressions {
        requirements.push(NodeSelectorRequirementWithMinValues::try_from(expression.clone())?);
    }
    Ok(Requirements::from_node_selector(&requirements))
}

fn container_requests(container: &Container) -> Result<Resources, String> {
    let requests = container.resources.as_ref().and_then(|r| r.requests.as_ref());
    Resources::from_quantities(requests.into_iter().flatten())
}

/// Pod requests as the kube-scheduler computes them: max(Σ containers + Σ sidecars,
/// max over init containers of (its request + sidecars started before it)) + overhead, and one
/// pod slot.
pub fn pod_requests(spec: &k8s_openapi::api::core::v1::PodSpec) -> Result<Resources, String> {
    let mut total = Resources::default();
    for container in &spec.containers {
        total.add(&container_requests(container)?);
    }
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for container in spec.init_containers.iter().flatten() {
        let requests = container_requests(container)?;
        if container.restart_policy.as_deref() == Some("Always") {
            sidecars.add(&requests);
            init_max.max_with(&sidecars);
        } else {
            init_max.max_with(&requests.plus(&sidecars));
        }
    }
    total.add(&sidecars);
    total.max_with(&init_max);
    if let Some(overhead) = &spec.overhead {
        total.add(&Resources::from_quantities(overhead)?);
    }
    total.set(RESOURCE_PODS, 1);
    Ok(total)
}

/// `key In [values]` helper used by topology to pin a domain.
pub fn domain_requirement(values: impl IntoIterator<Item = String>) -> Requirement {
    Requirement::in_values(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::resources::MIB;

    fn pod_from_json(value: serde_json::Value) -> SchedulablePod {
        SchedulablePod::from_pod(&serde_json::from_value(value).unwrap()).unwrap()
    }

    #[test]
    fn requests_take_the_max_of_containers_and_init_plus_sidecars_and_overhead() {
        let pod = pod_from_json(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "100Mi"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "250m"}}}
                ],
                "initContainers": [
                    {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
                    {"name": "init", "resources": {"requests": {"cpu": "2", "memory": "50Mi"}}}
                ],
                "overhead": {"cpu": "10m"}
            }
        }));
        // containers 750m + sidecar 100m = 850m; init 2000m + sidecar 100m = 2100m; + 10m.
        assert_eq!(pod.shape.requests.cpu_milli, 2110);
        // memory: containers 100Mi vs init 50Mi.
        assert_eq!(pod.shape.requests.memory_bytes, 100 * MIB);
        assert_eq!(pod.shape.requests.pods, 1);
        assert_eq!(pod.key, "ns/p");
    }

    #[test]
    fn parses_affinity_spread_and_host_ports() {
        let pod = pod_from_json(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
                "nodeSelector": {"team": "a"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]},
                            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
                        ]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}},
                            {"weight": 50, "preference": {"matchExpressions": [{"key": "y", "operator": "Exists"}]}}
                        ]
                    },
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}
                    ]}
                },
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]
            }
        }));
        let shape = &pod.shape;
        assert_eq!(shape.required_node_terms.len(), 2);
        assert_eq!(shape.preferred_node_terms[0].0, 50, "heaviest preference first");
        let requirements = shape.requirements();
        assert!(requirements.allows("kubernetes.io/arch", "arm64"));
        assert!(!requirements.allows("kubernetes.io/arch", "amd64"));
        assert!(requirements.has("y") && requirements.has("team"));
        assert_eq!(shape.anti_affinity[0].namespaces, Namespaces::Listed(BTreeSet::from(["ns".to_owned()])));
        assert!(shape.anti_affinity[0].selector.matches(&shape.labels));
        assert!(!shape.spreads[0].schedule_anyway && shape.spreads[0].honor_node_affinity);
        assert_eq!(shape.host_ports, vec![HostPort { ip: String::new(), protocol: "TCP".to_owned(), port: 8080 }]);
    }

    #[test]
    fn host_ports_conflict_on_wildcard_or_equal_ip() {
        let any = HostPort { ip: String::new(), protocol: "TCP".to_owned(), port: 80 };
        let one = HostPort { ip: "10.0.0.1".to_owned(), ..any.clone() };
        let two = HostPort { ip: "10.0.0.2".to_owned(), ..any.clone() };
        assert!(any.conflicts(&one) && one.conflicts(&one));
        assert!(!one.conflicts(&two));
        assert!(!any.conflicts(&HostPort { protocol: "UDP".to_owned(), ..any.clone() }));
    }
}
