//! The unmodified Karpenter CRDs, admitted the way EKS admits them: every example manifest
//! passes (with defaults applied), invalid ones fail on the field and with the message a real
//! apiserver gives, unknown fields are pruned, and every CEL rule is evaluated.

use dovetail_sim::apiserver::schema::{
    CrdSchema, FieldErrorKind, Rejection, RuleResult, invalid_status,
};
use serde_json::{Value, json};

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/crds");
const EXAMPLES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/data/karpenter-examples"
);

fn read_yaml(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn crd(file: &str) -> CrdSchema {
    let docs = read_yaml(&format!("{CRDS}/{file}"));
    let served = docs[0]["spec"]["versions"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["storage"] == json!(true)))
        .and_then(|v| v["name"].as_str())
        .expect("a storage version")
        .to_string();
    CrdSchema::compile(&docs[0], &served).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn node_pools() -> CrdSchema {
    crd("karpenter.sh_nodepools.yaml")
}

fn node_classes() -> CrdSchema {
    crd("karpenter.k8s.aws_ec2nodeclasses.yaml")
}

fn examples() -> Vec<(String, Value)> {
    let mut files: Vec<_> = std::fs::read_dir(EXAMPLES)
        .expect("examples dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        for doc in read_yaml(f.to_str().unwrap()) {
            out.push((name.clone(), doc));
        }
    }
    out
}

#[test]
fn every_karpenter_crd_compiles() {
    for file in [
        "karpenter.sh_nodepools.yaml",
        "karpenter.sh_nodeclaims.yaml",
        "karpenter.k8s.aws_ec2nodeclasses.yaml",
        "karpenter.sh_nodeoverlays.yaml",
        "upstream-core/karpenter.sh_nodepools.yaml",
        "upstream-core/karpenter.sh_nodeclaims.yaml",
    ] {
        let schema = crd(file);
        let sites = schema.rule_sites();
        println!("{file}: {} rules", sites.len());
        for (at, rule) in &sites {
            println!("  {at}: {rule}");
        }
        assert!(!sites.is_empty());
    }
}

#[test]
fn every_example_manifest_is_admitted() {
    let pools = node_pools();
    let classes = node_classes();
    for (file, mut doc) in examples() {
        let schema = match doc["kind"].as_str() {
            Some("NodePool") => &pools,
            Some("EC2NodeClass") => &classes,
            other => panic!("{file}: unexpected kind {other:?}"),
        };
        if let Err(e) = schema.admit(&mut doc, None, true) {
            panic!("{file}: {e:?}");
        }
    }
}

/// A valid NodePool (Karpenter's general-purpose example).
fn pool() -> Value {
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {"spec": {
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
            }},
            "limits": {"cpu": 1000}
        }
    })
}

/// A valid EC2NodeClass (Karpenter's general-purpose example).
fn class() -> Value {
    json!({
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}]
        }
    })
}

/// Sets `pointer` in `v` (creating objects on the way), or removes it when `new` is `None`.
fn edit(mut v: Value, pointer: &str, new: Option<Value>) -> Value {
    let (parent, last) = pointer.rsplit_once('/').expect("pointer");
    let target = v
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent}"));
    match (target, new) {
        (Value::Object(m), Some(n)) => {
            m.insert(last.to_string(), n);
        }
        (Value::Object(m), None) => {
            m.shift_remove(last);
        }
        (Value::Array(a), Some(n)) => a[last.parse::<usize>().expect("index")] = n,
        (Value::Array(a), None) => {
            a.remove(last.parse::<usize>().expect("index"));
        }
        (other, _) => panic!("cannot edit {other}"),
    }
    v
}

fn rejected(
    schema: &CrdSchema,
    mut obj: Value,
) -> Vec<dovetail_sim::apiserver::schema::FieldError> {
    match schema.admit(&mut obj, None, false) {
        Ok(a) => panic!("admitted: {a:?}\n{obj:#}"),
        Err(Rejection::Invalid(errors)) => errors,
        Err(other) => panic!("wrong rejection {other:?}"),
    }
}

const REQS: &str = "/spec/template/spec/requirements";

