//! Field errors rendered exactly like apimachinery's `field.Error`, so that a 422 from the
//! simulated API server reads the same as one from EKS.

use serde_json::Value;

/// Why a field was rejected. Mirrors `k8s.io/apimachinery/pkg/util/validation/field.ErrorType`;
/// [`FieldErrorKind::reason`] gives the `StatusCause.reason` string a real server sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FieldErrorKind {
    /// A required field is missing (`FieldValueRequired`).
    Required,
    /// The value is malformed or breaks a rule (`FieldValueInvalid`).
    Invalid,
    /// The value is not in the enum (`FieldValueNotSupported`).
    NotSupported,
    /// A string is longer than `maxLength` (`FieldValueTooLong`).
    TooLong,
    /// A list or map has more than `maxItems`/`maxProperties` (`FieldValueTooMany`).
    TooMany,
    /// A set or map list holds the same element or key twice (`FieldValueDuplicate`).
    Duplicate,
    /// The JSON type does not match the schema type (`FieldValueTypeInvalid`).
    TypeInvalid,
    /// The value is not allowed here (`FieldValueForbidden`).
    Forbidden,
}

impl FieldErrorKind {
    /// The `StatusCause.reason` (Go `field.ErrorType` value).
    pub fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Duplicate => "FieldValueDuplicate",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::Forbidden => "FieldValueForbidden",
        }
    }

    /// The human text Go's `ErrorType.String()` returns.
    pub fn text(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Duplicate => "Duplicate value",
            Self::Forbidden => "Forbidden",
        }
    }

    /// Parses a CEL rule's `reason` (`FieldValueForbidden`, ...); unknown reasons are `Invalid`,
    /// as in apiextensions-apiserver.
    pub fn from_reason(reason: &str) -> Self {
        match reason {
            "FieldValueRequired" => Self::Required,
            "FieldValueForbidden" => Self::Forbidden,
            "FieldValueDuplicate" => Self::Duplicate,
            _ => Self::Invalid,
        }
    }

    /// Kinds that keep the apiserver from running CEL rules (`hasBlockingErr` in
    /// apiextensions-apiserver): the object is too malformed for rules to see a sane value.
    pub fn blocks_cel(self) -> bool {
        matches!(self, Self::NotSupported | Self::Required | Self::TooLong | Self::TooMany | Self::TypeInvalid)
    }
}

/// One rejected field, as a `field.Error`: `field` is the JSON path
/// (`spec.template.spec.requirements[0].operator`), `message` is `field.Error.Error()`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// Path of the field, apimachinery style (`a.b[0].c`, map keys as `a[key]`); `<nil>` for
    /// errors about the whole object, as Go renders a nil path.
    pub field: String,
    /// Error type.
    pub kind: FieldErrorKind,
    /// Full rendered message: `<field>: <body>`, identical to Go's `field.Error.Error()`.
    pub message: String,
    /// The offending value, when the error type shows one.
    pub bad_value: Option<Value>,
}

/// What a field error shows as its bad value. Go prints strings quoted, numbers and bools bare,
/// `null` for nil and structs with `%#v`; CEL failures show the schema type name as a string.
#[derive(Clone, Debug)]
pub(crate) enum Shown {
    /// No value shown (`Required`, `Forbidden`, `TooLong`).
    Omitted,
    /// A JSON value.
    Json(Value),
}

impl FieldError {
    /// Builds an error and renders its message.
    pub(crate) fn new(field: &str, kind: FieldErrorKind, shown: Shown, detail: &str) -> Self {
        let mut body = kind.text().to_string();
        let bad_value = match (&shown, kind) {
            (_, FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong) => None,
            (Shown::Omitted, _) => None,
            (Shown::Json(v), _) => {
                body.push_str(": ");
                body.push_str(&go_value(v));
                Some(v.clone())
            }
        };
        if !detail.is_empty() {
            body.push_str(": ");
            body.push_str(detail);
        }
        // Go prints a nil `*field.Path` as `<nil>` and stores that string as the field.
        let shown_field = if field.is_empty() { "<nil>" } else { field };
        Self { field: shown_field.to_string(), kind, message: format!("{shown_field}: {body}"), bad_value }
    }

    /// `field.Required(path, detail)`.
    pub(crate) fn required(field: &str, detail: &str) -> Self {
        Self::new(field, FieldErrorKind::Required, Shown::Omitted, detail)
    }

