//! `ObjectMeta` checks the apiserver makes on every custom resource before its schema:
//! `ValidateObjectMetaAccessor` with `NameIsDNSSubdomain`, namespace against scope, and labels.

use serde_json::Value;

use super::error::FieldError;

/// Apimachinery's `IsDNS1123Subdomain` message.
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// Apimachinery's `IsQualifiedName` name-part message.
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
/// Apimachinery's `IsValidLabelValue` message.
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Validates `obj.metadata` for a custom resource of the given scope.
pub(crate) fn validate(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    let meta = obj.get("metadata");
    let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("");
    let name = text("name");
    let generate_name = text("generateName");
    if name.is_empty() && generate_name.is_empty() {
        errs.push(FieldError::required("metadata.name", "name or generateName is required"));
    }
    if !generate_name.is_empty() {
        let prefix = generate_name.trim_end_matches('-');
        for msg in dns1123_subdomain(prefix) {
            errs.push(FieldError::invalid("metadata.generateName", Value::from(generate_name), &msg));
        }
    }
    if !name.is_empty() {
        for msg in dns1123_subdomain(name) {
            errs.push(FieldError::invalid("metadata.name", Value::from(name), &msg));
        }
    }
    let namespace = text("namespace");
    if namespaced && namespace.is_empty() {
        errs.push(FieldError::required("metadata.namespace", ""));
    } else if !namespaced && !namespace.is_empty() {
        errs.push(FieldError::forbidden("metadata.namespace", "not allowed on this type"));
    }
    if let Some(labels) = meta.and_then(|m| m.get("labels")).and_then(Value::as_object) {
        for (k, v) in labels {
            for msg in qualified_name(k) {
                errs.push(FieldError::invalid("metadata.labels", Value::from(k.as_str()), &msg));
            }
            let value = v.as_str().unwrap_or("");
            for msg in label_value(value) {
                errs.push(FieldError::invalid("metadata.labels", Value::from(value), &msg));
            }
        }
    }
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `IsDNS1123Subdomain`.
fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    if !s.split('.').all(label_ok) {
        out.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    out
}

fn name_part_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

/// `IsQualifiedName`: `[prefix/]name`.
fn qualified_name(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            out.push("prefix part must be non-empty".to_string());
        } else {
            out.extend(dns1123_subdomain(p).into_iter().map(|m| format!("prefix part {m}")));
        }
    }
    if name.is_empty() {
        out.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 characters".to_string());
    } else if !name_part_ok(name) {
        out.push(QUALIFIED_NAME_MSG.to_string());
    }
    out
}

/// `IsValidLabelValue`.
fn label_value(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    if !s.is_empty() && !name_part_ok(s) {
        out.push(LABEL_VALUE_MSG.to_string());
    }
    out
}
