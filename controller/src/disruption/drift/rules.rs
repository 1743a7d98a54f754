//! Core's drift rules (core `nodeclaim/disruption/drift.go`), as pure functions of the NodeClaim,
//! its NodePool and the pool's instance types. The provider's own checks (node class hash, AMI,
//! security groups, subnet) come after these, through [`CloudProvider::is_drifted`].
//!
//! [`CloudProvider::is_drifted`]: crate::cloudprovider::CloudProvider::is_drifted

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;

use crate::apis::labels::{
    CAPACITY_TYPE_LABEL, CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_RESERVED, INSTANCE_TYPE_LABEL,
    NODE_POOL_HASH_ANNOTATION, NODE_POOL_HASH_VERSION, NODE_POOL_HASH_VERSION_ANNOTATION, TOPOLOGY_ZONE_LABEL,
};
use crate::apis::{NodeClaim, NodePool};
use crate::cloudprovider::{DriftReason, InstanceType};
use crate::scheduling::Requirements;

/// Claims younger than this are not checked for a vanished instance type (core: a fresh claim's
/// type may not have reached the instance-type cache yet).
pub const INSTANCE_TYPE_CHECK_MIN_AGE: Duration = Duration::from_secs(3600);

/// `NodePoolDrifted`: the claim was stamped with a NodePool hash of the current hash version and
/// the pool's template hashes differently now. Claims without the annotations, or stamped under
/// another hash version (those are re-stamped, see [`super::hash_version`]), are not drifted.
pub fn node_pool_drift(node_pool: &NodePool, claim: &NodeClaim) -> Option<DriftReason> {
    let annotations = claim.annotations();
    let claim_hash = annotations.get(NODE_POOL_HASH_ANNOTATION)?;
    if annotations.get(NODE_POOL_HASH_VERSION_ANNOTATION)? != NODE_POOL_HASH_VERSION {
        return None;
    }
    (*claim_hash != crate::apis::hash::node_pool_hash(node_pool)).then_some(DriftReason::NODE_POOL_DRIFTED)
}

/// `RequirementsDrifted`: the claim's labels, read as `key In [value]`, are not compatible with
/// the pool's requirements (core `drift.go` `areRequirementsDrifted` l. 170-177). Core calls
/// `Compatible` without `AllowUndefinedWellKnownLabels` (`scheduling/requirements.go`
/// l. 181-197): a pool requirement on a key the claim has no label for drifts the claim
/// unless the requirement accepts its absence (`NotIn`, `DoesNotExist`), well-known key or
/// not. Widening the values of a labelled key never drifts a node.
pub fn requirements_drift(node_pool: &NodePool, claim: &NodeClaim) -> Option<DriftReason> {
    let pool = Requirements::from_node_selector(&node_pool.spec.template.spec.requirements);
    let labels = Requirements::from_labels(claim.labels());
    labels.compatible_strict(&pool).is_err().then_some(DriftReason::REQUIREMENTS_DRIFTED)
}

/// `InstanceTypeNotFound`: the claim's instance type is no longer offered to the pool, or has no
/// offering in the claim's zone and capacity type (a reserved claim may also fall back to
/// on-demand). Only claims at least [`INSTANCE_TYPE_CHECK_MIN_AGE`] old are checked. A claim
/// without the instance-type label names no type that exists, so it is drifted too (core
/// `drift.go` `instanceTypeNotFound` l. 127-133 looks up the label's value, `""` if absent).
pub fn instance_type_drift(claim: &NodeClaim, types: &[Arc<InstanceType>], age: Duration) -> Option<DriftReason> {
    if age < INSTANCE_TYPE_CHECK_MIN_AGE {
        return None;
    }
    let labels = claim.labels();
    let name = labels.get(INSTANCE_TYPE_LABEL).map_or("", String::as_str);
    let Some(instance_type) = types.iter().find(|t| t.name == name) else {
        return Some(DriftReason::INSTANCE_TYPE_NOT_FOUND);
    };
    let zone = labels.get(TOPOLOGY_ZONE_LABEL);
    let capacity_type = labels.get(CAPACITY_TYPE_LABEL).map(String::as_str);
    let compatible = instance_type.offerings.iter().any(|offering| {
        zone.is_none_or(|z| *z == offering.zone)
            && capacity_type.is_none_or(|c| {
                c == offering.capacity_type
                    || (c == CAPACITY_TYPE_RESERVED && offering.capacity_type == CAPACITY_TYPE_ON_DEMAND)
            })
    });
    (!compatible).then_some(DriftReason::INSTANCE_TYPE_NOT_FOUND)
}

