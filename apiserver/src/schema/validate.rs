//! Structural OpenAPI v3 value validation with kube-openapi's rules and messages
//! (`<path> in body should match '<pattern>'`, `<path> in body must be of type integer:
//! "string"`), converted to field errors the way apiextensions-apiserver's
//! `kubeOpenAPIResultToFieldErrors` converts them.
//!
//! Per node the checks run in kube-openapi's validator order: type, `allOf`/`anyOf`/`oneOf`/`not`,
//! string, format, number, array (then items), enum, object (then properties in schema order).
//!
//! On update, validation *ratchets* (`CRDValidationRatcheting`, on by default since Kubernetes
//! 1.30 and GA in 1.33): a value equal to its correlated old value is not validated again, so an
//! object stored under an older, looser CRD can still be updated elsewhere. Old values are
//! correlated through object properties, map keys, map-list keys and set-list values; items of
//! atomic lists have no old value.

use serde_json::{Map, Value};

use super::error::{FieldError, go_number, go_quote};
use super::format;
use super::node::{Additional, ListType, Node, Ty};
use super::path;

/// Validates `value` against `node` at path `at`, appending errors. `old` is the correlated old
/// value on update (for ratcheting), `None` on create.
pub(crate) fn validate(node: &Node, value: &Value, old: Option<&Value>, at: &str, errs: &mut Vec<FieldError>) {
    if old.is_some_and(|o| json_equal(o, value)) {
        return;
    }
    if value.is_null() {
        if !node.nullable
            && let Some(ty) = node.ty
        {
            errs.push(type_error(at, ty.name(), "null"));
        }
        return;
    }
    let actual = json_type(value);
    if node.int_or_string {
        if actual != "integer" && actual != "string" {
            errs.push(FieldError::invalid(
                at,
                Value::from(""),
                &format!("{} must validate at least one schema (anyOf)", body(at)),
            ));
            errs.push(type_error(at, "integer", actual));
            return;
        }
    } else if let Some(ty) = node.ty {
        let ok = ty.name() == actual || (ty == Ty::Number && actual == "integer");
        if !ok {
            errs.push(type_error(at, ty.name(), actual));
            return;
        }
    }
    junctors(node, value, old, at, errs);
    match value {
        Value::String(s) => string(node, s, at, errs),
        Value::Number(n) => number(node, n, at, errs),
        Value::Array(items) => array(node, items, old, at, errs),
        _ => {}
    }
    enumeration(node, value, at, errs);
    if let Value::Object(map) = value {
        object(node, map, old, at, errs);
    }
}

/// `<path> in body` (kube-openapi names the location `body`).
fn body(at: &str) -> String {
    format!("{at} in body")
}

/// JSON type as the apiserver sees it after decoding: integral numbers are integers.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.2e18) {
                "integer"
            } else {
                "number"
            }
        }
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_error(at: &str, expected: &str, actual: &str) -> FieldError {
    FieldError::type_invalid(
        at,
        Value::String(actual.to_string()),
        &format!("{} must be of type {expected}: {}", body(at), go_quote(actual)),
    )
}

fn junctors(node: &Node, value: &Value, old: Option<&Value>, at: &str, errs: &mut Vec<FieldError>) {
    let run = |branch: &Node| {
        let mut e = Vec::new();
        validate(branch, value, old, at, &mut e);
        e
    };
    let composite = |errs: &mut Vec<FieldError>, msg: &str| {
        errs.push(FieldError::invalid(at, Value::from(""), &format!("{} {msg}", body(at))));
    };
    if !node.all_of.is_empty() {
        let mut failed = Vec::new();
        for branch in &node.all_of {
            failed.extend(run(branch));
        }
        if !failed.is_empty() {
            composite(errs, "must validate all the schemas (allOf)");
            errs.extend(failed);
        }
    }
    if !node.any_of.is_empty() {
        let results: Vec<Vec<FieldError>> = node.any_of.iter().map(run).collect();
        if results.iter().all(|r| !r.is_empty()) {
            composite(errs, "must validate at least one schema (anyOf)");
            errs.extend(results.into_iter().next().unwrap_or_default());
        }
    }
    if !node.one_of.is_empty() {
        let results: Vec<Vec<FieldError>> = node.one_of.iter().map(run).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let extra =
                if valid == 0 { "Found none valid".to_string() } else { format!("Found {valid} valid alternatives") };
            composite(errs, &format!("must validate one and only one schema (oneOf). {extra}"));
            if valid == 0 {
                errs.extend(results.into_iter().next().unwrap_or_default());
            }
        }
    }
    if let Some(not) = &node.not
        && run(not).is_empty()
    {
        composite(errs, "must not validate the schema (not)");
    }
}

