//! What a pod's PersistentVolumeClaims say, resolved from the store for one scheduling
//! attempt: the facts the VolumeBinding plugin (`plugins/volume_binding.rs`) judges, kept in
//! their own file so the pod's facts (`pod_facts.rs`) can carry them without importing the
//! plugin.

use k8s_openapi::api::core::v1::NodeSelectorTerm;

/// What the pod's claims say, read from the store for one attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VolumeFacts {
    /// PreFilter's rejection, if any (`persistentvolumeclaim "x" not found`, unbound
    /// immediate claims): the pod fits no node.
    pub unresolvable: Option<String>,
    /// Each bound volume's required node-affinity terms (ORed within a volume).
    pub bound: Vec<Vec<NodeSelectorTerm>>,
    /// Each unbound `WaitForFirstConsumer` claim's class `allowedTopologies`, as node
    /// selector terms (ORed); empty for a class without them.
    pub provisioned: Vec<Vec<NodeSelectorTerm>>,
    /// The unbound `WaitForFirstConsumer` claims (`namespace`, `name`): the actor marks them
    /// with the chosen node (`volume.kubernetes.io/selected-node`).
    pub to_provision: Vec<(String, String)>,
}

impl VolumeFacts {
    /// Whether the pod's claims constrain nothing.
    pub fn is_empty(&self) -> bool {
        *self == VolumeFacts::default()
    }
}