/// Core's checks in order: NodePool hash, then requirements, then the instance type (the
/// provider's checks follow when these find nothing).
pub fn core_drift(
    node_pool: &NodePool,
    claim: &NodeClaim,
    types: Option<&[Arc<InstanceType>]>,
    age: Duration,
) -> Option<DriftReason> {
    node_pool_drift(node_pool, claim)
        .or_else(|| requirements_drift(node_pool, claim))
        .or_else(|| types.and_then(|types| instance_type_drift(claim, types, age)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::apis::hash::node_pool_hash;

    fn pool() -> NodePool {
        serde_saphyr::from_str(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {team: a}}
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"#,
        )
        .expect("nodepool")
    }

    /// A launched m5.large claim of `pool`, stamped with its hash.
    fn claim(pool: &NodePool) -> NodeClaim {
        let mut claim: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "default-x"},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
        }))
        .expect("claim");
        claim.metadata.labels = Some(BTreeMap::from(
            [
                ("karpenter.sh/nodepool", "default"),
                ("team", "a"),
                ("karpenter.sh/capacity-type", "spot"),
                ("karpenter.k8s.aws/instance-category", "m"),
                ("karpenter.k8s.aws/instance-generation", "5"),
                ("node.kubernetes.io/instance-type", "m5.2xlarge"),
                ("topology.kubernetes.io/zone", "test-zone-1"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned())),
        ));
        claim.metadata.annotations = Some(BTreeMap::from([
            (NODE_POOL_HASH_ANNOTATION.to_owned(), node_pool_hash(pool)),
            (NODE_POOL_HASH_VERSION_ANNOTATION.to_owned(), NODE_POOL_HASH_VERSION.to_owned()),
        ]));
        claim
    }

    #[test]
    fn a_claim_of_the_current_template_has_not_drifted() {
        let pool = pool();
        assert_eq!(core_drift(&pool, &claim(&pool), None, Duration::ZERO), None);
    }

    #[test]
    fn a_template_change_is_node_pool_drift() {
        let pool = pool();
        let claim = claim(&pool);
        let mut edited = pool.clone();
        edited.spec.template.metadata.as_mut().unwrap().labels.as_mut().unwrap().insert("team".into(), "b".into());
        assert_eq!(core_drift(&edited, &claim, None, Duration::ZERO), Some(DriftReason::NODE_POOL_DRIFTED));
    }

    #[test]
    fn a_hash_of_another_version_or_no_hash_is_not_node_pool_drift() {
        let pool = pool();
        let mut edited = pool.clone();
        edited.spec.template.spec.taints = Some(vec![k8s_openapi::api::core::v1::Taint {
            key: "dedicated".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]);
        let mut old_version = claim(&pool);
        old_version
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(NODE_POOL_HASH_VERSION_ANNOTATION.into(), "v2".into());
        assert_eq!(node_pool_drift(&edited, &old_version), None);
        let mut unstamped = claim(&pool);
        unstamped.metadata.annotations = None;
        assert_eq!(node_pool_drift(&edited, &unstamped), None);
    }

    #[test]
    fn narrowing_requirements_past_the_claim_is_requirements_drift() {
        let pool = pool();
        let claim = claim(&pool);
        let mut narrowed = pool.clone();
        narrowed.spec.template.spec.requirements[1].values = Some(vec!["c".into()]);
        assert_eq!(core_drift(&narrowed, &claim, None, Duration::ZERO), Some(DriftReason::REQUIREMENTS_DRIFTED));
        let mut newer = pool.clone();
        newer.spec.template.spec.requirements[2].values = Some(vec!["5".into()]);
        assert_eq!(requirements_drift(&newer, &claim), Some(DriftReason::REQUIREMENTS_DRIFTED));
        let mut on_demand_only = pool.clone();
        on_demand_only.spec.template.spec.requirements[0].values = Some(vec!["on-demand".into()]);
        assert_eq!(requirements_drift(&on_demand_only, &claim), Some(DriftReason::REQUIREMENTS_DRIFTED));
    }

    #[test]
    fn widening_or_still_satisfied_requirements_do_not_drift() {
        let pool = pool();
        let claim = claim(&pool);
        let mut widened = pool.clone();
        widened.spec.template.spec.requirements[1].values = Some(vec!["c".into(), "m".into(), "r".into()]);
        widened.spec.template.spec.requirements[2].values = Some(vec!["1".into()]);
        assert_eq!(core_drift(&widened, &claim, None, Duration::ZERO), None);
        // A new requirement on a well-known key the claim satisfies, and one accepting absence.
        let mut added: NodePool = widened.clone();
        added.spec.template.spec.requirements.push(
            serde_json::from_value(serde_json::json!({"key": "topology.kubernetes.io/zone", "operator": "In",
                "values": ["test-zone-1", "test-zone-2"]}))
            .unwrap(),
        );
        added.spec.template.spec.requirements.push(
            serde_json::from_value(serde_json::json!({"key": "example.com/gpu", "operator": "DoesNotExist"})).unwrap(),
        );
        assert_eq!(core_drift(&added, &claim, None, Duration::ZERO), None);
        // A custom key the claim has no label for must be defined: drift.
        let mut custom = widened;
        custom.spec.template.spec.requirements.push(
            serde_json::from_value(serde_json::json!({"key": "example.com/team", "operator": "In", "values": ["x"]}))
                .unwrap(),
        );
        assert_eq!(requirements_drift(&custom, &claim), Some(DriftReason::REQUIREMENTS_DRIFTED));
    }

    #[test]
    fn a_vanished_instance_type_drifts_only_claims_older_than_an_hour() {
        let pool = pool();
        let claim = claim(&pool);
        let types = crate::cloudprovider::fake::instance_types(8); // m5.2xlarge is type index 1 (2 vCPUs, "m")
        let hour = INSTANCE_TYPE_CHECK_MIN_AGE;
        let present: Vec<_> = types.iter().filter(|t| t.name == "m5.2xlarge").cloned().collect();
        assert_eq!(present.len(), 1);
        assert_eq!(instance_type_drift(&claim, &present, hour), None);
        assert_eq!(instance_type_drift(&claim, &[], hour - Duration::from_secs(1)), None, "too young to check");
        assert_eq!(instance_type_drift(&claim, &[], hour), Some(DriftReason::INSTANCE_TYPE_NOT_FOUND));
        assert_eq!(core_drift(&pool, &claim, Some(&[]), hour), Some(DriftReason::INSTANCE_TYPE_NOT_FOUND));
        // Spot is only offered in the first two fake zones.
        let mut elsewhere = claim.clone();
        elsewhere.metadata.labels.as_mut().unwrap().insert(TOPOLOGY_ZONE_LABEL.into(), "test-zone-3".into());
        assert_eq!(instance_type_drift(&elsewhere, &present, hour), Some(DriftReason::INSTANCE_TYPE_NOT_FOUND));
        let mut reserved = elsewhere;
        reserved.metadata.labels.as_mut().unwrap().insert(CAPACITY_TYPE_LABEL.into(), CAPACITY_TYPE_RESERVED.into());
        assert_eq!(instance_type_drift(&reserved, &present, hour), None, "reserved falls back to on-demand");
    }

    /// Core `instanceTypeNotFound` (drift.go l. 127-133): a claim with no instance-type label
    /// matches no instance type, so it is drifted once old enough to be checked.
    #[test]
    fn a_claim_without_the_instance_type_label_is_instance_type_drift() {
        let pool = pool();
        let mut claim = claim(&pool);
        claim.metadata.labels.as_mut().unwrap().remove(INSTANCE_TYPE_LABEL);
        let types = crate::cloudprovider::fake::instance_types(8);
        let hour = INSTANCE_TYPE_CHECK_MIN_AGE;
        assert_eq!(instance_type_drift(&claim, &types, hour), Some(DriftReason::INSTANCE_TYPE_NOT_FOUND));
        assert_eq!(instance_type_drift(&claim, &types, hour - Duration::from_secs(1)), None, "too young to check");
    }

    /// Core `areRequirementsDrifted` (drift.go l. 170-177) calls `Compatible` without
    /// `AllowUndefinedWellKnownLabels`: a new requirement on a well-known key the claim has no
    /// label for drifts it, unless the requirement accepts absence.
    #[test]
    fn a_requirement_on_an_unlabelled_well_known_key_is_requirements_drift() {
        let pool = pool();
        let claim = claim(&pool);
        let mut arch = pool.clone();
        arch.spec.template.spec.requirements.push(
            serde_json::from_value(
                serde_json::json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}),
            )
            .unwrap(),
        );
        assert_eq!(requirements_drift(&arch, &claim), Some(DriftReason::REQUIREMENTS_DRIFTED));
        let mut absent = pool.clone();
        absent.spec.template.spec.requirements.push(
            serde_json::from_value(
                serde_json::json!({"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["arm64"]}),
            )
            .unwrap(),
        );
        assert_eq!(requirements_drift(&absent, &claim), None);
    }
}
