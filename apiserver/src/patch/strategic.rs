//! Strategic merge patch, as k8s.io/apimachinery/pkg/util/strategicpatch applies it on the
//! server (`StrategicMergeMapPatch` with `MergeParallelList` and `IgnoreUnmatchedNulls`).
//!
//! Lists tagged `patchStrategy:"merge"` merge by their `patchMergeKey` (or as sets of
//! scalars); every other list is replaced. Directives: `$patch: replace|delete` on maps,
//! `$patch: replace|delete` items in merging lists, `$deleteFromPrimitiveList/<field>`,
//! `$setElementOrder/<field>` and `$retainKeys`. A `null` deletes a key.
//!
//! # Caveats
//! Values the patch adds wholesale are stored without their directive keys and nulls,
//! which is what the apiserver's decode into Go structs leaves of them.

use serde_json::{Map, Value};

use super::PatchError;
use super::schema::FieldSchema;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// mergepatch.ErrBadPatchFormatForPrimitiveList and friends: the apiserver answers 400.
fn bad_format(what: &str) -> PatchError {
    PatchError::BadRequest(format!("invalid patch format of {what}"))
}

/// Applies a strategic merge patch (already decoded) to an object.
///
/// # Errors
/// [`PatchError::BadRequest`] for malformed directives, [`PatchError::Unprocessable`] for
/// lists of lists and `$retainKeys` mismatches, [`PatchError::Internal`] for the errors the
/// apiserver reports as 500 (missing merge key, unknown `$patch` value).
pub fn apply(current: &Value, patch: &Value, schema: &FieldSchema) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::BadRequest("invalid JSON document".to_string()));
    };
    let original = match current {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    merge_map(original, patch.clone(), schema).map(Value::Object)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: &FieldSchema,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(clean_map(patch))
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError::Internal(format!(
                "unknown patch type: {} in map: {}",
                go_fmt(directive),
                go_fmt(&Value::Object(patch.clone()))
            ))),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, schema)?;

    for (key, patch_value) in patch {
        let (key, is_delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(rest) => match rest.strip_prefix('/') {
                Some(name) => (name.to_string(), true),
                None => return Err(bad_format("primitive list")),
            },
            None => (key, false),
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let field = schema.child(&key);
        let Some(existing) = original.get(&key) else {
            if !is_delete_list {
                original.insert(key, clean(patch_value));
            }
            continue;
        };
        let merged = match (existing, patch_value) {
            (Value::Object(o), Value::Object(p)) => {
                if field.patch_replace {
                    Value::Object(clean_map(p))
                } else {
                    Value::Object(merge_map(o.clone(), p, field)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                if field.patch_merge {
                    Value::Array(merge_list(o.clone(), p, field, is_delete_list)?)
                } else {
                    clean(Value::Array(p))
                }
            }
            (_, _) if is_delete_list => continue,
            (_, p) => clean(p),
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// `$retainKeys`: keep only the listed keys of the original; every key the patch sets must
/// be listed.
fn apply_retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad_format("retainKeys"));
    };
    let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
    for (key, value) in patch.iter() {
        if value.is_null() || key.starts_with(DELETE_FROM_PRIMITIVE_LIST) || key.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if !keep.contains(&key.as_str()) {
            return Err(bad_format("retainKeys"));
        }
    }
    original.retain(|key, _| keep.contains(&key.as_str()));
    Ok(())
}

/// `$setElementOrder/<field>`: merge the field's patch list now and order the result as the
/// directive says, server-only items keeping their place relative to the live order.
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: &FieldSchema,
) -> Result<(), PatchError> {
    let keys: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER)).cloned().collect();
    for key in keys {
        let order = patch.remove(&key).unwrap_or(Value::Null);
        let Some(name) = key.strip_prefix(SET_ELEMENT_ORDER).and_then(|r| r.strip_prefix('/')) else {
            return Err(bad_format("setElementOrder list"));
        };
        let Value::Array(order) = order else {
            return Err(PatchError::Internal(format!(
                "expected a []interface {{}}, but received a {}",
                go_type(&order)
            )));
        };
        let field = schema.child(name);
        let merge_key = field.patch_merge_key.clone().unwrap_or_default();
        let original_list = match original.get(name) {
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => {
                return Err(PatchError::Internal(format!(
                    "expected a []interface {{}}, but received a {}",
                    go_type(other)
                )));
            }
            None => None,
        };
        let patch_list = match patch.get(name) {
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => {
                return Err(PatchError::Internal(format!(
                    "expected a []interface {{}}, but received a {}",
                    go_type(other)
                )));
            }
            None => None,
        };
        validate_order(patch_list.as_deref().unwrap_or(&[]), &order, &merge_key)?;
        let merged = match (&original_list, patch_list) {
            (None, None) => continue,
            (Some(o), None) => o.clone(),
            (None, Some(p)) => p.into_iter().filter(|v| !is_delete_item(v)).map(clean).collect(),
            (Some(o), Some(p)) => {
                if field.patch_merge {
                    merge_list(o.clone(), p, field, false)?
                } else {
                    p.into_iter().map(clean).collect()
                }
            }
        };
        let (in_order, server_only) = partition(merged, &order, &merge_key);
        let live = original_list.unwrap_or_default();
        original
            .insert(name.to_string(), Value::Array(normalize_order(in_order, server_only, &order, &live, &merge_key)));
        patch.remove(name);
    }
    Ok(())
}

