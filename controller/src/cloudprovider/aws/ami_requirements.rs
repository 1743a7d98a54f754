//! What instance types an AMI serves, read from its resolved status: shared by instance-type
//! resolution, discovered capacity and drift, so it lives apart from each of them.

use crate::apis::ec2nodeclass::AMI;
use crate::scheduling::requirements::Requirements;

/// The instance-type requirements an AMI serves, as scheduling requirements (the status
/// stores them as core `NodeSelectorRequirement`s; same JSON shape, the operator becomes our enum).
pub fn ami_requirements(ami: &AMI) -> Requirements {
    let terms: Vec<crate::apis::NodeSelectorRequirementWithMinValues> = ami
        .requirements
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok().and_then(|v| serde_json::from_value(v).ok()))
        .collect();
    Requirements::from_node_selector(&terms)
}
