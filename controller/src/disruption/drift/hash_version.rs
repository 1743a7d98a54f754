//! Hash versions (core `nodepool/hash` and aws `nodeclass/hash` controllers): the NodePool and
//! EC2NodeClass carry their current hash and hash version as annotations, and a NodeClaim stamped
//! under an older hash *version* is re-stamped rather than compared. A change of the hashing
//! scheme (a Karpenter upgrade) therefore never drifts the whole fleet. A claim already marked
//! `Drifted` keeps its old hash, so it stays drifted: whether it would still differ cannot be
//! known across schemes.

use std::collections::BTreeMap;

use kube::ResourceExt;

use crate::apis::condition::StatusConditions;
use crate::apis::hash::{ec2_node_class_hash, node_pool_hash};
use crate::apis::labels::{
    EC2_NODE_CLASS_HASH_ANNOTATION, EC2_NODE_CLASS_HASH_VERSION, EC2_NODE_CLASS_HASH_VERSION_ANNOTATION,
    NODE_POOL_HASH_ANNOTATION, NODE_POOL_HASH_VERSION, NODE_POOL_HASH_VERSION_ANNOTATION,
};
use crate::apis::nodeclaim::CONDITION_DRIFTED;
use crate::apis::{EC2NodeClass, NodeClaim, NodePool};

/// The annotations a NodePool should carry: its hash and the hash version.
pub fn node_pool_annotations(node_pool: &NodePool) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NODE_POOL_HASH_ANNOTATION.to_owned(), node_pool_hash(node_pool)),
        (NODE_POOL_HASH_VERSION_ANNOTATION.to_owned(), NODE_POOL_HASH_VERSION.to_owned()),
    ])
}

/// The annotations an EC2NodeClass should carry: its hash and the hash version.
pub fn node_class_annotations(node_class: &EC2NodeClass) -> BTreeMap<String, String> {
    BTreeMap::from([
        (EC2_NODE_CLASS_HASH_ANNOTATION.to_owned(), ec2_node_class_hash(node_class)),
        (EC2_NODE_CLASS_HASH_VERSION_ANNOTATION.to_owned(), EC2_NODE_CLASS_HASH_VERSION.to_owned()),
    ])
}

/// The annotations `wanted` that `object` lacks or has with another value (a merge patch), or
/// `None` when it already carries them all.
pub fn missing<K: ResourceExt>(object: &K, wanted: BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    let current = object.annotations();
    let patch: BTreeMap<String, String> = wanted.into_iter().filter(|(k, v)| current.get(k) != Some(v)).collect();
    (!patch.is_empty()).then_some(patch)
}

