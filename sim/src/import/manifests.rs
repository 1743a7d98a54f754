//! NodePools and EC2NodeClasses go into `manifests:` as the user wrote them: the fields the
//! API server and the controller populate are stripped (status, uid, resourceVersion,
//! generation, creationTimestamp, managedFields, the last-applied annotation, Karpenter's
//! hash annotations and the EC2NodeClass termination finalizer), and nothing else changes,
//! except what the simulated cloud cannot match (each change listed):
//!
//! - subnet and security-group selector terms: the simulated cloud's subnets and groups
//!   are tagged `karpenter.sh/discovery: dovetail`, so terms naming a real cluster's
//!   tags or ids select nothing; they become that tag;
//! - AMI selector terms: the simulated cloud publishes only the EKS AL2023 AMIs, so any
//!   other alias or id becomes `al2023@latest` (and the family-specific `userData` is
//!   dropped with it).

use serde_json::{Value, json};

use super::findings::{Class, Findings};

/// The cluster name the simulated cloud tags its subnets and security groups with.
pub const SIM_CLUSTER: &str = "dovetail";

const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

const SERVER_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    "karpenter.sh/nodepool-hash",
    "karpenter.sh/nodepool-hash-version",
    "karpenter.k8s.aws/ec2nodeclass-hash",
    "karpenter.k8s.aws/ec2nodeclass-hash-version",
];

const SERVER_FINALIZERS: &[&str] = &["karpenter.k8s.aws/termination"];

/// Strips what the server populated (module docs).
pub fn strip(object: &mut Value) {
    if let Some(m) = object.as_object_mut() {
        m.remove("status");
    }
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    for k in SERVER_METADATA {
        meta.remove(*k);
    }
    if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        for k in SERVER_ANNOTATIONS {
            a.remove(*k);
        }
    }
    if meta.get("annotations").is_some_and(|a| a.is_null() || a.as_object().is_some_and(serde_json::Map::is_empty)) {
        meta.remove("annotations");
    }
    if let Some(f) = meta.get_mut("finalizers").and_then(Value::as_array_mut) {
        f.retain(|x| !x.as_str().is_some_and(|s| SERVER_FINALIZERS.contains(&s)));
    }
    if meta.get("finalizers").is_some_and(|f| f.as_array().is_some_and(Vec::is_empty)) {
        meta.remove("finalizers");
    }
}

/// Points an EC2NodeClass at what the simulated cloud has (module docs).
pub fn fit_to_cloud(node_class: &mut Value, object: &str, findings: &mut Findings) {
    let Some(spec) = node_class.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let discovery = json!([{"tags": {"karpenter.sh/discovery": SIM_CLUSTER}}]);
    for field in ["subnetSelectorTerms", "securityGroupSelectorTerms"] {
        if spec.get(field) != Some(&discovery) {
            let was = spec.get(field).map_or_else(|| "unset".to_string(), compact);
            findings.push(
                Class::Changed,
                object,
                format!("spec.{field}"),
                format!("{was} became [{{tags: {{karpenter.sh/discovery: {SIM_CLUSTER}}}}}]"),
            );
            spec.insert(field.into(), discovery.clone());
        }
    }
    let al2023 = spec.get("amiSelectorTerms").and_then(Value::as_array).is_some_and(|terms| {
        !terms.is_empty()
            && terms.iter().all(|t| t.get("alias").and_then(Value::as_str).is_some_and(|a| a.starts_with("al2023@")))
    });
    if !al2023 {
        let was = spec.get("amiSelectorTerms").map_or_else(|| "unset".to_string(), compact);
        findings.push(
            Class::Changed,
            object,
            "spec.amiSelectorTerms",
            format!("{was} became [{{alias: al2023@latest}}]: the simulated cloud has only the EKS AL2023 AMIs"),
        );
        spec.insert("amiSelectorTerms".into(), json!([{"alias": "al2023@latest"}]));
        if spec.remove("userData").is_some() {
            findings.push(Class::Changed, object, "spec.userData", "dropped with the AMI family it was written for");
        }
        if spec.remove("amiFamily").is_some() {
            findings.push(Class::Changed, object, "spec.amiFamily", "dropped: the alias sets the family");
        }
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_server_fields_and_keeps_the_rest() {
        let mut np = json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "9", "generation": 2, "creationTimestamp": "t",
                "managedFields": [], "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "karpenter.sh/nodepool-hash": "1", "team": "x"}},
            "spec": {"limits": {"cpu": "10"}}, "status": {"resources": {}},
        });
        strip(&mut np);
        assert_eq!(
            np,
            json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "a", "annotations": {"team": "x"}}, "spec": {"limits": {"cpu": "10"}}})
        );
    }

    #[test]
    fn node_classes_are_pointed_at_the_simulated_cloud_and_each_change_listed() {
        let mut nc = json!({"spec": {"subnetSelectorTerms": [{"id": "subnet-1"}], "amiSelectorTerms": [{"alias": "bottlerocket@latest"}], "userData": "[settings]"}});
        let mut f = Findings::default();
        fit_to_cloud(&mut nc, "EC2NodeClass/x", &mut f);
        assert_eq!(nc["spec"]["amiSelectorTerms"], json!([{"alias": "al2023@latest"}]));
        assert!(nc["spec"].get("userData").is_none());
        assert_eq!(f.all.len(), 4, "{f:?}");
        let mut again = nc.clone();
        let mut g = Findings::default();
        fit_to_cloud(&mut again, "EC2NodeClass/x", &mut g);
        assert!(g.all.is_empty(), "a fitted class is left alone: {g:?}");
    }
}
