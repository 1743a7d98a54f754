//! Merging lists: scalars as sets (or subtracted, for `$deleteFromPrimitiveList`), maps
//! by their merge key, with `$patch: delete|replace` items.

use serde_json::{Map, Value};

use super::element_order::{normalize_order, partition};
use super::go_values::{go_fmt, go_type, scalar_eq};
use super::{DIRECTIVE, PatchError, clean, merge_map};
use crate::patch::schema::FieldSchema;

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
pub(super) fn merge_special_items(
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
pub(super) fn element_kind(original: &[Value], patch: &[Value]) -> Result<bool, PatchError> {
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

pub(super) fn merge_key_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(scalar_eq(left, right));
    }
    let l = merge_key_value(left, merge_key)?;
    let r = merge_key_value(right, merge_key)?;
    Ok(scalar_eq(l, r))
}

pub(super) fn merge_key_value<'a>(item: &'a Value, merge_key: &str) -> Result<&'a Value, PatchError> {
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
