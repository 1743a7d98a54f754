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
//!
//! This file merges maps and applies the map-level directives. Beside it: `lists.rs`
//! (merging lists by merge key or as sets), `element_order.rs` (`$setElementOrder` and
//! the order a merged list ends up in) and `go_values.rs` (Go's view of decoded JSON, for
//! comparisons and error messages).

mod element_order;
mod go_values;
mod lists;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use super::PatchError;
use super::schema::FieldSchema;
use element_order::merge_set_element_order;
use go_values::go_fmt;
use lists::merge_list;

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

fn is_delete_item(item: &Value) -> bool {
    item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete")
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
