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
    let ops: json_patch::Patch =
        serde_json::from_slice(body).map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;
    if ops.0.len() > OPERATIONS_MAX {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {OPERATIONS_MAX}, got {}",
            ops.0.len()
        )));
    }
    let mut doc = current.clone();
    for (index, op) in ops.0.iter().enumerate() {
        if let json_patch::PatchOperation::Test(test) = op {
            check(&doc, test)?;
            continue;
        }
        json_patch::patch(&mut doc, std::slice::from_ref(op)).map_err(|e| {
            PatchError::Unprocessable(format!(
                "operation {index} ({}) failed at path '{}': {}",
                op_name(op),
                e.path,
                e.kind
            ))
        })?;
    }
    Ok(doc)
}

/// The `test` operation as the apiserver's json-patch library runs it: a missing path
/// equals `null` (kube-runtime's finalizer helper tests `/metadata/finalizers` against
/// `null` on objects without finalizers), and numbers compare by value.
fn check(doc: &Value, test: &json_patch::TestOperation) -> Result<(), PatchError> {
    let actual = doc.pointer(test.path.as_str()).unwrap_or(&Value::Null);
    if json_equal(actual, &test.value) {
        Ok(())
    } else {
        Err(PatchError::Unprocessable(format!("testing value {} failed: test failed", test.path)))
    }
}

/// Deep equality where `1` and `1.0` are the same number.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn op_name(op: &json_patch::PatchOperation) -> &'static str {
    match op {
        json_patch::PatchOperation::Add(_) => "add",
        json_patch::PatchOperation::Remove(_) => "remove",
        json_patch::PatchOperation::Replace(_) => "replace",
        json_patch::PatchOperation::Move(_) => "move",
        json_patch::PatchOperation::Copy(_) => "copy",
        json_patch::PatchOperation::Test(_) => "test",
    }
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
        let doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 1, "list": [1, 2]}});
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
        assert_eq!(err.to_string(), "testing value /a failed: test failed");
    }

    #[test]
    fn kube_runtime_finalizer_patches_apply() {
        // kube-runtime finalizer(): first finalizer on an object without any.
        let add_first = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["dovetail/cleanup"]}
        ]);
        let obj = run(json!({"metadata": {"name": "x"}}), add_first.clone()).unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["dovetail/cleanup"]));
        // The same patch again fails: someone else added finalizers meanwhile.
        assert_eq!(run(obj.clone(), add_first).unwrap_err().status_code(), 422);
        // Removal tests the exact list, then removes by index.
        let remove = json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "dovetail/cleanup"},
            {"op": "remove", "path": "/metadata/finalizers/0"}
        ]);
        assert_eq!(run(obj, remove).unwrap()["metadata"]["finalizers"], json!([]));
    }

    #[test]
    fn test_compares_numbers_by_value() {
        assert!(run(json!({"a": 1}), json!([{"op": "test", "path": "/a", "value": 1.0}])).is_ok());
    }

    #[test]
    fn removing_a_missing_path_is_unprocessable() {
        let err =
            run(json!({"metadata": {}}), json!([{"op": "remove", "path": "/metadata/finalizers/0"}])).unwrap_err();
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn malformed_operations_are_bad_requests() {
        assert_eq!(run(json!({}), json!({"op": "add"})).unwrap_err().status_code(), 400);
        assert_eq!(run(json!({}), json!([{"op": "frobnicate", "path": "/a"}])).unwrap_err().status_code(), 400);
        assert_eq!(apply(&json!({}), b"[{").unwrap_err().status_code(), 400);
    }
}
