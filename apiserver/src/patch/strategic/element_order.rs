//! The order of a merged list: the `$setElementOrder` check kubectl apply relies on, and
//! apimachinery's normalisation that keeps server-only items in their live place.

use serde_json::Value;

use super::directives::{DIRECTIVE, SET_ELEMENT_ORDER, is_delete_item};
use super::go_values::{go_fmt, scalar_eq};
use super::merge_keys::merge_key_equal;
use crate::patch::PatchError;

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
