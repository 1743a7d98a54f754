//! The directives a strategic merge patch may carry (`$patch`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`), and cleaning them and
//! nulls out of values the patch adds wholesale.

use serde_json::{Map, Value};

use crate::patch::PatchError;

pub(super) const DIRECTIVE: &str = "$patch";
pub(super) const RETAIN_KEYS: &str = "$retainKeys";
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// mergepatch.ErrBadPatchFormatForPrimitiveList and friends: the apiserver answers 400.
pub(super) fn bad_format(what: &str) -> PatchError {
    PatchError::BadRequest(format!("invalid patch format of {what}"))
}

/// `$retainKeys`: keep only the listed keys of the original; every key the patch sets must
/// be listed.
pub(super) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
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

pub(super) fn is_delete_item(item: &Value) -> bool {
    item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete")
}

/// Drops directive keys and nulls from a value the patch adds wholesale.
pub(super) fn clean(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(clean_map(map)),
        Value::Array(items) => Value::Array(items.into_iter().filter(|v| !is_delete_item(v)).map(clean).collect()),
        other => other,
    }
}

pub(super) fn clean_map(map: Map<String, Value>) -> Map<String, Value> {
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
