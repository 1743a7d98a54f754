//! What identifies an item of a merging list: its merge key's value (or the scalar
//! itself), and whether the list holds maps or scalars.

use serde_json::Value;

use super::go_values::{go_fmt, go_type, scalar_eq};
use crate::patch::PatchError;

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
