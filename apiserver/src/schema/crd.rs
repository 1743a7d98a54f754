//! Checks on a CustomResourceDefinition manifest itself, a subset of apiextensions-apiserver's
//! `ValidateCustomResourceDefinition`: enough that a broken CRD is refused instead of serving a
//! resource nobody can validate.

use serde_json::Value;

use super::default;
use super::node::{Additional, Node, Ty};
use super::path;
use super::prune;
use super::validate;

/// The parts of a CRD admission needs, for one version.
#[derive(Debug)]
pub(crate) struct CrdParts {
    pub(crate) name: String,
    pub(crate) group: String,
    pub(crate) kind: String,
    pub(crate) plural: String,
    pub(crate) namespaced: bool,
    pub(crate) status_subresource: bool,
    pub(crate) root: Node,
}

/// Result of reading a CRD: its parts for `version`, or every problem found.
pub(crate) enum Read {
    Ok(Box<CrdParts>),
    Invalid { name: String, problems: Vec<String> },
    VersionNotServed { name: String },
}

fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// Reads and checks `crd`, returning the compiled parts for `version`.
pub(crate) fn read(crd: &Value, version: &str) -> Read {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let name = text(crd.pointer("/metadata/name"));
    let mut problems = Vec::new();
    if text(crd.get("apiVersion")) != "apiextensions.k8s.io/v1" {
        problems.push(format!(
            "apiVersion: Unsupported value: {:?}: supported values: \"apiextensions.k8s.io/v1\"",
            text(crd.get("apiVersion"))
        ));
    }
    if text(crd.get("kind")) != "CustomResourceDefinition" {
        problems.push(format!(
            "kind: Unsupported value: {:?}: supported values: \"CustomResourceDefinition\"",
            text(crd.get("kind"))
        ));
    }
    let group = text(crd.pointer("/spec/group"));
    if group.is_empty() {
        problems.push("spec.group: Required value".to_string());
    } else if !is_dns1123_subdomain(&group) || !group.contains('.') {
        problems.push(format!("spec.group: Invalid value: {group:?}: should be a domain with at least one dot"));
    }
    let plural = text(crd.pointer("/spec/names/plural"));
    if plural.is_empty() {
        problems.push("spec.names.plural: Required value".to_string());
    } else if !is_dns1035_label(&plural) {
        problems.push(format!("spec.names.plural: Invalid value: {plural:?}: must be a DNS-1035 label"));
    }
    let kind = text(crd.pointer("/spec/names/kind"));
    if kind.is_empty() {
        problems.push("spec.names.kind: Required value".to_string());
    } else if !kind.starts_with(|c: char| c.is_ascii_alphabetic()) || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        problems.push(format!(
            "spec.names.kind: Invalid value: {kind:?}: must be an alphanumeric name starting with a letter"
        ));
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        problems.push(format!("metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"));
    }
    let scope = text(crd.pointer("/spec/scope"));
    if scope != "Cluster" && scope != "Namespaced" {
        problems
            .push(format!("spec.scope: Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""));
    }
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    if versions.is_empty() {
        problems.push(
            "spec.versions: Invalid value: []: must have exactly one version marked as storage version".to_string(),
        );
    }
    let mut storage = 0;
    let mut names: Vec<String> = Vec::new();
    let mut selected = None;
    for (i, v) in versions.iter().enumerate() {
        let at = path::index("spec.versions", i);
        let vname = text(v.get("name"));
        if !is_dns1035_label(&vname) {
            problems.push(format!("{at}.name: Invalid value: {vname:?}: must be a DNS-1035 label"));
        }
        if names.contains(&vname) {
            problems.push(format!("{at}.name: Duplicate value: {vname:?}"));
        }
        names.push(vname.clone());
        let flag = |k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
        if flag("storage") {
            storage += 1;
        }
        let schema_at = format!("{at}.schema.openAPIV3Schema");
        let Some(schema) = v.pointer("/schema/openAPIV3Schema") else {
            problems.push(format!("{schema_at}: Required value: schemas are required"));
            continue;
        };
        let root = Node::parse(schema, &schema_at, &mut problems);
        check_defaults(&root, &schema_at, &mut problems);
        if root.ty != Some(Ty::Object) {
            problems.push(format!(
                "{schema_at}.type: Unsupported value: {:?}: supported values: \"object\"",
                root.type_name()
            ));
        }
        if vname == version && flag("served") {
            selected = Some((root, v.pointer("/subresources/status").is_some()));
        }
    }
    if !versions.is_empty() && storage != 1 {
        problems.push(format!(
            "spec.versions: Invalid value: {storage}: must have exactly one version marked as storage version"
        ));
    }
    if !problems.is_empty() {
        return Read::Invalid { name, problems };
    }
    match selected {
        Some((root, status_subresource)) => Read::Ok(Box::new(CrdParts {
            name,
            group,
            kind,
            plural,
            namespaced: scope == "Namespaced",
            status_subresource,
            root,
        })),
        None => Read::VersionNotServed { name },
    }
}

/// The apiserver refuses a CRD whose `default`s would not survive admission: each default, with
/// nested defaults applied, must be pruned already and must validate against its own schema.
fn check_defaults(node: &Node, at: &str, problems: &mut Vec<String>) {
    if let Some(d) = &node.default {
        let at_default = path::child(at, "default");
        let mut value = d.clone();
        let pruned = prune::prune_value(node, &mut value, "");
        if !pruned.is_empty() {
            problems
                .push(format!("{at_default}: Invalid value: {d}: must not have unknown fields: {}", pruned.join(", ")));
        }
        default::apply(node, &mut value);
        let mut errs = Vec::new();
        validate::validate(node, &value, None, "", &mut errs);
        for e in errs {
            problems.push(format!("{at_default}: Invalid value: {d}: {}", e.message));
        }
    }
    for (name, child) in &node.properties {
        check_defaults(child, &path::child(at, &format!("properties[{name}]")), problems);
    }
    if let Additional::Schema(child) = &node.additional {
        check_defaults(child, &path::child(at, "additionalProperties"), problems);
    }
    if let Some(items) = &node.items {
        check_defaults(items, &path::child(at, "items"), problems);
    }
}
