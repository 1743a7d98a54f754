//! Decoded JSON as Go sees it: `==` on `interface{}` values, and the type names and `%v`
//! formatting that appear in the apiserver's error messages.

use serde_json::Value;

/// Go's `==` on decoded JSON: numbers compare as float64.
pub(super) fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Go's reflect type name of a decoded JSON value, for error messages.
pub(super) fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of a decoded JSON value (maps print with sorted keys).
pub(super) fn go_fmt(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_fmt).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> = entries.iter().map(|(k, v)| format!("{k}:{}", go_fmt(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}