/// validatePatchWithSetOrderList: the patch items must appear in the directive, in order.
fn validate_order(patch_list: &[Value], order: &[Value], merge_key: &str) -> Result<(), PatchError> {
    if patch_list.is_empty() || order.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        patch_list.iter().filter(|v| !is_delete_item(v)).collect()
    };
    let (mut p, mut o) = (0, 0);
    while p < non_delete.len() && o < order.len() {
        if non_delete[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if merge_key_equal(non_delete[p], &order[o], merge_key)? {
            p += 1;
        }
        o += 1;
    }
    if p < non_delete.len() {
        return Err(PatchError::Internal(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_fmt(&Value::Array(patch_list.to_vec())),
            go_fmt(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

fn merge_key_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(scalar_eq(left, right));
    }
    let l = merge_key_value(left, merge_key)?;
    let r = merge_key_value(right, merge_key)?;
    Ok(scalar_eq(l, r))
}

fn merge_key_value<'a>(item: &'a Value, merge_key: &str) -> Result<&'a Value, PatchError> {
    let Value::Object(map) = item else {
        return Err(PatchError::Internal(format!(
            "expected a map[string]interface {{}}, but received a {}",
            go_type(item)
        )));
    };
    map.get(merge_key).ok_or_else(|| {
        PatchError::Internal(format!("map: {} does not contain declared merge key: {merge_key}", go_fmt(item)))
    })
}

fn is_delete_item(item: &Value) -> bool {
    item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete")
}

/// mergeSlice: scalars union (or subtract for a deletion list), maps merge by key.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &FieldSchema,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let element_is_map = element_kind(&original, &patch)?;
    let merge_key = field.patch_merge_key.clone().unwrap_or_default();
    if !element_is_map {
        if is_delete_list {
            return Ok(original.into_iter().filter(|v| !patch.iter().any(|d| scalar_eq(v, d))).collect());
        }
        let mut merged: Vec<Value> = Vec::new();
        for v in original.iter().chain(patch.iter()) {
            if !merged.iter().any(|m| scalar_eq(m, v)) {
                merged.push(v.clone());
            }
        }
        let (in_patch, server_only) = partition(merged, &patch, "");
        return Ok(normalize_order(in_patch, server_only, &patch, &original, ""));
    }
    if merge_key.is_empty() {
        return Err(PatchError::Internal("cannot merge lists without merge key for type map".to_string()));
    }
    let (original, patch) = merge_special_items(original, patch, &merge_key)?;
    let item_schema = field.item();
    let mut merged = original.clone();
    for item in &patch {
        let key_value = merge_key_value(item, &merge_key)?.clone();
        let found = merged.iter().position(|m| m.get(&merge_key).is_some_and(|v| scalar_eq(v, &key_value)));
        match (found, item) {
            (Some(index), Value::Object(p)) => {
                let base = match &merged[index] {
                    Value::Object(o) => o.clone(),
                    _ => Map::new(),
                };
                merged[index] = Value::Object(merge_map(base, p.clone(), item_schema)?);
            }
            _ => merged.push(clean(item.clone())),
        }
    }
    let (in_patch, server_only) = partition(merged, &patch, &merge_key);
    Ok(normalize_order(in_patch, server_only, &patch, &original, &merge_key))
}

