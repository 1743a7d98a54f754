//! Structural defaulting, as apiextensions-apiserver's `structuraldefaulting.Default` does it:
//! a missing property (or a `null` one that is not `nullable`) takes its schema `default`, and
//! defaulting then continues inside what was filled in, so nested defaults of an object that
//! appears are applied too. `null`s of non-nullable fields without a default are dropped
//! (`PruneNonNullableNullsWithoutDefaults`).

use serde_json::Value;

use super::node::{Additional, Node};

/// Applies defaults to `value` in place, then drops non-nullable `null`s without defaults.
pub(crate) fn apply(node: &Node, value: &mut Value) {
    default(node, value);
    drop_nulls(node, value);
}

fn default(node: &Node, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (name, prop) in &node.properties {
                let Some(d) = &prop.default else { continue };
                let missing = match map.get(name) {
                    None => true,
                    Some(Value::Null) => !prop.nullable,
                    Some(_) => false,
                };
                if missing {
                    map.insert(name.clone(), d.clone());
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = node.properties.get(k) {
                    default(prop, v);
                } else if let Additional::Schema(child) = &node.additional {
                    default(child, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                items.iter_mut().for_each(|item| default(item_node, item));
            }
        }
        _ => {}
    }
}

fn drop_nulls(node: &Node, value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, v| match node.properties.get(k) {
                Some(prop) => !(v.is_null() && prop.default.is_none() && !prop.nullable),
                None => true,
            });
            for (k, v) in map.iter_mut() {
                if let Some(prop) = node.properties.get(k) {
                    drop_nulls(prop, v);
                } else if let Additional::Schema(child) = &node.additional {
                    drop_nulls(child, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                items.iter_mut().for_each(|item| drop_nulls(item_node, item));
            }
        }
        _ => {}
    }
}