    /// `field.Invalid(path, value, detail)`.
    pub(crate) fn invalid(field: &str, value: Value, detail: &str) -> Self {
        Self::new(field, FieldErrorKind::Invalid, Shown::Json(value), detail)
    }

    /// `field.Forbidden(path, detail)`.
    pub(crate) fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(field, FieldErrorKind::Forbidden, Shown::Omitted, detail)
    }

    /// `field.NotSupported(path, value, supported)`: quotes each supported value.
    pub(crate) fn not_supported(field: &str, value: Value, supported: &[String]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        let detail = if quoted.is_empty() { String::new() } else { format!("supported values: {}", quoted.join(", ")) };
        Self::new(field, FieldErrorKind::NotSupported, Shown::Json(value), &detail)
    }

    /// `field.TooLong(path, value, max)`.
    pub(crate) fn too_long(field: &str, max: u64) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(field, FieldErrorKind::TooLong, Shown::Omitted, &format!("may not be more than {max} {unit}"))
    }

    /// `field.TooMany(path, actual, max)`.
    pub(crate) fn too_many(field: &str, actual: usize, max: u64) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            field,
            FieldErrorKind::TooMany,
            Shown::Json(Value::from(actual)),
            &format!("must have at most {max} {unit}"),
        )
    }

    /// `field.TypeInvalid(path, value, detail)`.
    pub(crate) fn type_invalid(field: &str, value: Value, detail: &str) -> Self {
        Self::new(field, FieldErrorKind::TypeInvalid, Shown::Json(value), detail)
    }

    /// `field.Duplicate(path, value)`.
    pub(crate) fn duplicate(field: &str, value: Value) -> Self {
        Self::new(field, FieldErrorKind::Duplicate, Shown::Json(value), "")
    }
}

/// Quotes a string the way Go's `%q`/`strconv.Quote` does (printable Unicode kept, `"` and `\`
/// escaped, control characters as `\n`, `\t`, `\x..`, `\u....`).
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders a JSON value as Go's `field.Error` shows a bad value decoded into `interface{}`:
/// strings `%q`, numbers and bools `%v`, nil `null`, maps and slices `%#v`.
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::Array(_) | Value::Object(_) => go_sharp(v),
    }
}

/// Go `%v` of a number: integers bare, floats in shortest form (`1.5`, `1e+21`).
pub(crate) fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() == 0.0 && f.abs() < 1e21 { format!("{f:.0}") } else { format!("{f}") }
}

/// Go `%#v` of a value inside `interface{}` (maps sorted by key, as Go's fmt sorts them).
fn go_sharp(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_sharp).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", go_quote(k), go_sharp(&map[k.as_str()]))).collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
        other => go_value(other),
    }
}

/// Why a CRD manifest could not be compiled: the apiserver would refuse to create it.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CrdError {
    /// The manifest is not an `apiextensions.k8s.io/v1` `CustomResourceDefinition`, or breaks
    /// one of the CRD validation rules (names, group, versions, schema); one line per problem.
    #[error("CustomResourceDefinition {name:?} is invalid: {}", problems.join("; "))]
    Invalid {
        /// `metadata.name` of the CRD, as given.
        name: String,
        /// Each problem, rendered like a field error.
        problems: Vec<String>,
    },
    /// The requested version is not served by this CRD.
    #[error("CustomResourceDefinition {name:?} does not serve version {version:?}")]
    VersionNotServed {
        /// `metadata.name` of the CRD.
        name: String,
        /// The version asked for.
        version: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn not_supported_renders_like_apimachinery() {
        let e = FieldError::not_supported("spec.x", json!("Foo"), &["In".to_string(), "NotIn".to_string()]);
        assert_eq!(e.message, r#"spec.x: Unsupported value: "Foo": supported values: "In", "NotIn""#);
    }

    #[test]
    fn required_and_too_many_render_like_apimachinery() {
        assert_eq!(FieldError::required("spec.a", "").message, "spec.a: Required value");
        assert_eq!(FieldError::too_many("spec.l", 3, 2).message, "spec.l: Too many: 3: must have at most 2 items");
        assert_eq!(FieldError::too_long("spec.s", 63).message, "spec.s: Too long: may not be more than 63 bytes");
    }

    #[test]
    fn go_sharp_sorts_map_keys() {
        assert_eq!(go_value(&json!({"b": 1, "a": "x"})), r#"map[string]interface {}{"a":"x", "b":1}"#);
    }
}
