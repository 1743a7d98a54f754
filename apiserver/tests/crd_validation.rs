//! The unmodified Karpenter CRDs, admitted the way EKS admits them: every example manifest
//! passes (with defaults applied), invalid ones fail on the field and with the message a real
//! apiserver gives, unknown fields are pruned, and every CEL rule is evaluated.

use dovetail_apiserver::schema::{CrdSchema, FieldErrorKind, Rejection, RuleResult, invalid_status};
use serde_json::{Value, json};

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/crds");
const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/karpenter-examples");

fn read_yaml(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
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

/// Upstream's `windows-custom-userdata.yaml` sets `nodeClassRef.group: karpenter.k8s.aws/v1`,
/// which the CRD's own `pattern: ^[^/]*$` rejects: EKS refuses that document too, so we must.
const UPSTREAM_BROKEN_EXAMPLE: &str = "windows-custom-userdata.yaml";

#[test]
fn every_example_manifest_is_admitted_with_defaults_applied() {
    let pools = node_pools();
    let classes = node_classes();
    let mut admitted = 0;
    for (file, original) in examples() {
        let mut doc = original.clone();
        let kind = doc["kind"].as_str().unwrap_or_default().to_string();
        let schema = match kind.as_str() {
            "NodePool" => &pools,
            "EC2NodeClass" => &classes,
            other => panic!("{file}: unexpected kind {other:?}"),
        };
        let result = schema.admit(&mut doc, None, true);
        if file == UPSTREAM_BROKEN_EXAMPLE && kind == "NodePool" {
            let Err(Rejection::Invalid(errors)) = result else {
                panic!("{file}: the upstream typo must be rejected, got {result:?}");
            };
            assert_eq!(
                errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>(),
                [
                    r#"spec.template.spec.nodeClassRef.group: Invalid value: "karpenter.k8s.aws/v1": spec.template.spec.nodeClassRef.group in body should match '^[^/]*$'"#
                ]
            );
            continue;
        }
        let admitted_doc = result.map(|_| doc).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        admitted += 1;
        let had = |p: &str| original.pointer(p).is_some();
        if kind == "NodePool" {
            let d = &admitted_doc["spec"]["disruption"];
            assert!(d["consolidateAfter"].is_string(), "{file}: consolidateAfter defaulted");
            assert!(d["consolidationPolicy"].is_string(), "{file}: consolidationPolicy defaulted");
            if !had("/spec/disruption/budgets") {
                assert_eq!(d["budgets"], json!([{"nodes": "10%"}]), "{file}: budgets default");
            }
            if !had("/spec/disruption") {
                assert_eq!(d["consolidateAfter"], json!("0s"), "{file}");
                assert_eq!(d["consolidationPolicy"], json!("WhenEmptyOrUnderutilized"), "{file}");
            }
            if !had("/spec/template/spec/expireAfter") {
                assert_eq!(admitted_doc["spec"]["template"]["spec"]["expireAfter"], json!("720h"), "{file}");
            }
        } else if !had("/spec/metadataOptions") {
            assert_eq!(
                admitted_doc["spec"]["metadataOptions"],
                json!({"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1, "httpTokens": "required"}),
                "{file}"
            );
        }
    }
    assert_eq!(admitted, 44, "every other example document is admitted");
}

#[test]
fn nested_defaults_fill_in_partially_given_objects() {
    let classes = node_classes();
    let mut obj = edit(class(), "/spec/metadataOptions", Some(json!({"httpTokens": "optional"})));
    classes.admit(&mut obj, None, true).expect("admitted");
    assert_eq!(
        obj["spec"]["metadataOptions"],
        json!({"httpTokens": "optional", "httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1})
    );
    let pools = node_pools();
    let mut obj = edit(pool(), "/spec/disruption", Some(json!({"consolidateAfter": "1m"})));
    pools.admit(&mut obj, None, true).expect("admitted");
    assert_eq!(
        obj["spec"]["disruption"],
        json!({"consolidateAfter": "1m", "budgets": [{"nodes": "10%"}], "consolidationPolicy": "WhenEmptyOrUnderutilized"})
    );
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
    let target = v.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}"));
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

fn rejected(schema: &CrdSchema, mut obj: Value) -> Vec<dovetail_apiserver::schema::FieldError> {
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
            edit(pool(), &format!("{REQS}/0/key"), Some(json!("karpenter.sh/nodepool"))),
            r#"spec.template.spec.requirements[0].key: Invalid value: "string": label "karpenter.sh/nodepool" is restricted"#,
        ),
        (
            "restricted karpenter.sh label domain in template labels",
            edit(pool(), "/spec/template/metadata", Some(json!({"labels": {"karpenter.sh/custom": "x"}}))),
            r#"spec.template.metadata.labels: Invalid value: "object": label domain "karpenter.sh" is restricted"#,
        ),
        (
            "restricted karpenter.k8s.aws label domain (AWS provider rule)",
            edit(pool(), &format!("{REQS}/0/key"), Some(json!("karpenter.k8s.aws/unknown"))),
            r#"spec.template.spec.requirements[0].key: Invalid value: "string": label domain "karpenter.k8s.aws" is restricted"#,
        ),
        (
            "bad budget nodes",
            edit(pool(), "/spec/disruption", Some(json!({"consolidateAfter": "0s", "budgets": [{"nodes": "abc"}]}))),
            r#"spec.disruption.budgets[0].nodes: Invalid value: "abc": spec.disruption.budgets[0].nodes in body should match '^((100|[0-9]{1,2})%|[0-9]+)$'"#,
        ),
        (
            "budget schedule without duration",
            edit(
                pool(),
                "/spec/disruption",
                Some(json!({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "@daily"}]})),
            ),
            r#"spec.disruption.budgets: Invalid value: "array": 'schedule' must be set with 'duration'"#,
        ),
        (
            "bad consolidateAfter",
            edit(pool(), "/spec/disruption", Some(json!({"consolidateAfter": "5 minutes"}))),
            r#"spec.disruption.consolidateAfter: Invalid value: "5 minutes": spec.disruption.consolidateAfter in body should match '^(([0-9]+(s|m|h))+|Never)$'"#,
        ),
        (
            "bad consolidationPolicy",
            edit(pool(), "/spec/disruption", Some(json!({"consolidateAfter": "0s", "consolidationPolicy": "Always"}))),
            r#"spec.disruption.consolidationPolicy: Unsupported value: "Always": supported values: "WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced""#,
        ),
        (
            "disruption without consolidateAfter",
            edit(pool(), "/spec/disruption", Some(json!({"consolidationPolicy": "WhenEmpty"}))),
            "spec.disruption.consolidateAfter: Required value",
        ),
        (
            "missing nodeClassRef",
            edit(pool(), "/spec/template/spec/nodeClassRef", None),
            "spec.template.spec.nodeClassRef: Required value",
        ),
        (
            "empty nodeClassRef name",
            edit(pool(), "/spec/template/spec/nodeClassRef/name", Some(json!(""))),
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
                edit(edit(pool(), "/spec/replicas", Some(json!(3))), "/spec/weight", Some(json!(10))),
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
            println!("{what}: {:#?}", errors.iter().map(|e| &e.message).collect::<Vec<_>>());
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
            edit(class(), "/spec/amiSelectorTerms/0/id", Some(json!("ami-123"))),
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
            edit(class(), "/spec/amiSelectorTerms/0/alias", Some(json!("ubuntu@latest"))),
            r#"spec.amiSelectorTerms[0].alias: Invalid value: "string": family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"#,
        ),
        (
            "empty subnetSelectorTerms",
            edit(class(), "/spec/subnetSelectorTerms", Some(json!([]))),
            r#"spec.subnetSelectorTerms: Invalid value: "array": subnetSelectorTerms cannot be empty"#,
        ),
        (
            "bad httpTokens",
            edit(class(), "/spec/metadataOptions", Some(json!({"httpTokens": "sometimes"}))),
            r#"spec.metadataOptions.httpTokens: Unsupported value: "sometimes": supported values: "required", "optional""#,
        ),
        (
            "hop limit above 64",
            edit(class(), "/spec/metadataOptions", Some(json!({"httpPutResponseHopLimit": 65}))),
            "spec.metadataOptions.httpPutResponseHopLimit: Invalid value: 65: spec.metadataOptions.httpPutResponseHopLimit in body should be less than or equal to 64",
        ),
        (
            "restricted tag",
            edit(class(), "/spec/tags", Some(json!({"kubernetes.io/cluster/demo": "owned"}))),
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
            println!("{what}: {:#?}", errors.iter().map(|e| &e.message).collect::<Vec<_>>());
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
        self.pointer_mut(pointer).and_then(Value::as_array_mut).expect("array").push(item);
        self
    }
}

/// A value with every property present, one item per list and one entry per map, built from the
/// raw schema, so that every rule finds something to look at.
fn sample(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if schema["x-kubernetes-int-or-string"] == json!(true) {
        return json!("1");
    }
    match schema["type"].as_str() {
        Some("object") => {
            let mut out = serde_json::Map::new();
            if let Some(props) = schema["properties"].as_object() {
                for (k, sub) in props {
                    out.insert(k.clone(), sample(sub));
                }
            }
            if schema["additionalProperties"].is_object() {
                out.insert("key1".into(), sample(&schema["additionalProperties"]));
            }
            Value::Object(out)
        }
        Some("array") => json!([sample(&schema["items"])]),
        Some("string") if schema["format"] == json!("date-time") => json!("2024-01-01T00:00:00Z"),
        Some("string") => json!("1"),
        Some("integer") => schema.get("minimum").cloned().unwrap_or(json!(1)),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        _ => json!({}),
    }
}

/// `spec.list[0].x` → `spec.list[*].x`, to match a rule outcome to its rule site.
fn site_of(field: &str) -> String {
    regex::Regex::new(r"\[[^\]]*\]").expect("regex").replace_all(field, "[*]").into_owned()
}

#[test]
fn every_cel_rule_in_the_karpenter_crds_compiles_and_evaluates() {
    let files = [
        ("karpenter.sh_nodepools.yaml", 20),
        ("karpenter.sh_nodeclaims.yaml", 10),
        ("karpenter.k8s.aws_ec2nodeclasses.yaml", 54),
        ("karpenter.sh_nodeoverlays.yaml", 8),
        ("upstream-core/karpenter.sh_nodepools.yaml", 18),
        ("upstream-core/karpenter.sh_nodeclaims.yaml", 9),
    ];
    let mut not_evaluated = Vec::new();
    let mut total = 0;
    for (file, expected_rules) in files {
        let schema = crd(file);
        let raw = read_yaml(&format!("{CRDS}/{file}")).remove(0);
        let version = raw["spec"]["versions"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["name"] == json!(schema.version())))
            .expect("version")
            .clone();
        let mut obj = sample(&version["schema"]["openAPIV3Schema"]);
        obj["metadata"] = json!({"name": "sample"});
        let sites = schema.rule_sites();
        assert_eq!(sites.len(), expected_rules, "{file}: rule count");
        total += sites.len();
        // Once as a create (plain rules run) and once as a no-op update (transition rules run;
        // plain rules ratchet).
        let mut outcomes = schema.evaluate_rules(&obj, None);
        outcomes.extend(schema.evaluate_rules(&obj, Some(&obj)));
        for (site, rule) in &sites {
            let ran: Vec<&RuleResult> =
                outcomes.iter().filter(|o| &site_of(&o.field) == site && &o.rule == rule).map(|o| &o.result).collect();
            let evaluated = ran.iter().any(|r| matches!(r, RuleResult::Passed | RuleResult::Failed(_)));
            let errored: Vec<_> = ran.iter().filter(|r| matches!(r, RuleResult::Errored(_))).collect();
            if !evaluated || !errored.is_empty() {
                not_evaluated.push(format!("{file} {site}: {rule} -> {ran:?}"));
            }
        }
    }
    assert_eq!(total, 119);
    assert!(not_evaluated.is_empty(), "rules kube-cel did not evaluate:\n{}", not_evaluated.join("\n"));
}

fn admitted(schema: &CrdSchema, mut obj: Value) -> Value {
    schema.admit(&mut obj, None, true).unwrap_or_else(|e| panic!("{e:?}"));
    obj
}

fn update_errors(schema: &CrdSchema, old: &Value, mut new: Value) -> Vec<String> {
    match schema.admit(&mut new, Some(old), true) {
        Ok(_) => Vec::new(),
        Err(Rejection::Invalid(errors)) => errors.into_iter().map(|e| e.message).collect(),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn transition_rules_reject_changes_to_immutable_fields_on_update_only() {
    let pools = node_pools();
    let old = admitted(&pools, pool());
    let changed = edit(old.clone(), "/spec/template/spec/nodeClassRef/group", Some(json!("example.com")));
    assert_eq!(
        update_errors(&pools, &old, changed.clone()),
        [r#"spec.template.spec.nodeClassRef: Invalid value: "object": nodeClassRef.group is immutable"#]
    );
    // The same object is fine on create: transition rules need an old object.
    admitted(&pools, changed);
    // Unchanged updates pass.
    assert!(update_errors(&pools, &old, old.clone()).is_empty());
    // Static <-> dynamic provisioning is a transition rule on spec.
    let made_static = edit(edit(old.clone(), "/spec/replicas", Some(json!(2))), "/spec/limits", None);
    assert_eq!(
        update_errors(&pools, &old, made_static),
        [
            r#"spec: Invalid value: "object": Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"#
        ]
    );

    let claims = crd("karpenter.sh_nodeclaims.yaml");
    let claim = admitted(
        &claims,
        json!({
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "default-abcde"},
            "spec": {
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
            }
        }),
    );
    let resized = edit(claim.clone(), "/spec/requirements/0/values", Some(json!(["arm64"])));
    assert_eq!(update_errors(&claims, &claim, resized), [r#"spec: Invalid value: "object": spec is immutable"#]);
    let relabelled = edit(claim.clone(), "/metadata/labels", Some(json!({"team": "a"})));
    assert!(update_errors(&claims, &claim, relabelled).is_empty(), "metadata is not under the rule");
}

#[test]
fn unknown_fields_are_pruned_and_reported() {
    let pools = node_pools();
    let with_unknown = || {
        let mut obj = edit(pool(), "/spec/template/spec/colour", Some(json!("blue")));
        obj = edit(obj, "/spec/template/spec/requirements/0/weight", Some(json!(3)));
        obj = edit(obj, "/metadata/bogus", Some(json!(true)));
        edit(obj, "/extra", Some(json!({})))
    };
    let mut obj = with_unknown();
    let admitted = pools.admit(&mut obj, None, false).expect("lenient admission");
    assert_eq!(
        admitted.pruned,
        ["metadata.bogus", "spec.template.spec.requirements[0].weight", "spec.template.spec.colour", "extra"]
    );
    assert_eq!(admitted.warnings[0], r#"unknown field "metadata.bogus""#);
    assert!(obj.pointer("/spec/template/spec/colour").is_none());
    assert!(obj.get("extra").is_none());
    assert_eq!(obj["metadata"], json!({"name": "default"}));
    // Map keys (additionalProperties) are data, not unknown fields.
    assert_eq!(obj["spec"]["limits"], json!({"cpu": 1000}));

    let mut obj = with_unknown();
    let Err(rejection) = pools.admit(&mut obj, None, true) else { panic!("strict must reject") };
    let Rejection::UnknownFields(fields) = &rejection else { panic!("{rejection:?}") };
    assert_eq!(fields.len(), 4);
    let status = rejection.status("karpenter.sh", "NodePool", "default");
    assert_eq!(status["code"], json!(400));
    assert_eq!(status["reason"], json!("BadRequest"));
    assert_eq!(
        status["message"],
        json!(
            r#"strict decoding error: unknown field "metadata.bogus", unknown field "spec.template.spec.requirements[0].weight", unknown field "spec.template.spec.colour", unknown field "extra""#
        )
    );
}

#[test]
fn invalid_status_is_the_body_a_real_apiserver_sends() {
    let pools = node_pools();
    let mut obj = edit(pool(), &format!("{REQS}/0/operator"), Some(json!("Foo")));
    obj = edit(obj, "/spec/weight", Some(json!(0)));
    let Err(Rejection::Invalid(errors)) = pools.admit(&mut obj, None, true) else { panic!("rejected") };
    assert_eq!(errors[0].kind, FieldErrorKind::NotSupported);
    assert_eq!(errors[0].bad_value, Some(json!("Foo")));
    let status = invalid_status("karpenter.sh", "NodePool", "default", &errors);
    let skipped = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";
    assert_eq!(
        status,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": format!(
                "NodePool.karpenter.sh \"default\" is invalid: [spec.template.spec.requirements[0].operator: Unsupported value: \"Foo\": supported values: \"Gte\", \"Lte\", \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\", spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1, <nil>: Invalid value: null: {skipped}]"
            ),
            "reason": "Invalid",
            "details": {
                "name": "default",
                "group": "karpenter.sh",
                "kind": "NodePool",
                "causes": [
                    {
                        "reason": "FieldValueNotSupported",
                        "message": "Unsupported value: \"Foo\": supported values: \"Gte\", \"Lte\", \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"",
                        "field": "spec.template.spec.requirements[0].operator"
                    },
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: 0: spec.weight in body should be greater than or equal to 1",
                        "field": "spec.weight"
                    },
                    {"reason": "FieldValueInvalid", "message": format!("Invalid value: null: {skipped}"), "field": "<nil>"}
                ]
            },
            "code": 422
        })
    );
}

#[test]
fn broken_crd_manifests_are_refused() {
    let base = read_yaml(&format!("{CRDS}/karpenter.sh_nodepools.yaml")).remove(0);
    let problems = |crd: Value| match CrdSchema::compile(&crd, "v1") {
        Ok(_) => panic!("compiled a broken CRD"),
        Err(dovetail_apiserver::schema::CrdError::Invalid { problems, .. }) => problems.join("\n"),
        Err(other) => panic!("{other}"),
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            edit(base.clone(), "/spec/versions/0/storage", Some(json!(false))),
            "must have exactly one version marked as storage version",
        ),
        (
            edit(base.clone(), "/spec/versions/0/schema", None),
            "spec.versions[0].schema.openAPIV3Schema: Required value",
        ),
        (edit(base.clone(), "/spec/group", Some(json!("karpenter"))), "should be a domain with at least one dot"),
        (edit(base.clone(), "/spec/names/plural", Some(json!("NodePools"))), "spec.names.plural: Invalid value"),
        (edit(base.clone(), "/spec/names/kind", Some(json!(""))), "spec.names.kind: Required value"),
        (
            edit(base.clone(), "/metadata/name", Some(json!("pools.karpenter.sh"))),
            "must be spec.names.plural+\".\"+spec.group",
        ),
        (
            edit(
                base.clone(),
                "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/weight/pattern",
                Some(json!("(")),
            ),
            "properties[spec].properties[weight].pattern: Invalid value",
        ),
        (
            edit(
                base.clone(),
                "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations",
                Some(json!([{"rule": "self.weight >", "message": "broken"}])),
            ),
            "compilation failed",
        ),
    ];
    for (crd, expected) in cases {
        let got = problems(crd);
        assert!(got.contains(expected), "expected {expected:?} in:\n{got}");
    }
    assert!(matches!(
        CrdSchema::compile(&base, "v2"),
        Err(dovetail_apiserver::schema::CrdError::VersionNotServed { .. })
    ));
}