/// The annotations to re-stamp on `claim` whose hash versions differ from the current ones (a
/// merge patch), or `None` when both are current. Only hashes of owners that are known are
/// re-stamped; the node class hash only once the claim has launched (it is stamped at launch).
pub fn restamp(
    claim: &NodeClaim,
    node_pool: Option<&NodePool>,
    node_class: Option<&EC2NodeClass>,
    launched: bool,
) -> Option<BTreeMap<String, String>> {
    let annotations = claim.annotations();
    let drifted = claim.condition(CONDITION_DRIFTED).is_some();
    let mut patch = BTreeMap::new();
    if let Some(pool) = node_pool
        && annotations.get(NODE_POOL_HASH_VERSION_ANNOTATION).map(String::as_str) != Some(NODE_POOL_HASH_VERSION)
    {
        patch.insert(NODE_POOL_HASH_VERSION_ANNOTATION.to_owned(), NODE_POOL_HASH_VERSION.to_owned());
        if !drifted {
            patch.insert(NODE_POOL_HASH_ANNOTATION.to_owned(), node_pool_hash(pool));
        }
    }
    if let Some(class) = node_class
        && launched
        && annotations.get(EC2_NODE_CLASS_HASH_VERSION_ANNOTATION).map(String::as_str)
            != Some(EC2_NODE_CLASS_HASH_VERSION)
    {
        patch.insert(EC2_NODE_CLASS_HASH_VERSION_ANNOTATION.to_owned(), EC2_NODE_CLASS_HASH_VERSION.to_owned());
        if !drifted {
            patch.insert(EC2_NODE_CLASS_HASH_ANNOTATION.to_owned(), ec2_node_class_hash(class));
        }
    }
    (!patch.is_empty()).then_some(patch)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::apis::condition::ConditionStatus;

    fn pool() -> NodePool {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
            "spec": {"template": {"spec": {"requirements": [],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}
        }))
        .expect("pool")
    }

    fn class() -> EC2NodeClass {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
            "spec": {"role": "R", "subnetSelectorTerms": [{"id": "subnet-a"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}], "amiSelectorTerms": [{"alias": "al2023@latest"}]}
        }))
        .expect("class")
    }

    fn claim(annotations: &[(&str, &str)]) -> NodeClaim {
        let mut claim: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "default-x"},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
        }))
        .expect("claim");
        claim.metadata.annotations =
            Some(annotations.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
        claim
    }

    #[test]
    fn current_versions_need_no_restamp() {
        let (pool, class) = (pool(), class());
        let claim = claim(&[
            (NODE_POOL_HASH_ANNOTATION, "old"),
            (NODE_POOL_HASH_VERSION_ANNOTATION, NODE_POOL_HASH_VERSION),
            (EC2_NODE_CLASS_HASH_ANNOTATION, "old"),
            (EC2_NODE_CLASS_HASH_VERSION_ANNOTATION, EC2_NODE_CLASS_HASH_VERSION),
        ]);
        // A differing hash under the current version is drift, not a re-stamp.
        assert_eq!(restamp(&claim, Some(&pool), Some(&class), true), None);
    }

    #[test]
    fn an_old_version_is_restamped_with_the_current_hash() {
        let (pool, class) = (pool(), class());
        let claim = claim(&[
            (NODE_POOL_HASH_ANNOTATION, "old"),
            (NODE_POOL_HASH_VERSION_ANNOTATION, "v2"),
            (EC2_NODE_CLASS_HASH_ANNOTATION, "old"),
            (EC2_NODE_CLASS_HASH_VERSION_ANNOTATION, "v5"),
        ]);
        let patch = restamp(&claim, Some(&pool), Some(&class), true).expect("a re-stamp");
        assert_eq!(patch[NODE_POOL_HASH_VERSION_ANNOTATION], NODE_POOL_HASH_VERSION);
        assert_eq!(patch[NODE_POOL_HASH_ANNOTATION], node_pool_hash(&pool));
        assert_eq!(patch[EC2_NODE_CLASS_HASH_VERSION_ANNOTATION], EC2_NODE_CLASS_HASH_VERSION);
        assert_eq!(patch[EC2_NODE_CLASS_HASH_ANNOTATION], ec2_node_class_hash(&class));
        // Not launched yet: the class hash is stamped by the launch, not here.
        let patch = restamp(&claim, Some(&pool), Some(&class), false).expect("a re-stamp");
        assert!(!patch.contains_key(EC2_NODE_CLASS_HASH_ANNOTATION));
    }

    #[test]
    fn a_drifted_claim_keeps_its_hash_and_stays_drifted() {
        let mut claim = claim(&[(NODE_POOL_HASH_ANNOTATION, "old"), (NODE_POOL_HASH_VERSION_ANNOTATION, "v2")]);
        let now = Time(jiff::Timestamp::from_second(1_000).unwrap());
        claim.set_condition(CONDITION_DRIFTED, ConditionStatus::True, "NodePoolDrifted", "NodePoolDrifted", &now);
        let patch = restamp(&claim, Some(&pool()), None, true).expect("a re-stamp");
        assert_eq!(patch.len(), 1);
        assert_eq!(patch[NODE_POOL_HASH_VERSION_ANNOTATION], NODE_POOL_HASH_VERSION);
    }

    #[test]
    fn owners_are_annotated_with_hash_and_version() {
        let pool = pool();
        let wanted = node_pool_annotations(&pool);
        assert_eq!(missing(&pool, wanted.clone()), Some(wanted.clone()));
        let mut stamped = pool.clone();
        stamped.metadata.annotations = Some(wanted.clone());
        assert_eq!(missing(&stamped, wanted), None);
        let class = class();
        let wanted = node_class_annotations(&class);
        assert_eq!(wanted[EC2_NODE_CLASS_HASH_VERSION_ANNOTATION], EC2_NODE_CLASS_HASH_VERSION);
        assert_eq!(missing(&class, wanted.clone()), Some(wanted));
    }
}
