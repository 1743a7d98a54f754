//! NodeName: a pod naming a node in `spec.nodeName` fits only that node.

use super::{Code, Plugin, Status};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;

/// kube-scheduler `ErrReason` of the NodeName plugin.
pub const REASON: &str = "node(s) didn't match the requested node name";

/// The Filter.
pub fn filter(pod: &PodFacts, node: &NodeInfo) -> Option<Status> {
    match &pod.node_name {
        Some(name) if *name != node.name => {
            Some(Status::new(Plugin::NodeName, Code::UnschedulableAndUnresolvable, REASON))
        }
        _ => None,
    }
}
