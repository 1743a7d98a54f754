//! `x-kubernetes-list-type` invariants (apiextensions-apiserver's
//! `ValidateListSetsAndMaps`): a `set` holds each value once, a `map` list holds each
//! combination of `x-kubernetes-list-map-keys` once.

use serde_json::{Map, Value};

use super::error::FieldError;
use super::node::{Additional, ListType, Node};
use super::path;
use super::validate::{correlate, json_equal};

/// Checks every set and map list under `node`, appending `Duplicate` errors. Like schema
/// validation it ratchets: a list equal to its correlated `old` value is not checked again.
pub(crate) fn validate(node: &Node, value: &Value, old: Option<&Value>, at: &str, errs: &mut Vec<FieldError>) {
    if old.is_some_and(|o| json_equal(o, value)) {
        return;
    }
    match value {
        Value::Object(map) => {
            for (name, prop) in &node.properties {
                if let Some(v) = map.get(name) {
                    validate(prop, v, old.and_then(|o| o.get(name)), &path::child(at, name), errs);
                }
            }
            if let Additional::Schema(child) = &node.additional {
                for (k, v) in map {
                    if !node.properties.contains_key(k) {
                        validate(child, v, old.and_then(|o| o.get(k)), &path::key(at, k), errs);
                    }
                }
            }
        }
        Value::Array(items) => {
            match &node.list_type {
                ListType::Atomic => {}
                ListType::Set => {
                    for (i, item) in items.iter().enumerate() {
                        if items[..i].iter().any(|seen| json_equal(seen, item)) {
                            errs.push(FieldError::duplicate(&path::index(at, i), item.clone()));
                        }
                    }
                }
                ListType::Map(keys) => {
                    let key_of = |item: &Value| -> Value {
                        let mut m = Map::new();
                        for k in keys {
                            if let Some(v) = item.get(k) {
                                m.insert(k.clone(), v.clone());
                            }
                        }
                        Value::Object(m)
                    };
                    for (i, item) in items.iter().enumerate() {
                        let key = key_of(item);
                        if items[..i].iter().any(|seen| json_equal(&key_of(seen), &key)) {
                            errs.push(FieldError::duplicate(&path::index(at, i), key));
                        }
                    }
                }
            }
            if let Some(item_node) = &node.items {
                let old_items = old.and_then(Value::as_array).map(Vec::as_slice);
                for (i, item) in items.iter().enumerate() {
                    let old_item = old_items.and_then(|o| correlate(&node.list_type, item, o));
                    validate(item_node, item, old_item, &path::index(at, i), errs);
                }
            }
        }
        _ => {}
    }
}
