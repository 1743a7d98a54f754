//! Our types carry every property of the upstream CRD schemas (`shared/data/crds/*.yaml`).
//!
//! For each CRD, a "maximal" object is built from its `openAPIV3Schema`: every property, array
//! item and map entry filled with a value the schema admits. It must deserialize into our type
//! and serialize back identical; any property path our type would drop fails the test by name.
//! Independently, the JSON schema kube-derive generates for our type (`CustomResourceExt::crd()`)
//! must list every upstream property path, and the CRD names, group, version and scope must match.

mod common;

use std::collections::BTreeSet;

use dovetail_controller::apis::manifest::dropped_paths;
use dovetail_controller::apis::{EC2NodeClass, NodeClaim, NodeOverlay, NodePool};
use kube::CustomResourceExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The upstream CRD files and the `(group, kind)` they define.
const CRDS: [(&str, &str); 6] = [
    ("crds/karpenter.sh_nodepools.yaml", "NodePool"),
    ("crds/karpenter.sh_nodeclaims.yaml", "NodeClaim"),
    ("crds/karpenter.k8s.aws_ec2nodeclasses.yaml", "EC2NodeClass"),
    ("crds/karpenter.sh_nodeoverlays.yaml", "NodeOverlay"),
    ("crds/upstream-core/karpenter.sh_nodepools.yaml", "NodePool"),
    ("crds/upstream-core/karpenter.sh_nodeclaims.yaml", "NodeClaim"),
];

fn load_crd(relative: &str) -> Value {
    let documents = common::yaml_documents(&common::read_shared(relative));
    assert_eq!(documents.len(), 1, "{relative}: expected one document");
    documents.into_iter().next().unwrap_or_default()
}

fn served_schema(crd: &Value) -> &Value {
    let versions = crd["spec"]["versions"].as_array().expect("versions");
    assert_eq!(versions.len(), 1, "exactly one served version");
    &versions[0]["schema"]["openAPIV3Schema"]
}

/// Every property path of a schema: `spec.template.spec.requirements[].key`, `spec.limits{}`.
fn schema_paths(schema: &Value, path: &str, out: &mut BTreeSet<String>) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let child = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
            out.insert(child.clone());
            // metadata is ObjectMeta in every kind; upstream declares it as a bare object.
            if child != "metadata" {
                schema_paths(property, &child, out);
            }
        }
    }
    if let Some(items) = schema.get("items") {
        let child = format!("{path}[]");
        out.insert(child.clone());
        schema_paths(items, &child, out);
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let child = format!("{path}{{}}");
        out.insert(child.clone());
        schema_paths(additional, &child, out);
    }
}

/// A value for a string with a `pattern`, chosen to match it (and our typed wrappers).
fn sample_for_pattern(pattern: &str, path: &str) -> Value {
    let sample = match pattern {
        p if p.contains("Never") => "720h",
        p if p.contains("59000)Gi") => "20Gi",
        "^([0-9]+(s|m|h))+$" => "24h",
        p if p.contains("[0-9]+h[0-9]+m") => "8h",
        p if p.contains("100|[0-9]{1,2})%") => "10%",
        p if p.starts_with("^(@(annually") => "@daily",
        "^[^/]*$" => "karpenter.k8s.aws",
        p if p.contains("[KMGTPE]i") && p.contains("100(\\.0{1,2})?)%") => "100Mi",
        p if p.contains("[KMGTPE]i") => "1Gi",
        p if p.starts_with("^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?") => {
            "example.com/key"
        }
        "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$" => "value",
        p if p.starts_with("^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?") => "Ready",
        p if p.starts_with("^[A-Za-z]([A-Za-z0-9_,:]*") || p.starts_with("^([A-Za-z]") => "Ready",
        "ami-[0-9a-z]+" => "ami-0123abcd",
        "sg-[0-9a-z]+" => "sg-0123abcd",
        "subnet-[0-9a-z]+" => "subnet-0123abcd",
        "^cr-[0-9a-z]+$" => "cr-0123abcd",
        "^[0-9]{12}$" => "123456789012",
        "^pg-[0-9a-z]+$" => "pg-0123abcd",
        "^\\d+(\\.\\d+)?$" => "0.25",
        p if p.contains("[+-]{1}") => "-10%",
        other => {
            panic!("{path}: no sample value for pattern {other}; add one to sample_for_pattern")
        }
    };
    json!(sample)
}

/// A value admitted by `schema`, with every property, item and map entry present.
fn maximal(schema: &Value, path: &str) -> Value {
    if path == "metadata" {
        return json!({"name": "maximal", "labels": {"app": "test"}});
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return json!("1");
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut object = serde_json::Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    let child = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                    object.insert(name.clone(), maximal(property, &child));
                }
            }
            if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                // Map keys are validated by CEL only, which deserialization does not run.
                object.insert("example.com/entry".to_owned(), maximal(additional, &format!("{path}{{}}")));
            }
            Value::Object(object)
        }
        Some("array") => json!([maximal(&schema["items"], &format!("{path}[]"))]),
        Some("string") => {
            if schema.get("format").and_then(Value::as_str) == Some("date-time") {
                json!("2024-01-02T03:04:05Z")
            } else if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                sample_for_pattern(pattern, path)
            } else if let Some(default) = schema.get("default") {
                default.clone()
            } else {
                json!(format!("{path}-value"))
            }
        }
        Some("integer") => schema.get("default").or_else(|| schema.get("minimum")).cloned().unwrap_or(json!(1)),
        Some("boolean") => json!(true),
        other => panic!("{path}: unsupported schema type {other:?}"),
    }
}

