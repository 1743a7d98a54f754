//! AWS drift (aws `pkg/cloudprovider/drift.go`): a launched instance has drifted from its
//! EC2NodeClass when the class's static hash changed (`NodeClassDrift`), or when what the class
//! resolves to today no longer covers the instance: its image is not the AMI the class maps its
//! instance type to (`AMIDrift`, e.g. a new AMI behind `al2023@latest`), its security groups are
//! not exactly the resolved ones (`SecurityGroupDrift`), or its subnet is not among the resolved
//! ones (`SubnetDrift`). Checked in that order; the static check first, as it needs no AWS call.

use std::collections::BTreeSet;

use aws_sdk_ec2::types::Instance;
use kube::ResourceExt;

use super::ami_requirements::ami_requirements;
use crate::apis::EC2NodeClass;
use crate::apis::NodeClaim;
use crate::apis::hash::ec2_node_class_hash;
use crate::apis::labels::{EC2_NODE_CLASS_HASH_ANNOTATION, EC2_NODE_CLASS_HASH_VERSION_ANNOTATION};
use crate::cloudprovider::{CloudError, DriftReason, InstanceType};

/// What drift compares about a running instance (from DescribeInstances).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstanceFacts {
    /// The AMI it runs.
    pub image_id: String,
    /// The subnet it was launched into.
    pub subnet_id: String,
    /// Its security groups.
    pub security_group_ids: BTreeSet<String>,
}

