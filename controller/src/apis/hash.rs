//! The static-drift hashes (core `NodePool.Hash()`, aws `EC2NodeClass.Hash()`).
//!
//! A NodeClaim is stamped at creation with the hash of its NodePool's template
//! (`karpenter.sh/nodepool-hash`) and, at launch, of its EC2NodeClass
//! (`karpenter.k8s.aws/ec2nodeclass-hash`). When the owner's current hash differs, the claim has
//! statically drifted. Each hash is paired with a version annotation so a change of the hashing
//! scheme itself re-stamps claims instead of drifting every node in the cluster.
//!
//! Karpenter hashes with `hashstructure` (`SlicesAsSets`, `IgnoreZeroValue`, `ZeroNil`); the
//! canonical form here has the same properties: map keys sorted, lists compared as sets, and
//! null, `false`, `0`, `""`, `[]` and `{}` treated as absent, so re-ordering a list or spelling
//! out a default does not drift nodes.

use sha2::{Digest, Sha256};

use super::{EC2NodeClass, NodePool};

/// Spec fields of an EC2NodeClass Karpenter tags `hash:"ignore"`: selector terms are dynamic
/// drift (resolved into status and compared there), `amiFamily` is hashed through its resolved
/// value, and `ipPrefixCount` is not a launch-template input.
pub const EC2_NODE_CLASS_IGNORED_FIELDS: [&str; 7] = [
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "placementGroupSelector",
    "amiSelectorTerms",
    "amiFamily",
    "ipPrefixCount",
];

/// `karpenter.sh/nodepool-hash`: the pool's `spec.template` without `requirements`
/// (requirement drift is computed semantically). Budgets, weight and limits are outside the
/// template, so they never drift nodes.
pub fn node_pool_hash(node_pool: &NodePool) -> String {
    let mut template = serde_json::to_value(&node_pool.spec.template).unwrap_or_default();
    if let Some(spec) = template.get_mut("spec").and_then(|s| s.as_object_mut()) {
        spec.remove("requirements");
    }
    digest(&template)
}

/// `karpenter.k8s.aws/ec2nodeclass-hash`: the spec without the ignored fields, plus the
/// resolved AMI family (so `amiFamily: AL2023` next to an `al2023@latest` alias is no change).
pub fn ec2_node_class_hash(node_class: &EC2NodeClass) -> String {
    let mut spec = serde_json::to_value(&node_class.spec).unwrap_or_default();
    if let Some(fields) = spec.as_object_mut() {
        for ignored in EC2_NODE_CLASS_IGNORED_FIELDS {
            fields.remove(ignored);
        }
    }
    let family = node_class.spec.ami_family().map(|f| f.as_str());
    digest(&serde_json::json!([spec, family]))
}

/// The first 8 bytes of SHA-256 over the canonical form, as 16 hex digits.
fn digest(value: &serde_json::Value) -> String {
    let canonical = canonical(value).unwrap_or_default();
    hex::encode(&Sha256::digest(canonical.as_bytes())[..8])
}

/// The canonical text of a value, or `None` when it counts as absent (a zero value).
fn canonical(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(false) => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Object(map) => {
            let sorted: std::collections::BTreeMap<&String, String> =
                map.iter().filter_map(|(k, v)| Some((k, canonical(v)?))).collect();
            if sorted.is_empty() {
                return None;
            }
            let body: Vec<String> = sorted.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
            Some(format!("{{{}}}", body.join(",")))
        }
        Value::Array(items) => {
            // Slices as sets: order and duplicates do not matter.
            let set: std::collections::BTreeSet<String> =
                items.iter().map(|item| canonical(item).unwrap_or_else(|| "null".to_owned())).collect();
            if set.is_empty() {
                return None;
            }
            Some(format!("[{}]", set.into_iter().collect::<Vec<_>>().join(",")))
        }
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(yaml: &str) -> NodePool {
        serde_saphyr::from_str(yaml).expect("nodepool")
    }

    fn class(yaml: &str) -> EC2NodeClass {
        serde_saphyr::from_str(yaml).expect("ec2nodeclass")
    }

    const POOL: &str = r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {team: a, tier: web}}
    spec:
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoSchedule}]
      expireAfter: 720h
  disruption: {consolidateAfter: 0s, budgets: [{nodes: "10%"}]}
  weight: 10
