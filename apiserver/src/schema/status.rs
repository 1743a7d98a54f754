//! The `Status` bodies a real apiserver returns when admission fails.

use serde_json::{Value, json};

use super::error::FieldError;

/// The 422 `Status` of `apierrors.NewInvalid`: message `Kind.group "name" is invalid: <errors>`,
/// where one error is shown bare and several as `[a, b]` (duplicates removed, as
/// `ErrorList.ToAggregate` does), and one cause per error.
pub fn invalid_status(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Value {
    let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
    let mut shown: Vec<&str> = Vec::new();
    for e in errors {
        if !shown.contains(&e.message.as_str()) {
            shown.push(&e.message);
        }
    }
    let message = match shown.as_slice() {
        [] => format!("{qualified} {name:?} is invalid"),
        [one] => format!("{qualified} {name:?} is invalid: {one}"),
        many => format!("{qualified} {name:?} is invalid: [{}]", many.join(", ")),
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| {
            let body = e
                .message
                .strip_prefix(&format!("{}: ", if e.field.is_empty() { "<nil>" } else { &e.field }))
                .unwrap_or(&e.message);
            json!({"reason": e.kind.reason(), "message": body, "field": e.field})
        })
        .collect();
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": {"name": name, "group": group, "kind": kind, "causes": causes},
        "code": 422,
    })
}

/// The 400 `Status` for unknown fields under `fieldValidation=Strict`:
/// `strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`.
pub fn strict_decoding_status(pruned: &[String]) -> Value {
    let fields: Vec<String> = pruned.iter().map(|p| format!("unknown field {p:?}")).collect();
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("strict decoding error: {}", fields.join(", ")),
        "reason": "BadRequest",
        "code": 400,
    })
}
