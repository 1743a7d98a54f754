//! Stamps a planned NodeClaim into the API object core's `NodeClaimTemplate.ToNodeClaim` creates:
//! the pool's template labels and annotations, the pool hash for drift, the narrowed
//! requirements with the instance-type list, requests, taints, an owner reference to the pool
//! and the termination finalizer. Labels: the pool's template labels, `karpenter.sh/nodepool`
//! and the node class label `<group>/<lowercased kind>` = the class's name (core v1.14.1
//! `pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go` l. 80–83,
//! `pkg/apis/v1/labels.go` l. 173 `NodeClassLabelKey`): `karpenter.k8s.aws/ec2nodeclass` for
//! an EC2NodeClass.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::apis::nodeclaim::ResourceRequirements;
use crate::apis::{NodeClaim, NodePool, labels};
use crate::scheduling::PlannedNodeClaim;

/// `karpenter.sh/nodepool-hash`: a stable hash of the pool's template without its requirements
/// (requirement drift is computed semantically), so a template change marks claims drifted.
pub use crate::apis::hash::node_pool_hash;

/// The NodeClaim object for a planned claim of `node_pool`.
pub fn to_node_claim(node_pool: &NodePool, planned: &PlannedNodeClaim) -> NodeClaim {
    let pool_name = node_pool.metadata.name.clone().unwrap_or_default();
    let mut annotations = node_pool.spec.template_annotations();
    annotations.insert(labels::NODE_POOL_HASH_ANNOTATION.into(), node_pool_hash(node_pool));
    annotations.insert(labels::NODE_POOL_HASH_VERSION_ANNOTATION.into(), labels::NODE_POOL_HASH_VERSION.into());
    if planned.min_values_relaxed {
        annotations.insert(labels::NODE_CLAIM_MIN_VALUES_RELAXED_ANNOTATION.into(), "true".into());
    }
    // core nodeclaimtemplate.go l. 129-138: any instance type the claim may use overlaid.
    if planned.instance_type_options.iter().any(|it| it.is_price_overlaid()) {
        annotations.insert(labels::PRICE_OVERLAY_APPLIED_ANNOTATION.into(), "true".into());
    }
    if planned.instance_type_options.iter().any(|it| it.is_capacity_overlaid()) {
        annotations.insert(labels::CAPACITY_OVERLAY_APPLIED_ANNOTATION.into(), "true".into());
    }
    let mut spec = node_pool.node_claim_spec();
    spec.requirements = planned.node_claim_requirements().to_node_selector();
    spec.resources = Some(ResourceRequirements { requests: Some(planned.requests.to_resource_list()) });
    let class = node_pool.node_class_ref();
    let mut claim_labels = node_pool.node_claim_labels();
    claim_labels.insert(labels::node_class_label_key(&class.group, &class.kind), class.name.clone());
    let mut claim = NodeClaim::new("", spec);
    claim.metadata = ObjectMeta {
        generate_name: Some(format!("{pool_name}-")),
        labels: Some(claim_labels),
        annotations: Some(annotations),
        owner_references: node_pool.owner_reference().map(|o| vec![o]),
        finalizers: Some(vec![labels::TERMINATION_FINALIZER.into()]),
        ..ObjectMeta::default()
    };
    claim
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(yaml: &str) -> NodePool {
        serde_saphyr::from_str(yaml).expect("nodepool")
    }

    const POOL: &str = r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default, uid: u-1}
spec:
  template:
    metadata: {labels: {team: a}}
    spec:
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
"#;

    #[test]
    fn node_class_label_key_is_group_and_lowercased_kind() {
        assert_eq!(labels::node_class_label_key("karpenter.k8s.aws", "EC2NodeClass"), labels::EC2_NODE_CLASS_LABEL);
        assert_eq!(
            labels::node_class_label_key("karpenter.kwok.sh", "KWOKNodeClass"),
            "karpenter.kwok.sh/kwoknodeclass"
        );
    }

    #[test]
    fn hash_ignores_requirements_but_not_the_rest_of_the_template() {
        let a = pool(POOL);
        let mut b = a.clone();
        b.spec.template.spec.requirements.clear();
        assert_eq!(node_pool_hash(&a), node_pool_hash(&b));
        let mut c = a.clone();
        c.spec.template.spec.expire_after = Some(crate::apis::NillableDuration::parse("24h").expect("duration"));
        assert_ne!(node_pool_hash(&a), node_pool_hash(&c));
        assert_eq!(node_pool_hash(&a).len(), 16);
    }

    #[test]
    fn claim_carries_pool_labels_owner_finalizer_and_requests() {
        let np = pool(POOL);
        let planned = PlannedNodeClaim {
            node_pool: "default".into(),
            hostname_placeholder: "hostname-placeholder-0001".into(),
            requirements: crate::scheduling::Requirements::from_node_selector(&np.spec.template.spec.requirements),
            instance_type_options: crate::cloudprovider::fake::instance_types(3),
            pods: vec!["default/a".into()],
            requests: crate::scheduling::Resources::cpu_memory(1500, 1 << 30),
            min_values_relaxed: false,
        };
        let claim = to_node_claim(&np, &planned);
        assert_eq!(claim.metadata.generate_name.as_deref(), Some("default-"));
        let labels = claim.metadata.labels.clone().unwrap();
        assert_eq!(labels["karpenter.sh/nodepool"], "default");
        assert_eq!(labels["team"], "a");
        assert_eq!(
            labels["karpenter.k8s.aws/ec2nodeclass"], "default",
            "the node class label (core nodeclaimtemplate.go l. 82)"
        );
        assert_eq!(labels.len(), 3, "{labels:?}");
        assert_eq!(claim.metadata.finalizers.as_deref(), Some(&["karpenter.sh/termination".to_string()][..]));
        assert_eq!(claim.metadata.owner_references.as_ref().unwrap()[0].uid, "u-1");
        assert!(claim.spec.requirements.iter().any(|r| r.key == "node.kubernetes.io/instance-type"));
        let requests = claim.spec.resources.as_ref().unwrap().requests.as_ref().unwrap();
        assert_eq!(requests["cpu"].as_text(), "1500m");
    }
}
