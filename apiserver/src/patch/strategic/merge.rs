//! The recursion at the heart of strategic merge: maps merge key by key, merging lists
//! merge item by item (by merge key, or as sets of scalars), and lists ordered by
//! `$setElementOrder` are merged before they are ordered.

use serde_json::{Map, Value};

use super::directives::{
    DELETE_FROM_PRIMITIVE_LIST, DIRECTIVE, SET_ELEMENT_ORDER, apply_retain_keys, bad_format, clean, clean_map,
    is_delete_item,
};
use super::element_order::{normalize_order, partition, validate_order};
use super::go_values::{go_fmt, go_type, scalar_eq};
use super::merge_keys::{element_kind, merge_key_value};
use crate::patch::PatchError;
use crate::patch::schema::FieldSchema;

pub(super) fn merge_map(
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

/// mergeSlice: scalars union (or subtract for a deletion list), maps merge by key.
pub(super) fn merge_list(
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
