//! NodeAffinity: `spec.nodeSelector` and required node affinity filter; preferred terms score.

use std::collections::BTreeSet;

use super::{Code, Plugin, Status};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;
use crate::actors::scheduler::selectors::{NODE_NAME_FIELD, node_selector_term_matches, node_selector_terms_match};

/// kube-scheduler `ErrReasonPod`.
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";
/// kube-scheduler `errReasonConflict`: every term names nodes, and no name survives.
pub const REASON_CONFLICT: &str = "pod affinity terms conflict";

/// What PreFilter decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreFilter {
    /// All nodes are candidates.
    AllNodes,
    /// Only these nodes (every required term pins `metadata.name In`); others are rejected
    /// with "node(s) didn't satisfy plugin(s) [NodeAffinity]".
    Only(BTreeSet<String>),
    /// The terms contradict each other: the pod fits no node.
    Conflict,
}

/// The PreFilter: narrows candidates to named nodes when every required term uses
/// `matchFields: metadata.name In`.
pub fn pre_filter(pod: &PodFacts) -> PreFilter {
    let Some(terms) = &pod.required_node_terms else {
        return PreFilter::AllNodes;
    };
    let mut names: Option<BTreeSet<String>> = None;
    for term in terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        for r in term.match_fields.iter().flatten() {
            if r.key == NODE_NAME_FIELD && r.operator == "In" {
                let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                term_names = Some(match term_names {
                    None => s,
                    Some(prev) => prev.intersection(&s).cloned().collect(),
                });
            }
        }
        let Some(term_names) = term_names else {
            return PreFilter::AllNodes;
        };
        names.get_or_insert_with(BTreeSet::new).extend(term_names);
    }
    match names {
        Some(n) if n.is_empty() => PreFilter::Conflict,
        Some(n) => PreFilter::Only(n),
        None => PreFilter::AllNodes,
    }
}

/// Whether the node satisfies nodeSelector and required node affinity
/// (`RequiredNodeAffinity.Match`). Topology spread's `nodeAffinityPolicy: Honor` uses it too.
pub fn required_matches(pod: &PodFacts, node: &NodeInfo) -> bool {
    pod.node_selector.iter().all(|(k, v)| node.labels.get(k) == Some(v))
        && pod
            .required_node_terms
            .as_ref()
            .is_none_or(|terms| node_selector_terms_match(terms, &node.name, &node.labels))
}

/// The Filter.
pub fn filter(pod: &PodFacts, node: &NodeInfo) -> Option<Status> {
    (!required_matches(pod, node))
        .then(|| Status::new(Plugin::NodeAffinity, Code::UnschedulableAndUnresolvable, REASON))
}

/// Raw score: the summed weights of matching preferred terms. Normalised by the maximum.
pub fn score(pod: &PodFacts, node: &NodeInfo) -> i64 {
    pod.preferred_node_terms
        .iter()
        .filter(|(_, t)| node_selector_term_matches(t, &node.name, &node.labels))
        .map(|(w, _)| *w)
        .sum()
}
