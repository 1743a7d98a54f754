//! NodeUnschedulable: a cordoned node (`spec.unschedulable`) takes only pods tolerating
//! `node.kubernetes.io/unschedulable:NoSchedule`.

use k8s_openapi::api::core::v1::Taint;

use super::{Code, Plugin, Status};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;
use crate::actors::scheduler::selectors::tolerations_tolerate;

/// kube-scheduler `ErrReasonUnschedulable`.
pub const REASON: &str = "node(s) were unschedulable";

/// The Filter.
pub fn filter(pod: &PodFacts, node: &NodeInfo) -> Option<Status> {
    if !node.unschedulable {
        return None;
    }
    let taint = Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        effect: "NoSchedule".into(),
        value: None,
        time_added: None,
    };
    if tolerations_tolerate(&pod.tolerations, &taint) {
        return None;
    }
    Some(Status::new(Plugin::NodeUnschedulable, Code::UnschedulableAndUnresolvable, REASON))
}