/// mergeSliceWithSpecialElements: `{$patch: delete, key: v}` removes matching items,
/// `{$patch: replace}` makes the rest of the patch list the whole list.
fn merge_special_items(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE) {
            None => plain.push(item),
            Some(Value::String(d)) if d == "delete" => {
                let key_value = merge_key_value(&item, merge_key)?.clone();
                original.retain(|o| !o.get(merge_key).is_some_and(|v| scalar_eq(v, &key_value)));
            }
            Some(Value::String(d)) if d == "replace" => replace = true,
            Some(Value::String(d)) if d == "merge" => {
                return Err(PatchError::Internal("merging lists cannot yet be specified in the patch".to_string()));
            }
            Some(other) => {
                return Err(PatchError::Internal(format!(
                    "unknown patch type: {} in map: {}",
                    go_fmt(other),
                    go_fmt(&item)
                )));
            }
        }
    }
    if replace {
        return Ok((plain.into_iter().map(clean).collect(), Vec::new()));
    }
    Ok((original, plain))
}

/// sliceElementType: true for a list of maps; lists of lists are refused.
fn element_kind(original: &[Value], patch: &[Value]) -> Result<bool, PatchError> {
    let mut kind: Option<&'static str> = None;
    for v in original.iter().chain(patch.iter()) {
        let this = go_type(v);
        if this == "[]interface {}" {
            return Err(PatchError::Unprocessable("lists of lists are not supported".to_string()));
        }
        match kind {
            None => kind = Some(this),
            Some(k) if k != this => {
                return Err(PatchError::Internal(format!(
                    "list element types are not identical: {}",
                    go_fmt(&Value::Array(original.iter().chain(patch.iter()).cloned().collect()))
                )));
            }
            Some(_) => {}
        }
    }
    Ok(kind == Some("map[string]interface {}"))
}

/// Splits items into those present in `by` (matched on merge key) and the rest.
fn partition(items: Vec<Value>, by: &[Value], merge_key: &str) -> (Vec<Value>, Vec<Value>) {
    items.into_iter().partition(|item| index_of(by, item, merge_key).is_some())
}

fn identity<'a>(item: &'a Value, merge_key: &str) -> Option<&'a Value> {
    if merge_key.is_empty() { Some(item) } else { item.get(merge_key) }
}

fn index_of(list: &[Value], item: &Value, merge_key: &str) -> Option<usize> {
    let wanted = identity(item, merge_key)?;
    list.iter().position(|v| identity(v, merge_key).is_some_and(|x| scalar_eq(x, wanted)))
}

/// normalizeElementOrder: patch items in patch order, server-only items in live order,
/// interleaved by live order where both are known; patch items whose place is unknown go
/// first (apimachinery's `mergeSortedSlice`).
fn normalize_order(
    in_patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
) -> Vec<Value> {
    let sort = |mut items: Vec<Value>, order: &[Value]| {
        let deletes: Vec<Value>;
        if merge_key.is_empty() {
            deletes = Vec::new();
        } else {
            let (d, keep): (Vec<Value>, Vec<Value>) = items.into_iter().partition(is_delete_item);
            deletes = d;
            items = keep;
        }
        items.sort_by_key(|v| index_of(order, v, merge_key).unwrap_or(usize::MAX));
        items.extend(deletes);
        items
    };
    let right = sort(in_patch, patch_order);
    let left = sort(server_only, server_order);
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(left.len() + right.len());
    while i < left.len() || j < right.len() {
        let take_left = if i >= left.len() {
            false
        } else if j >= right.len() {
            true
        } else {
            match (index_of(server_order, &left[i], merge_key), index_of(server_order, &right[j], merge_key)) {
                (Some(l), Some(r)) => l < r,
                _ => false,
            }
        };
        if take_left {
            out.push(left[i].clone());
            i += 1;
        } else {
            out.push(right[j].clone());
            j += 1;
        }
    }
    out
}