fn string(node: &Node, s: &str, at: &str, errs: &mut Vec<FieldError>) {
    let chars = s.chars().count() as u64;
    let v = || Value::String(s.to_string());
    if let Some(max) = node.max_length
        && chars > max
    {
        errs.push(FieldError::too_long(at, max));
    }
    if let Some(min) = node.min_length
        && chars < min
    {
        errs.push(FieldError::invalid(at, v(), &format!("{} should be at least {min} chars long", body(at))));
    }
    if let Some(p) = &node.pattern
        && !p.is_match(s)
    {
        errs.push(FieldError::invalid(at, v(), &format!("{} should match '{}'", body(at), p.source)));
    }
    if let Some(f) = &node.format
        && !format::is_valid(f, s)
    {
        errs.push(FieldError::type_invalid(at, v(), &format!("{} must be of type {f}: {}", body(at), go_quote(s))));
    }
}

fn number(node: &Node, n: &serde_json::Number, at: &str, errs: &mut Vec<FieldError>) {
    let x = n.as_f64().unwrap_or(f64::NAN);
    let v = || Value::Number(n.clone());
    if let Some(b) = &node.multiple_of
        && b.value != 0.0
        && (x / b.value).fract() != 0.0
    {
        errs.push(FieldError::invalid(
            at,
            v(),
            &format!("{} should be a multiple of {}", body(at), go_number(&b.number)),
        ));
    }
    if let Some(b) = &node.maximum {
        let bad = if b.exclusive { x >= b.value } else { x > b.value };
        if bad {
            let rel = if b.exclusive { "less than" } else { "less than or equal to" };
            errs.push(FieldError::invalid(at, v(), &format!("{} should be {rel} {}", body(at), go_number(&b.number))));
        }
    }
    if let Some(b) = &node.minimum {
        let bad = if b.exclusive { x <= b.value } else { x < b.value };
        if bad {
            let rel = if b.exclusive { "greater than" } else { "greater than or equal to" };
            errs.push(FieldError::invalid(at, v(), &format!("{} should be {rel} {}", body(at), go_number(&b.number))));
        }
    }
}

fn array(node: &Node, items: &[Value], old: Option<&Value>, at: &str, errs: &mut Vec<FieldError>) {
    let len = items.len();
    if let Some(min) = node.min_items
        && (len as u64) < min
    {
        errs.push(FieldError::invalid(at, Value::from(len), &format!("{} should have at least {min} items", body(at))));
    }
    if let Some(max) = node.max_items
        && (len as u64) > max
    {
        errs.push(FieldError::too_many(at, len, max));
    }
    if let Some(item_node) = &node.items {
        let old_items = old.and_then(Value::as_array).map(Vec::as_slice);
        for (i, item) in items.iter().enumerate() {
            let old_item = old_items.and_then(|o| correlate(&node.list_type, item, o));
            validate(item_node, item, old_item, &path::index(at, i), errs);
        }
    }
}

fn enumeration(node: &Node, value: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let Some(allowed) = &node.enum_values else {
        return;
    };
    if allowed.iter().any(|a| json_equal(a, value)) {
        return;
    }
    let supported: Vec<String> = allowed
        .iter()
        .map(|a| match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    errs.push(FieldError::not_supported(at, value.clone(), &supported));
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn object(node: &Node, map: &Map<String, Value>, old: Option<&Value>, at: &str, errs: &mut Vec<FieldError>) {
    let len = map.len();
    if let Some(max) = node.max_properties
        && (len as u64) > max
    {
        errs.push(FieldError::too_many(at, len, max));
    }
    if let Some(min) = node.min_properties
        && (len as u64) < min
    {
        errs.push(FieldError::invalid(
            at,
            Value::from(len),
            &format!("{} should have at least {min} properties", body(at)),
        ));
    }
    for name in &node.required {
        if !map.contains_key(name) {
            errs.push(FieldError::required(&path::child(at, name), ""));
        }
    }
    let is_root = at.is_empty();
    for (name, prop) in &node.properties {
        if let Some(v) = map.get(name) {
            if is_root && name == "metadata" {
                root_metadata(prop, v, errs);
                continue;
            }
            validate(prop, v, old.and_then(|o| o.get(name)), &path::child(at, name), errs);
        }
    }
    if let Additional::Schema(child) = &node.additional {
        for (k, v) in map {
            if !node.properties.contains_key(k) {
                // kube-openapi joins map keys with a dot, unlike CEL's `[key]`.
                validate(child, v, old.and_then(|o| o.get(k)), &path::child(at, k), errs);
            }
        }
    }
}

/// At the root only `metadata.name` and `metadata.generateName` are checked against the schema;
/// the rest of `ObjectMeta` is validated by [`super::metadata`].
fn root_metadata(node: &Node, meta: &Value, errs: &mut Vec<FieldError>) {
    for field in ["name", "generateName"] {
        if let (Some(sub), Some(v)) = (node.properties.get(field), meta.get(field)) {
            validate(sub, v, None, &path::child("metadata", field), errs);
        }
    }
}

/// The old item an apiserver pairs with `item`: same keys in a map list, an equal value in a set
/// list, none in an atomic list.
pub(crate) fn correlate<'a>(list_type: &ListType, item: &Value, old_items: &'a [Value]) -> Option<&'a Value> {
    match list_type {
        ListType::Atomic => None,
        ListType::Set => old_items.iter().find(|o| json_equal(o, item)),
        ListType::Map(keys) => old_items.iter().find(|o| keys.iter().all(|k| o.get(k) == item.get(k))),
    }
}
