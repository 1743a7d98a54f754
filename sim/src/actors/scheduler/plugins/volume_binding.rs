//! VolumeBinding (with VolumeZone's zone check folded in): a pod's PersistentVolumeClaims
//! decide where it may run. A claim bound to a volume fits only nodes matching the volume's
//! required node affinity (an EBS volume's zone); an unbound `WaitForFirstConsumer` claim
//! fits the nodes its StorageClass's `allowedTopologies` allow (anywhere without them), and
//! the volume is provisioned where the pod lands. Missing claims and unbound `Immediate`
//! claims reject the pod at PreFilter.
//!
//! kube-scheduler `pkg/scheduler/framework/plugins/volumebinding/volume_binding.go`
//! (`PreFilter`, `Filter`) and `binder.go` (`FindPodVolumes`: `checkBoundClaims`,
//! `checkVolumeProvisions`). The claims are resolved by the actor from the store at each
//! attempt (`VolumeFacts`, `scheduler/volume_facts.rs`), since they change without the pod changing.

use k8s_openapi::api::core::v1::NodeSelectorTerm;

use super::{Code, Plugin, Status};
use crate::actors::scheduler::node_info::NodeInfo;
use crate::actors::scheduler::pod_facts::PodFacts;
use crate::actors::scheduler::selectors::node_selector_terms_match;
#[cfg(test)]
use crate::actors::scheduler::volume_facts::VolumeFacts;

/// kube-scheduler `ErrReasonNodeConflict`: a bound volume's node affinity excludes the node.
pub const REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// kube-scheduler `ErrReasonBindConflict`: an unbound claim cannot be provisioned for the node.
pub const REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// kube-scheduler's PreFilter message for an unbound claim of an `Immediate` class.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// PreFilter: a missing claim or an unbound immediate claim rejects every node.
pub fn pre_filter(pod: &PodFacts) -> Option<Status> {
    let reason = pod.volumes.as_ref()?.unresolvable.as_ref()?;
    Some(Status::new(Plugin::VolumeBinding, Code::UnschedulableAndUnresolvable, reason))
}

/// The Filter: every bound volume's affinity matches the node (`checkBoundClaims`), and
/// every claim to provision may be provisioned there (`checkVolumeProvisions`).
pub fn filter(pod: &PodFacts, node: &NodeInfo) -> Option<Status> {
    let volumes = pod.volumes.as_ref()?;
    let matches =
        |terms: &Vec<NodeSelectorTerm>| terms.is_empty() || node_selector_terms_match(terms, &node.name, &node.labels);
    if !volumes.bound.iter().all(matches) {
        return Some(Status::new(Plugin::VolumeBinding, Code::UnschedulableAndUnresolvable, REASON_NODE_CONFLICT));
    }
    if !volumes.provisioned.iter().all(matches) {
        return Some(Status::new(Plugin::VolumeBinding, Code::UnschedulableAndUnresolvable, REASON_BIND_CONFLICT));
    }
    None
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, NodeSelectorTerm, Pod};

    use super::*;

    fn zone_term(zone: &str) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: "topology.kubernetes.io/zone".into(),
                operator: "In".into(),
                values: Some(vec![zone.into()]),
            }]),
            match_fields: None,
        }
    }

    fn node(zone: &str) -> NodeInfo {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("n-{zone}"), "labels": {"topology.kubernetes.io/zone": zone}}
        }))
        .unwrap();
        NodeInfo::new(&node)
    }

    fn facts(volumes: VolumeFacts) -> PodFacts {
        let mut f = PodFacts::new(&Pod::default());
        f.volumes = Some(volumes);
        f
    }

    #[test]
    fn bound_volume_fits_its_zone_only() {
        let pod = facts(VolumeFacts { bound: vec![vec![zone_term("a")]], ..VolumeFacts::default() });
        assert_eq!(filter(&pod, &node("a")), None);
        let status = filter(&pod, &node("b")).expect("zone b is rejected");
        assert_eq!(status.reasons, vec![REASON_NODE_CONFLICT.to_string()]);
    }

    #[test]
    fn unbound_claim_follows_allowed_topologies() {
        let anywhere = facts(VolumeFacts { provisioned: vec![vec![]], ..VolumeFacts::default() });
        assert_eq!(filter(&anywhere, &node("c")), None);
        let only_b = facts(VolumeFacts { provisioned: vec![vec![zone_term("b")]], ..VolumeFacts::default() });
        assert_eq!(filter(&only_b, &node("b")), None);
        assert_eq!(filter(&only_b, &node("a")).unwrap().reasons, vec![REASON_BIND_CONFLICT.to_string()]);
    }

    #[test]
    fn missing_claim_rejects_at_pre_filter() {
        let pod = facts(VolumeFacts {
            unresolvable: Some("persistentvolumeclaim \"d\" not found".into()),
            ..VolumeFacts::default()
        });
        assert_eq!(pre_filter(&pod).unwrap().code, Code::UnschedulableAndUnresolvable);
        assert_eq!(pre_filter(&facts(VolumeFacts::default())), None);
    }
}
