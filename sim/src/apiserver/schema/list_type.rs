//! `x-kubernetes-list-type` invariants (apiextensions-apiserver's
//! `ValidateListSetsAndMaps`): a `set` holds each value once, a `map` list holds each
//! combination of `x-kubernetes-list-map-keys` once.

use serde_json::{Map, Value};

use super::error::FieldError;
use super::node::{Additional, ListType, Node};
use super::path;
use super::validate::json_equal;

/// Checks every set and map list under `node`, appending `Duplicate` errors.
pub(crate) fn validate(node: &Node, value: &Value, at: &str, errs: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            for (name, prop) in &node.properties {
                if let Some(v) = map.get(name) {
                    validate(prop, v, &path::child(at, name), errs);
                }
            }
            if let Additional::Schema(child) = &node.additional {
                for (k, v) in map {
                    if !node.properties.contains_key(k) {
                        validate(child, v, &path::key(at, k), errs);
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
                        if items[..i]
                            .iter()
                            .any(|seen| json_equal(&key_of(seen), &key))
                        {
                            errs.push(FieldError::duplicate(&path::index(at, i), key));
                        }
                    }
                }
            }
            if let Some(item_node) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    validate(item_node, item, &path::index(at, i), errs);
                }
            }
        }
        _ => {}
    }
}