fn assert_round_trip<T: DeserializeOwned + Serialize>(relative: &str, kind: &str) {
    let crd = load_crd(relative);
    let schema = served_schema(&crd);
    let mut object = maximal(schema, "");
    let group = crd["spec"]["group"].as_str().expect("group");
    let version = crd["spec"]["versions"][0]["name"].as_str().expect("version");
    object["apiVersion"] = json!(format!("{group}/{version}"));
    object["kind"] = json!(kind);

    // Every upstream path is present in the maximal object, so nothing escapes the check below.
    let mut upstream = BTreeSet::new();
    schema_paths(schema, "", &mut upstream);
    let mut filled = BTreeSet::new();
    value_paths(&object, "", &mut filled);
    let unfilled: Vec<&String> = upstream.iter().filter(|p| !filled.contains(*p)).collect();
    assert!(unfilled.is_empty(), "{relative}: maximal object misses {unfilled:?}");

    let typed: T = serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("{relative}: maximal {kind} does not deserialize: {e}"));
    let round_tripped = serde_json::to_value(&typed).expect("serialize");
    let dropped = dropped_paths(&object, &round_tripped);
    assert!(dropped.is_empty(), "{relative}: our {kind} type drops {dropped:?}");
    assert_eq!(round_tripped, object, "{relative}: {kind} changed values on a round trip");
}

/// Paths of a JSON value in the notation of [`schema_paths`] (`[]` for items, `{}` for the
/// synthetic map entry `example.com/entry`).
fn value_paths(value: &Value, path: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                let child_path = if key == "example.com/entry" {
                    format!("{path}{{}}")
                } else if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                out.insert(child_path.clone());
                if child_path != "metadata" {
                    value_paths(child, &child_path, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                let child_path = format!("{path}[]");
                out.insert(child_path.clone());
                value_paths(item, &child_path, out);
            }
        }
        _ => {}
    }
}

#[test]
fn maximal_nodepool_survives_a_round_trip() {
    assert_round_trip::<NodePool>(CRDS[0].0, "NodePool");
    assert_round_trip::<NodePool>(CRDS[4].0, "NodePool");
}

#[test]
fn maximal_nodeclaim_survives_a_round_trip() {
    assert_round_trip::<NodeClaim>(CRDS[1].0, "NodeClaim");
    assert_round_trip::<NodeClaim>(CRDS[5].0, "NodeClaim");
}

#[test]
fn maximal_ec2nodeclass_survives_a_round_trip() {
    assert_round_trip::<EC2NodeClass>(CRDS[2].0, "EC2NodeClass");
}

#[test]
fn maximal_nodeoverlay_survives_a_round_trip() {
    assert_round_trip::<NodeOverlay>(CRDS[3].0, "NodeOverlay");
}

/// Paths of kube-derive's generated schema, resolving `$ref`/`anyOf` wrappers schemars emits.
fn generated_paths(crd: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    schema_paths(served_schema(crd), "", &mut out);
    out
}

fn assert_generated_schema_covers_upstream(generated: Value, relative: &str) {
    let upstream_crd = load_crd(relative);
    let mut upstream = BTreeSet::new();
    schema_paths(served_schema(&upstream_crd), "", &mut upstream);
    // kube-derive leaves the type-meta and ObjectMeta fields to the API server.
    for implicit in ["apiVersion", "kind", "metadata"] {
        upstream.remove(implicit);
    }
    let ours = generated_paths(&generated);
    let missing: Vec<&String> = upstream.difference(&ours).collect();
    assert!(missing.is_empty(), "{relative}: generated schema lacks {missing:?}");
    let extra: Vec<&String> = ours.difference(&upstream).collect();
    assert!(extra.is_empty(), "{relative}: generated schema has fields upstream lacks: {extra:?}");

    for field in ["group", "scope"] {
        assert_eq!(generated["spec"][field], upstream_crd["spec"][field], "{relative}: spec.{field}");
    }
    // kube-derive does not emit `listKind`; the API server derives it as `<kind>List`.
    for field in ["kind", "plural", "singular", "categories", "shortNames"] {
        assert_eq!(
            generated["spec"]["names"][field], upstream_crd["spec"]["names"][field],
            "{relative}: names.{field}"
        );
    }
    assert_eq!(
        generated["spec"]["versions"][0]["name"], upstream_crd["spec"]["versions"][0]["name"],
        "{relative}: version"
    );
    assert_eq!(
        generated["spec"]["versions"][0]["subresources"], upstream_crd["spec"]["versions"][0]["subresources"],
        "{relative}: subresources"
    );
}

#[test]
fn generated_crd_schemas_match_upstream_property_paths() {
    let to_value = |crd| serde_json::to_value(crd).expect("CRD serializes");
    assert_generated_schema_covers_upstream(to_value(NodePool::crd()), CRDS[0].0);
    assert_generated_schema_covers_upstream(to_value(NodeClaim::crd()), CRDS[1].0);
    assert_generated_schema_covers_upstream(to_value(EC2NodeClass::crd()), CRDS[2].0);
    assert_generated_schema_covers_upstream(to_value(NodeOverlay::crd()), CRDS[3].0);
}

#[test]
fn upstream_crd_files_resolve_next_to_the_repository() {
    for (relative, kind) in CRDS {
        let crd = load_crd(relative);
        assert_eq!(crd["kind"], "CustomResourceDefinition", "{relative}");
        assert_eq!(crd["spec"]["names"]["kind"], kind, "{relative}");
    }
}