/// Go's `==` on decoded JSON: numbers compare as float64.
fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Drops directive keys and nulls from a value the patch adds wholesale.
fn clean(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(clean_map(map)),
        Value::Array(items) => Value::Array(items.into_iter().filter(|v| !is_delete_item(v)).map(clean).collect()),
        other => other,
    }
}

fn clean_map(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(k, v)| {
            !v.is_null()
                && k != DIRECTIVE
                && k != RETAIN_KEYS
                && !k.starts_with(SET_ELEMENT_ORDER)
                && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
        })
        .map(|(k, v)| (k, clean(v)))
        .collect()
}

/// Go's reflect type name of a decoded JSON value, for error messages.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of a decoded JSON value (maps print with sorted keys).
fn go_fmt(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_fmt).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> = entries.iter().map(|(k, v)| format!("{k}:{}", go_fmt(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::schema::PatchSchema;
    use serde_json::json;

    fn pod() -> PatchSchema {
        PatchSchema::builtin("Pod").unwrap()
    }

    fn smp(kind: &str, current: Value, patch: Value) -> Value {
        apply(&current, &patch, PatchSchema::builtin(kind).unwrap().root()).unwrap()
    }

    fn smp_err(current: Value, patch: Value) -> PatchError {
        apply(&current, &patch, pod().root()).unwrap_err()
    }

    #[test]
    fn containers_merge_by_name_and_scalars_replace() {
        let live =
            json!({"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:1"}]}});
        let out = smp("Pod", live, json!({"spec": {"containers": [{"name": "side", "image": "side:2"}]}}));
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:2"}]}})
        );
    }

    #[test]
    fn new_items_of_a_merging_list_go_before_server_only_items() {
        // apimachinery's mergeSortedSlice takes a patch item first when its live position is unknown.
        let live = json!({"spec": {"containers": [{"name": "a", "image": "a"}]}});
        let out = smp("Pod", live, json!({"spec": {"containers": [{"name": "b", "image": "b"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "b", "image": "b"}, {"name": "a", "image": "a"}]));
    }

    #[test]
    fn tolerations_and_taints_are_replaced() {
        let live = json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}});
        let out = smp("Pod", live, json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}));
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b", "operator": "Exists"}]));
        let node = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
        let out = smp("Node", node, json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}));
        assert_eq!(out["spec"]["taints"], json!([{"key": "b", "effect": "NoExecute"}]));
    }

    #[test]
    fn null_deletes_a_key_and_maps_merge() {
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let out = smp("Pod", live, json!({"metadata": {"labels": {"a": null, "c": "3"}}}));
        assert_eq!(out, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
    }

    #[test]
    fn finalizers_merge_as_a_set_and_delete_from_primitive_list_removes() {
        let live = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = smp("Pod", live.clone(), json!({"metadata": {"finalizers": ["b", "c"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let out = smp("Pod", live, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let none =
            smp("Pod", json!({"metadata": {}}), json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
        assert_eq!(none, json!({"metadata": {}}));
    }

    #[test]
    fn patch_delete_item_removes_a_container() {
        // Kubernetes docs, "Use strategic merge patch ... $patch: delete".
        let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let out = smp("Pod", live, json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
    }

    #[test]
    fn patch_replace_item_replaces_the_whole_list() {
        let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let out =
            smp("Pod", live, json!({"spec": {"containers": [{"name": "c", "image": "c"}, {"$patch": "replace"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "c", "image": "c"}]));
    }

    #[test]
    fn patch_replace_on_a_map_replaces_it() {
        let live = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"nodeName": "n"}});
        let out = smp("Pod", live, json!({"metadata": {"labels": {"b": "2", "$patch": "replace"}}}));
        assert_eq!(out["metadata"]["labels"], json!({"b": "2"}));
        let out = smp("Pod", out, json!({"spec": {"$patch": "delete"}}));
        assert_eq!(out["spec"], json!({}));
    }

    #[test]
    fn docs_example_patch_file_tolerations_and_containers() {
        // kubernetes.io "Update API Objects in Place Using kubectl patch": patch-file.yaml
        // adds a container (merged), patch-file-tolerations.yaml replaces tolerations.
        let live = json!({"spec": {"template": {"spec": {
            "containers": [{"name": "patch-demo-ctr", "image": "nginx"}],
            "tolerations": [{"effect": "NoSchedule", "key": "dedicated", "value": "test-team"}]
        }}}});
        let out = smp(
            "Deployment",
            live,
            json!({"spec": {"template": {"spec": {
                "containers": [{"name": "patch-demo-ctr-2", "image": "redis"}],
                "tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]
            }}}}),
        );
        let spec = &out["spec"]["template"]["spec"];
        assert_eq!(spec["containers"].as_array().unwrap().len(), 2);
        assert_eq!(spec["tolerations"], json!([{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]));
    }

    #[test]
    fn set_element_order_orders_the_merged_list_like_kubectl_apply() {
        let live = json!({"spec": {"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}, {"name": "a"}],
            "containers": [{"name": "c", "image": "c"}]
        }});
        let out = smp("Pod", live, patch);
        let names: Vec<&str> =
            out["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["b", "c", "a"]);
    }

    #[test]
    fn set_element_order_with_deletion_like_kubectl_apply() {
        // kubectl apply removing container b and adding d.
        let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "d"}, {"name": "c"}],
            "containers": [{"name": "d"}, {"$patch": "delete", "name": "b"}]
        }});
        let out = smp("Pod", live, patch);
        assert_eq!(out["spec"]["containers"], json!([{"name": "a"}, {"name": "d"}, {"name": "c"}]));
    }

    #[test]
    fn set_element_order_for_primitive_lists() {
        let live = json!({"metadata": {"finalizers": ["x", "y"]}});
        let patch = json!({"metadata": {"$setElementOrder/finalizers": ["z", "x", "y"], "finalizers": ["z"]}});
        assert_eq!(smp("Pod", live, patch)["metadata"]["finalizers"], json!(["z", "x", "y"]));
    }

    #[test]
    fn set_element_order_out_of_order_patch_is_refused() {
        let live = json!({"spec": {"containers": [{"name": "a"}]}});
        let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "z"}]}});
        assert_eq!(smp_err(live, patch).status_code(), 500);
    }

    #[test]
    fn retain_keys_clears_unlisted_fields() {
        // Deployment strategy switch from RollingUpdate to Recreate, as kubectl apply sends it.
        let live = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
        assert_eq!(smp("Deployment", live, patch)["spec"]["strategy"], json!({"type": "Recreate"}));
        let bad = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}});
        assert_eq!(
            apply(
                &json!({"spec": {"strategy": {"type": "Recreate"}}}),
                &bad,
                PatchSchema::builtin("Deployment").unwrap().root()
            )
            .unwrap_err()
            .status_code(),
            400
        );
    }

    #[test]
    fn conditions_merge_by_type_and_addresses_by_type() {
        let live = json!({"status": {
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "False"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]
        }});
        let out = smp(
            "Node",
            live,
            json!({"status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "n1"}]
            }}),
        );
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}])
        );
        assert_eq!(out["status"]["addresses"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn owner_references_merge_by_uid_and_env_by_name() {
        let live = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "rs"}]},
                          "spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}});
        let out = smp(
            "Pod",
            live,
            json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}]},
                                          "spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}),
        );
        assert_eq!(out["metadata"]["ownerReferences"], json!([{"uid": "1", "name": "rs", "controller": true}]));
        assert_eq!(out["spec"]["containers"][0]["env"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn missing_merge_key_is_an_internal_error_like_the_apiserver() {
        let err = smp_err(
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{"image": "x"}]}}),
        );
        assert_eq!(err.status_code(), 500);
        assert_eq!(err.to_string(), "map: map[image:x] does not contain declared merge key: name");
    }

    #[test]
    fn bad_directives_are_rejected() {
        assert_eq!(smp_err(json!({"spec": {}}), json!({"spec": {"$patch": "frob"}})).status_code(), 500);
        let err = smp_err(
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
        );
        assert_eq!(err.status_code(), 400);
        let lists = smp_err(json!({"metadata": {"finalizers": [["a"]]}}), json!({"metadata": {"finalizers": [["b"]]}}));
        assert_eq!(lists.status_code(), 422);
    }

    #[test]
    fn directives_in_new_subtrees_are_dropped() {
        let out = smp(
            "Pod",
            json!({}),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "b", "x": null}], "$retainKeys": ["containers"]}}),
        );
        assert_eq!(out, json!({"spec": {"containers": [{"name": "b"}]}}));
    }

    #[test]
    fn volumes_image_pull_secrets_and_host_aliases_merge_by_their_keys() {
        let live = json!({"spec": {
            "volumes": [{"name": "v1", "emptyDir": {}}],
            "imagePullSecrets": [{"name": "s1"}],
            "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}]
        }});
        let out = smp(
            "Pod",
            live,
            json!({"spec": {
                "volumes": [{"name": "v2", "configMap": {"name": "c"}}],
                "imagePullSecrets": [{"name": "s2"}],
                "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["b"]}]
            }}),
        );
        assert_eq!(out["spec"]["volumes"].as_array().unwrap().len(), 2);
        assert_eq!(out["spec"]["imagePullSecrets"].as_array().unwrap().len(), 2);
        assert_eq!(out["spec"]["hostAliases"], json!([{"ip": "10.0.0.1", "hostnames": ["b"]}]));
    }

    #[test]
    fn topology_spread_constraints_merge_by_topology_key() {
        let live = json!({"spec": {"topologySpreadConstraints": [
            {"topologyKey": "zone", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}
        ]}});
        let out =
            smp("Pod", live, json!({"spec": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}]}}));
        assert_eq!(
            out["spec"]["topologySpreadConstraints"],
            json!([{"topologyKey": "zone", "maxSkew": 2, "whenUnsatisfiable": "DoNotSchedule"}])
        );
    }

    #[test]
    fn pdb_selector_is_replaced_and_deployment_selector_merges() {
        let live = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}}});
        let patch = json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}});
        assert_eq!(
            smp("PodDisruptionBudget", live.clone(), patch.clone())["spec"]["selector"],
            json!({"matchLabels": {"b": "2"}})
        );
        assert_eq!(smp("Deployment", live, patch)["spec"]["selector"], json!({"matchLabels": {"a": "1", "b": "2"}}));
    }

    #[test]
    fn node_cordon_patch_as_kubectl_sends_it() {
        let live = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"providerID": "aws:///i-1"}});
        let out = smp("Node", live, json!({"spec": {"unschedulable": true}}));
        assert_eq!(out["spec"], json!({"providerID": "aws:///i-1", "unschedulable": true}));
    }

    /// Objects without lists: a strategic merge patch is a JSON merge patch.
    fn arb_object() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![any::<bool>().prop_map(Value::from), "[a-z]{0,3}".prop_map(Value::from)];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop::collection::btree_map("[a-d]", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect()))
        })
    }

    proptest::proptest! {
        #[test]
        fn without_lists_strategic_merge_equals_json_merge(a in arb_object(), b in arb_object()) {
            let a = if a.is_object() { a } else { json!({"x": a}) };
            let b = if b.is_object() { b } else { json!({"x": b}) };
            let patch = crate::patch::merge::diff(&a, &b);
            let schema = PatchSchema::builtin("Lease").unwrap();
            proptest::prop_assert_eq!(apply(&a, &patch, schema.root()).unwrap(), b);
        }
    }

    #[test]
    fn numeric_merge_keys_compare_as_numbers() {
        let live = json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}});
        let out = smp(
            "Pod",
            live,
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80.0, "hostPort": 8080}]}]}}),
        );
        assert_eq!(out["spec"]["containers"][0]["ports"].as_array().unwrap().len(), 1);
    }
}
