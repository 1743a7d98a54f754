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
//! Files: `merge.rs` (the recursion over maps and lists), `directives.rs` (`$patch`,
//! `$retainKeys` and friends, and cleaning them out of added values), `merge_keys.rs`
//! (what identifies a list item), `element_order.rs` (`$setElementOrder` and the order a
//! merged list ends up in) and `go_values.rs` (Go's view of decoded JSON, for
//! comparisons and error messages).

mod directives;
mod element_order;
mod go_values;
mod merge;
mod merge_keys;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use super::PatchError;
use super::schema::FieldSchema;
use merge::merge_map;

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