"#;

    const CLASS: &str = r#"
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  amiSelectorTerms: [{alias: al2023@latest}]
  tags: {team: a}
"#;

    #[test]
    fn pool_hash_ignores_requirements_and_behavioural_fields() {
        let a = pool(POOL);
        let mut b = a.clone();
        b.spec.template.spec.requirements.clear();
        b.spec.weight = Some(50);
        b.spec.disruption = None;
        b.spec.limits = Some([("cpu".to_owned(), serde_json::from_value(serde_json::json!("10")).unwrap())].into());
        assert_eq!(node_pool_hash(&a), node_pool_hash(&b));
        assert_eq!(node_pool_hash(&a).len(), 16);
    }

    #[test]
    fn pool_hash_changes_with_the_template() {
        let a = pool(POOL);
        let mut label = a.clone();
        label.spec.template.metadata.as_mut().unwrap().labels.as_mut().unwrap().insert("team".into(), "b".into());
        let mut expiry = a.clone();
        expiry.spec.template.spec.expire_after = Some(crate::apis::NillableDuration::parse("24h").unwrap());
        let mut class_ref = a.clone();
        class_ref.spec.template.spec.node_class_ref.name = "other".into();
        for changed in [label, expiry, class_ref] {
            assert_ne!(node_pool_hash(&a), node_pool_hash(&changed));
        }
    }

    #[test]
    fn pool_hash_treats_lists_as_sets_and_zero_values_as_absent() {
        let a = pool(POOL);
        let mut reordered = a.clone();
        reordered.spec.template.spec.taints.as_mut().unwrap().reverse();
        assert_eq!(node_pool_hash(&a), node_pool_hash(&reordered));
        let mut no_startup = a.clone();
        no_startup.spec.template.spec.startup_taints = Some(Vec::new());
        assert_eq!(node_pool_hash(&a), node_pool_hash(&no_startup));
    }

    #[test]
    fn class_hash_ignores_selector_terms_but_not_launch_inputs() {
        let a = class(CLASS);
        let mut selectors = a.clone();
        selectors.spec.subnet_selector_terms[0].id = Some("subnet-1".into());
        selectors.spec.security_group_selector_terms[0].name = Some("sg".into());
        selectors.spec.ami_selector_terms[0].alias = Some("al2023@v20260101".into());
        selectors.spec.ip_prefix_count = Some(2);
        assert_eq!(ec2_node_class_hash(&a), ec2_node_class_hash(&selectors));
        let mut tags = a.clone();
        tags.spec.tags.as_mut().unwrap().insert("team".into(), "b".into());
        let mut user_data = a.clone();
        user_data.spec.user_data = Some("echo hi".into());
        let mut role = a.clone();
        role.spec.role = Some("OtherRole".into());
        for changed in [tags, user_data, role] {
            assert_ne!(ec2_node_class_hash(&a), ec2_node_class_hash(&changed));
        }
    }

    #[test]
    fn class_hash_uses_the_resolved_ami_family_and_ignores_defaults_spelled_out() {
        let a = class(CLASS);
        let mut explicit = a.clone();
        explicit.spec.ami_family = Some(crate::apis::AMIFamily::AL2023);
        assert_eq!(ec2_node_class_hash(&a), ec2_node_class_hash(&explicit));
        let mut monitoring_off = a.clone();
        monitoring_off.spec.detailed_monitoring = Some(false);
        assert_eq!(ec2_node_class_hash(&a), ec2_node_class_hash(&monitoring_off));
        let mut bottlerocket = a.clone();
        bottlerocket.spec.ami_selector_terms[0].alias = Some("bottlerocket@latest".into());
        assert_ne!(ec2_node_class_hash(&a), ec2_node_class_hash(&bottlerocket));
    }
}
