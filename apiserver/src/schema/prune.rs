//! Structural pruning: fields the schema does not know are dropped, silently, as a real
//! apiserver does on every write. The dropped paths are returned so the handler can reject them
//! under `fieldValidation=Strict` or warn under `Warn`.

use serde_json::{Map, Value};

use super::node::{Additional, Node};
use super::path;

/// `metav1.ObjectMeta` JSON fields; anything else under `metadata` is unknown.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes `obj` (a whole custom resource) in place and returns the pruned paths, in document
/// order. `apiVersion`, `kind` and `metadata` are always kept at the root; `metadata` keeps only
/// `ObjectMeta` fields.
pub(crate) fn prune_root(root: &Node, obj: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_embedded(root, obj, "", &mut pruned);
    pruned
}

/// A node that is a whole object (the root, or `x-kubernetes-embedded-resource`).
fn prune_embedded(node: &Node, value: &mut Value, at: &str, pruned: &mut Vec<String>) {
    let Value::Object(map) = value else {
        return;
    };
    if let Some(Value::Object(meta)) = map.get_mut("metadata") {
        let meta_at = path::child(at, "metadata");
        meta.retain(|k, _| {
            let known = OBJECT_META_FIELDS.contains(&k.as_str());
            if !known {
                pruned.push(path::child(&meta_at, k));
            }
            known
        });
    }
    prune_object(node, map, at, pruned, &["apiVersion", "kind", "metadata"]);
}

/// Prunes a value that is not a whole object (a schema `default`), returning the pruned paths.
pub(crate) fn prune_value(node: &Node, value: &mut Value, at: &str) -> Vec<String> {
    let mut pruned = Vec::new();
    prune(node, value, at, &mut pruned);
    pruned
}

fn prune(node: &Node, value: &mut Value, at: &str, pruned: &mut Vec<String>) {
    if node.embedded_resource {
        prune_embedded(node, value, at, pruned);
        return;
    }
    match value {
        Value::Object(map) => prune_object(node, map, at, pruned, &[]),
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for (i, item) in items.iter_mut().enumerate() {
                    prune(item_node, item, &path::index(at, i), pruned);
                }
            }
        }
        _ => {}
    }
}

fn prune_object(node: &Node, map: &mut Map<String, Value>, at: &str, pruned: &mut Vec<String>, keep: &[&str]) {
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        if keep.contains(&k.as_str()) {
            continue;
        }
        let child_at = if node.properties.contains_key(&k) || !matches!(node.additional, Additional::Schema(_)) {
            path::child(at, &k)
        } else {
            path::key(at, &k)
        };
        if let Some(child) = node.properties.get(&k) {
            if let Some(v) = map.get_mut(&k) {
                prune(child, v, &child_at, pruned);
            }
            continue;
        }
        if node.preserve_unknown {
            continue;
        }
        match &node.additional {
            Additional::Any => {}
            Additional::Schema(child) => {
                if let Some(v) = map.get_mut(&k) {
                    prune(child, v, &child_at, pruned);
                }
            }
            Additional::None => {
                map.shift_remove(&k);
                pruned.push(child_at);
            }
        }
    }
}
