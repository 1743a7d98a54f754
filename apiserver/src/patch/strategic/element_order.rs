//! The order of a merged list: `$setElementOrder/<field>` (what kubectl apply sends) and
//! apimachinery's normalisation that keeps server-only items in their live place.

use serde_json::{Map, Value};

use super::go_values::{go_fmt, go_type, scalar_eq};
use super::lists::{merge_key_equal, merge_list};
use super::{DIRECTIVE, PatchError, SET_ELEMENT_ORDER, bad_format, clean, is_delete_item};
use crate::patch::schema::FieldSchema;

/// `$setElementOrder/<field>`: merge the field's patch list now and order the result as the
/// directive says, server-only items keeping their place relative to the live order.
pub(super) fn merge_set_element_order(
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
pub(super) fn validate_order(patch_list: &[Value], order: &[Value], merge_key: &str) -> Result<(), PatchError> {
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

/// Splits items into those present in `by` (matched on merge key) and the rest.
pub(super) fn partition(items: Vec<Value>, by: &[Value], merge_key: &str) -> (Vec<Value>, Vec<Value>) {
    items.into_iter().partition(|item| index_of(by, item, merge_key).is_some())
}

pub(super) fn identity<'a>(item: &'a Value, merge_key: &str) -> Option<&'a Value> {
    if merge_key.is_empty() { Some(item) } else { item.get(merge_key) }
}

pub(super) fn index_of(list: &[Value], item: &Value, merge_key: &str) -> Option<usize> {
    let wanted = identity(item, merge_key)?;
    list.iter().position(|v| identity(v, merge_key).is_some_and(|x| scalar_eq(x, wanted)))
}

/// normalizeElementOrder: patch items in patch order, server-only items in live order,
/// interleaved by live order where both are known; patch items whose place is unknown go
/// first (apimachinery's `mergeSortedSlice`).
pub(super) fn normalize_order(
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
