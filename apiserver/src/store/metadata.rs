//! Small edits of an object's type and `metadata` that several verbs share.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::resources::ResourceType;

pub(super) fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"].as_object_mut().expect("metadata was just made an object")
}

pub(super) fn string_set(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

pub(super) fn set_finalizers(obj: &mut Value, f: &BTreeSet<String>) {
    // Keep the client's order for finalizers that remain, append new ones.
    let mut list: Vec<String> = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).filter(|s| f.contains(s)).collect())
        .unwrap_or_default();
    for x in f {
        if !list.contains(x) {
            list.push(x.clone());
        }
    }
    if list.is_empty() {
        obj["metadata"].as_object_mut().map(|m| m.remove("finalizers"));
    } else {
        obj["metadata"]["finalizers"] = json!(list);
    }
}

pub(super) fn strip_rv(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v["metadata"].as_object_mut() {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    v
}

/// Sets `apiVersion` and `kind` from the served type.
pub(super) fn set_type_meta(obj: &mut Value, rt: &ResourceType) {
    obj["apiVersion"] = json!(rt.api_version());
    obj["kind"] = json!(rt.kind);
}
