//! NodePorts: a requested host port must not be in use on the node.

use super::{Code, Plugin, Status};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;

/// kube-scheduler `ErrReason` of the NodePorts plugin.
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The Filter. `Unschedulable`: evicting the port's holder would help.
pub fn filter(pod: &PodFacts, node: &NodeInfo) -> Option<Status> {
    pod.host_ports
        .iter()
        .any(|p| node.port_conflicts(p))
        .then(|| Status::new(Plugin::NodePorts, Code::Unschedulable, REASON))
}