#[test]
fn invalid_node_pools_are_rejected_on_the_right_field() {
    let pools = node_pools();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "bad operator",
            edit(pool(), &format!("{REQS}/0/operator"), Some(json!("Foo"))),
            r#"spec.template.spec.requirements[0].operator: Unsupported value: "Foo": supported values: "Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt""#,
        ),
        (
            "In with no values",
            edit(pool(), &format!("{REQS}/0/values"), Some(json!([]))),
            r#"spec.template.spec.requirements: Invalid value: "array": requirements with operator 'In' must have a value defined"#,
        ),
        (
            "minValues above the number of values",
            edit(pool(), &format!("{REQS}/1/minValues"), Some(json!(4))),
            r#"spec.template.spec.requirements: Invalid value: "array": requirements with 'minValues' must have at least that many values specified in the 'values' field"#,
        ),
        (
            "Gt with two values",
            edit(pool(), &format!("{REQS}/2/values"), Some(json!(["2", "3"]))),
            r#"spec.template.spec.requirements: Invalid value: "array": requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"#,
        ),
        (
            "restricted label karpenter.sh/nodepool in requirements",
            edit(
                pool(),
                &format!("{REQS}/0/key"),
                Some(json!("karpenter.sh/nodepool")),
            ),
            r#"spec.template.spec.requirements[0].key: Invalid value: "string": label "karpenter.sh/nodepool" is restricted"#,
        ),
        (
            "restricted karpenter.sh label domain in template labels",
            edit(
                pool(),
                "/spec/template/metadata",
                Some(json!({"labels": {"karpenter.sh/custom": "x"}})),
            ),
            r#"spec.template.metadata.labels: Invalid value: "object": label domain "karpenter.sh" is restricted"#,
        ),
        (
            "restricted karpenter.k8s.aws label domain (AWS provider rule)",
            edit(
                pool(),
                &format!("{REQS}/0/key"),
                Some(json!("karpenter.k8s.aws/unknown")),
            ),
            r#"spec.template.spec.requirements[0].key: Invalid value: "string": label domain "karpenter.k8s.aws" is restricted"#,
        ),
        (
            "bad budget nodes",
            edit(
                pool(),
                "/spec/disruption",
                Some(json!({"consolidateAfter": "0s", "budgets": [{"nodes": "abc"}]})),
            ),
            r#"spec.disruption.budgets[0].nodes: Invalid value: "abc": spec.disruption.budgets[0].nodes in body should match '^((100|[0-9]{1,2})%|[0-9]+)$'"#,
        ),
        (
            "budget schedule without duration",
            edit(
                pool(),
                "/spec/disruption",
                Some(
                    json!({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "@daily"}]}),
                ),
            ),
            r#"spec.disruption.budgets: Invalid value: "array": 'schedule' must be set with 'duration'"#,
        ),
        (
            "bad consolidateAfter",
            edit(
                pool(),
                "/spec/disruption",
                Some(json!({"consolidateAfter": "5 minutes"})),
            ),
            r#"spec.disruption.consolidateAfter: Invalid value: "5 minutes": spec.disruption.consolidateAfter in body should match '^(([0-9]+(s|m|h))+|Never)$'"#,
        ),
        (
            "bad consolidationPolicy",
            edit(
                pool(),
                "/spec/disruption",
                Some(json!({"consolidateAfter": "0s", "consolidationPolicy": "Always"})),
            ),
            r#"spec.disruption.consolidationPolicy: Unsupported value: "Always": supported values: "WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced""#,
        ),
        (
            "disruption without consolidateAfter",
            edit(
                pool(),
                "/spec/disruption",
                Some(json!({"consolidationPolicy": "WhenEmpty"})),
            ),
            "spec.disruption.consolidateAfter: Required value",
        ),
        (
            "missing nodeClassRef",
            edit(pool(), "/spec/template/spec/nodeClassRef", None),
            "spec.template.spec.nodeClassRef: Required value",
        ),
        (
            "empty nodeClassRef name",
            edit(
                pool(),
                "/spec/template/spec/nodeClassRef/name",
                Some(json!("")),
            ),
            r#"spec.template.spec.nodeClassRef.name: Invalid value: "string": name may not be empty"#,
        ),
        (
            "weight above 100",
            edit(pool(), "/spec/weight", Some(json!(101))),
            "spec.weight: Invalid value: 101: spec.weight in body should be less than or equal to 100",
        ),
        (
            "weight of the wrong type",
            edit(pool(), "/spec/weight", Some(json!("heavy"))),
            r#"spec.weight: Invalid value: "string": spec.weight in body must be of type integer: "string""#,
        ),
        (
            "limit that is not a quantity",
            edit(pool(), "/spec/limits/cpu", Some(json!("lots"))),
            r#"spec.limits.cpu: Invalid value: "lots": spec.limits.cpu in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'"#,
        ),
        (
            "static NodePool with weight",
            edit(
                edit(
                    edit(pool(), "/spec/replicas", Some(json!(3))),
                    "/spec/weight",
                    Some(json!(10)),
                ),
                "/spec/limits",
                None,
            ),
            r#"spec: Invalid value: "object": 'weight' is not supported on static NodePools"#,
        ),
        (
            "name that is not a DNS subdomain",
            edit(pool(), "/metadata/name", Some(json!("Default_Pool"))),
            r#"metadata.name: Invalid value: "Default_Pool": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
        ),
        (
            "namespace on a cluster-scoped resource",
            edit(pool(), "/metadata/namespace", Some(json!("default"))),
            "metadata.namespace: Forbidden: not allowed on this type",
        ),
    ];
    let mut failures = Vec::new();
    for (what, obj, expected) in cases {
        let errors = rejected(&pools, obj);
        if std::env::var_os("SHOW_ERRORS").is_some() {
            println!(
                "{what}: {:#?}",
                errors.iter().map(|e| &e.message).collect::<Vec<_>>()
            );
        }
        if errors[0].message != expected {
            failures.push(format!(
                "{what}:\n  expected {expected}\n  got      {:?}",
                errors.iter().map(|e| &e.message).collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_ec2_node_classes_are_rejected_on_the_right_field() {
    let classes = node_classes();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "amiSelectorTerms alias mixed with id",
            edit(
                class(),
                "/spec/amiSelectorTerms/0/id",
                Some(json!("ami-123")),
            ),
            r#"spec.amiSelectorTerms: Invalid value: "array": 'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"#,
        ),
        (
            "alias together with a second term",
            class().pipe_push("/spec/amiSelectorTerms", json!({"id": "ami-123"})),
            r#"spec.amiSelectorTerms: Invalid value: "array": 'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"#,
        ),
        (
            "missing role and instanceProfile",
            edit(class(), "/spec/role", None),
            r#"spec: Invalid value: "object": must specify exactly one of ['role', 'instanceProfile']"#,
        ),
        (
            "both role and instanceProfile",
            edit(class(), "/spec/instanceProfile", Some(json!("profile"))),
            r#"spec: Invalid value: "object": must specify exactly one of ['role', 'instanceProfile']"#,
        ),
        (
            "unknown AMI family in alias",
            edit(
                class(),
                "/spec/amiSelectorTerms/0/alias",
                Some(json!("ubuntu@latest")),
            ),
            r#"spec.amiSelectorTerms[0].alias: Invalid value: "string": family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"#,
        ),
        (
            "empty subnetSelectorTerms",
            edit(class(), "/spec/subnetSelectorTerms", Some(json!([]))),
            r#"spec.subnetSelectorTerms: Invalid value: "array": subnetSelectorTerms cannot be empty"#,
        ),
        (
            "bad httpTokens",
            edit(
                class(),
                "/spec/metadataOptions",
                Some(json!({"httpTokens": "sometimes"})),
            ),
            r#"spec.metadataOptions.httpTokens: Unsupported value: "sometimes": supported values: "required", "optional""#,
        ),
        (
            "hop limit above 64",
            edit(
                class(),
                "/spec/metadataOptions",
                Some(json!({"httpPutResponseHopLimit": 65})),
            ),
            "spec.metadataOptions.httpPutResponseHopLimit: Invalid value: 65: spec.metadataOptions.httpPutResponseHopLimit in body should be less than or equal to 64",
        ),
        (
            "restricted tag",
            edit(
                class(),
                "/spec/tags",
                Some(json!({"kubernetes.io/cluster/demo": "owned"})),
            ),
            r#"spec.tags: Invalid value: "object": tag contains a restricted tag matching kubernetes.io/cluster/"#,
        ),
        (
            "two root volumes",
            edit(
                class(),
                "/spec/blockDeviceMappings",
                Some(json!([
                    {"deviceName": "/dev/xvda", "rootVolume": true, "ebs": {"volumeSize": "20Gi"}},
                    {"deviceName": "/dev/xvdb", "rootVolume": true, "ebs": {"volumeSize": "20Gi"}}
                ])),
            ),
            r#"spec.blockDeviceMappings: Invalid value: "array": must have only one blockDeviceMappings with rootVolume"#,
        ),
    ];
    let mut failures = Vec::new();
    for (what, obj, expected) in cases {
        let errors = rejected(&classes, obj);
        if std::env::var_os("SHOW_ERRORS").is_some() {
            println!(
                "{what}: {:#?}",
                errors.iter().map(|e| &e.message).collect::<Vec<_>>()
            );
        }
        if errors[0].message != expected {
            failures.push(format!(
                "{what}:\n  expected {expected}\n  got      {:?}",
                errors.iter().map(|e| &e.message).collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

trait PipePush {
    fn pipe_push(self, pointer: &str, item: Value) -> Value;
}

impl PipePush for Value {
    fn pipe_push(mut self, pointer: &str, item: Value) -> Value {
        self.pointer_mut(pointer)
            .and_then(Value::as_array_mut)
            .expect("array")
            .push(item);
        self
    }
}
