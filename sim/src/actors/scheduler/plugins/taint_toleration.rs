//! TaintToleration: NoSchedule and NoExecute taints filter, PreferNoSchedule taints score.
//!
//! Node readiness reaches the scheduler this way too: kube-scheduler has no readiness filter;
//! the node lifecycle controller taints NotReady/unreachable nodes
//! (`node.kubernetes.io/not-ready`, `node.kubernetes.io/unreachable`), and Karpenter and cloud
//! providers taint nodes that are not initialised yet (`karpenter.sh/unregistered`,
//! `node.cloudprovider.kubernetes.io/uninitialized`).

use super::{Code, Plugin, Status};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;
use crate::actors::scheduler::selectors::{toleration_tolerates, tolerations_tolerate};

/// The reason kube-scheduler 1.34.2+ and 1.35 give (taint keys and values are no longer shown,
/// kubernetes/kubernetes#134740).
pub const REASON_GENERIC: &str = "node(s) had untolerated taint(s)";

/// The Filter. The first untolerated NoSchedule/NoExecute taint, in node order, is reported;
/// with `detailed` as `node(s) had untolerated taint {key: value}` (kube-scheduler up to
/// 1.34.1), otherwise [`REASON_GENERIC`].
pub fn filter(pod: &PodFacts, node: &NodeInfo, detailed: bool) -> Option<Status> {
    let taint = node.taints.iter().find(|t| {
        (t.effect == "NoSchedule" || t.effect == "NoExecute") && !tolerations_tolerate(&pod.tolerations, t)
    })?;
    let reason = if detailed {
        format!("node(s) had untolerated taint {{{}: {}}}", taint.key, taint.value.as_deref().unwrap_or(""))
    } else {
        REASON_GENERIC.to_string()
    };
    Some(Status::new(Plugin::TaintToleration, Code::UnschedulableAndUnresolvable, reason))
}

/// Raw score: the number of PreferNoSchedule taints not tolerated by the pod's tolerations
/// whose effect is empty or PreferNoSchedule. Normalised reversed (fewer is better).
pub fn score(pod: &PodFacts, node: &NodeInfo) -> i64 {
    let tolerations: Vec<_> = pod
        .tolerations
        .iter()
        .filter(|t| matches!(t.effect.as_deref(), None | Some("") | Some("PreferNoSchedule")))
        .collect();
    node.taints
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule")
        .filter(|t| !tolerations.iter().any(|tol| toleration_tolerates(tol, t)))
        .count() as i64
}
