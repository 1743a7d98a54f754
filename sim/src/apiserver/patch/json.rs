//! JSON patch (RFC 6902): add, remove, replace, move, copy and test.

use serde_json::Value;

use super::PatchError;

/// apiserver `maxJSONPatchOperations`: longer patches are refused with 413.
pub const OPERATIONS_MAX: usize = 10_000;

/// Parses and applies a JSON patch body atomically (all operations or none).
///
/// # Errors
/// [`PatchError::BadRequest`] when the body is not a JSON array of operations,
/// [`PatchError::TooLarge`] beyond [`OPERATIONS_MAX`], and [`PatchError::Unprocessable`] when
/// an operation fails (a `test` mismatch, a missing path), as the apiserver answers 422.
pub fn apply(current: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let ops: json_patch::Patch = serde_json::from_slice(body)
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;
    if ops.0.len() > OPERATIONS_MAX {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {OPERATIONS_MAX}, got {}",
            ops.0.len()
        )));
    }
    let mut doc = current.clone();
    json_patch::patch(&mut doc, &ops.0).map_err(|e| PatchError::Unprocessable(e.to_string()))?;
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(doc: Value, ops: Value) -> Result<Value, PatchError> {
        apply(&doc, ops.to_string().as_bytes())
    }

    #[test]
    fn add_replace_remove_move_copy_apply_in_order() {
        let doc =
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 1, "list": [1, 2]}});
        let out = run(
            doc,
            json!([
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "replace", "path": "/spec/replicas", "value": 3},
                {"op": "add", "path": "/spec/list/-", "value": 3},
                {"op": "remove", "path": "/spec/list/0"},
                {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
                {"op": "copy", "from": "/spec/replicas", "path": "/spec/copied"},
                {"op": "test", "path": "/spec/copied", "value": 3},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b": "2", "c": "1"}}, "spec": {"replicas": 3, "list": [2, 3], "copied": 3}})
        );
    }

    #[test]
    fn failed_test_is_unprocessable_and_changes_nothing() {
        let err = run(
            json!({"a": 1}),
            json!([{"op": "replace", "path": "/a", "value": 2}, {"op": "test", "path": "/a", "value": 5}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
        assert!(err.to_string().contains("value did not match"), "{err}");
    }

    #[test]
    fn removing_a_missing_path_is_unprocessable() {
        let err = run(
            json!({"metadata": {}}),
            json!([{"op": "remove", "path": "/metadata/finalizers/0"}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn malformed_operations_are_bad_requests() {
        assert_eq!(
            run(json!({}), json!({"op": "add"}))
                .unwrap_err()
                .status_code(),
            400
        );
        assert_eq!(
            run(json!({}), json!([{"op": "frobnicate", "path": "/a"}]))
                .unwrap_err()
                .status_code(),
            400
        );
        assert_eq!(apply(&json!({}), b"[{").unwrap_err().status_code(), 400);
    }
}