impl InstanceFacts {
    /// The facts of a described instance.
    pub fn of(instance: &Instance) -> Self {
        Self {
            image_id: instance.image_id().unwrap_or_default().to_owned(),
            subnet_id: instance.subnet_id().unwrap_or_default().to_owned(),
            security_group_ids: instance
                .security_groups()
                .iter()
                .filter_map(|g| g.group_id())
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// `NodeClassDrift` when both the class and the claim carry a hash of the same version and the
/// hashes differ. The class's hash is computed from its current spec (the annotation on the class
/// is the same value, written for visibility). A claim stamped under another hash version is left
/// to the re-stamp, never drifted.
pub fn static_drift(claim: &NodeClaim, class: &EC2NodeClass) -> Option<DriftReason> {
    let annotations = claim.annotations();
    let claim_hash = annotations.get(EC2_NODE_CLASS_HASH_ANNOTATION)?;
    let claim_version = annotations.get(EC2_NODE_CLASS_HASH_VERSION_ANNOTATION)?;
    if claim_version != crate::apis::labels::EC2_NODE_CLASS_HASH_VERSION {
        return None;
    }
    (*claim_hash != ec2_node_class_hash(class)).then_some(DriftReason::NODE_CLASS_DRIFT)
}

/// The dynamic checks against the class's resolved status: AMI, then security groups, then
/// subnet.
///
/// # Errors
/// When the status has nothing to compare against (no AMI for the type, no security groups, no
/// subnets): Karpenter treats that as an error, not as drift, and tries again later.
pub fn dynamic_drift(
    facts: &InstanceFacts,
    class: &EC2NodeClass,
    instance_type: &InstanceType,
) -> Result<Option<DriftReason>, CloudError> {
    let status = class.status.clone().unwrap_or_default();
    // The AMI a launch of this type would use today: the first resolved AMI compatible with it
    // (aws `amifamily.MapToInstanceTypes`), exactly as the launch path picks it.
    let mapped = status
        .amis
        .iter()
        .flatten()
        .find(|ami| ami_requirements(ami).compatible(&instance_type.requirements).is_ok())
        .ok_or_else(|| {
            CloudError::other("AMIsNotFound", format!("no resolved AMI serves instance type {}", instance_type.name))
        })?;
    if mapped.id != facts.image_id {
        return Ok(Some(DriftReason::AMI_DRIFT));
    }
    let groups: BTreeSet<String> = status.security_groups.iter().flatten().map(|g| g.id.clone()).collect();
    if groups.is_empty() {
        return Err(CloudError::other("SecurityGroupsNotFound", "no security groups are resolved"));
    }
    if groups != facts.security_group_ids {
        return Ok(Some(DriftReason::SECURITY_GROUP_DRIFT));
    }
    let subnets = status.subnets.as_deref().unwrap_or_default();
    if subnets.is_empty() {
        return Err(CloudError::other("SubnetsNotFound", "no subnets are resolved"));
    }
    if !subnets.iter().any(|s| s.id == facts.subnet_id) {
        return Ok(Some(DriftReason::SUBNET_DRIFT));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::NodeSelectorRequirement;

    use super::*;
    use crate::apis::ec2nodeclass::{AMI, SecurityGroup, Subnet};
    use crate::apis::labels::EC2_NODE_CLASS_HASH_VERSION;

    fn class() -> EC2NodeClass {
        let mut class: EC2NodeClass = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
            "spec": {"role": "R", "subnetSelectorTerms": [{"id": "subnet-a"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}], "amiSelectorTerms": [{"alias": "al2023@latest"}]}
        }))
        .expect("class");
        let arch = |a: &str| NodeSelectorRequirement {
            key: "kubernetes.io/arch".into(),
            operator: "In".into(),
            values: Some(vec![a.into()]),
        };
        class.status = Some(crate::apis::EC2NodeClassStatus {
            subnets: Some(vec![
                Subnet { id: "subnet-a".into(), zone: "us-east-1a".into(), zone_id: None },
                Subnet { id: "subnet-b".into(), zone: "us-east-1b".into(), zone_id: None },
            ]),
            security_groups: Some(vec![
                SecurityGroup { id: "sg-1".into(), name: None },
                SecurityGroup { id: "sg-2".into(), name: None },
            ]),
            amis: Some(vec![
                AMI { id: "ami-arm".into(), deprecated: None, name: None, requirements: vec![arch("arm64")] },
                AMI { id: "ami-x86".into(), deprecated: None, name: None, requirements: vec![arch("amd64")] },
                AMI { id: "ami-x86-old".into(), deprecated: None, name: None, requirements: vec![arch("amd64")] },
            ]),
            ..Default::default()
        });
        class
    }

    fn facts(image: &str, subnet: &str, groups: &[&str]) -> InstanceFacts {
        InstanceFacts {
            image_id: image.into(),
            subnet_id: subnet.into(),
            security_group_ids: groups.iter().map(|g| (*g).to_owned()).collect(),
        }
    }

    fn amd64() -> InstanceType {
        crate::cloudprovider::fake::instance_type("m", 2, 8, "amd64")
    }

    #[test]
    fn an_instance_matching_the_status_has_not_drifted() {
        let result = dynamic_drift(&facts("ami-x86", "subnet-b", &["sg-2", "sg-1"]), &class(), &amd64());
        assert_eq!(result, Ok(None));
    }

    #[test]
    fn an_image_other_than_the_first_compatible_ami_is_ami_drift() {
        // ami-x86-old is still resolved, but a launch of this type would pick ami-x86.
        let result = dynamic_drift(&facts("ami-x86-old", "subnet-a", &["sg-1", "sg-2"]), &class(), &amd64());
        assert_eq!(result, Ok(Some(DriftReason::AMI_DRIFT)));
        let arm = crate::cloudprovider::fake::instance_type("m", 2, 8, "arm64");
        let result = dynamic_drift(&facts("ami-arm", "subnet-a", &["sg-1", "sg-2"]), &class(), &arm);
        assert_eq!(result, Ok(None));
    }

    #[test]
    fn security_groups_must_match_as_a_set_and_subnets_must_be_resolved() {
        let sg = dynamic_drift(&facts("ami-x86", "subnet-a", &["sg-1"]), &class(), &amd64());
        assert_eq!(sg, Ok(Some(DriftReason::SECURITY_GROUP_DRIFT)));
        let extra = dynamic_drift(&facts("ami-x86", "subnet-a", &["sg-1", "sg-2", "sg-3"]), &class(), &amd64());
        assert_eq!(extra, Ok(Some(DriftReason::SECURITY_GROUP_DRIFT)));
        let subnet = dynamic_drift(&facts("ami-x86", "subnet-z", &["sg-1", "sg-2"]), &class(), &amd64());
        assert_eq!(subnet, Ok(Some(DriftReason::SUBNET_DRIFT)));
        // AMI drift is reported first when several things drifted.
        let all = dynamic_drift(&facts("ami-gone", "subnet-z", &[]), &class(), &amd64());
        assert_eq!(all, Ok(Some(DriftReason::AMI_DRIFT)));
    }

    #[test]
    fn an_unresolved_status_is_an_error_not_drift() {
        let mut empty = class();
        empty.status.as_mut().unwrap().amis = Some(Vec::new());
        assert!(dynamic_drift(&facts("ami-x86", "subnet-a", &["sg-1", "sg-2"]), &empty, &amd64()).is_err());
        let mut no_subnets = class();
        no_subnets.status.as_mut().unwrap().subnets = None;
        assert!(dynamic_drift(&facts("ami-x86", "subnet-a", &["sg-1", "sg-2"]), &no_subnets, &amd64()).is_err());
    }

    #[test]
    fn node_class_hash_drift_needs_matching_versions() {
        let class = class();
        let mut claim: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
        }))
        .expect("claim");
        assert_eq!(static_drift(&claim, &class), None, "no annotations: nothing to compare");
        let stamp = |hash: String, version: &str| {
            Some(BTreeMap::from([
                (EC2_NODE_CLASS_HASH_ANNOTATION.to_owned(), hash),
                (EC2_NODE_CLASS_HASH_VERSION_ANNOTATION.to_owned(), version.to_owned()),
            ]))
        };
        claim.metadata.annotations = stamp(ec2_node_class_hash(&class), EC2_NODE_CLASS_HASH_VERSION);
        assert_eq!(static_drift(&claim, &class), None);
        claim.metadata.annotations = stamp("0123456789abcdef".into(), EC2_NODE_CLASS_HASH_VERSION);
        assert_eq!(static_drift(&claim, &class), Some(DriftReason::NODE_CLASS_DRIFT));
        claim.metadata.annotations = stamp("0123456789abcdef".into(), "v1");
        assert_eq!(static_drift(&claim, &class), None, "an old hash version is re-stamped, not drifted");
    }
}
