//! Reading a cluster dump: the output of `kubectl get ... -A -o yaml` (one `kind: List`
//! with `items:`), `-o json`, or a multi-document YAML stream of plain objects (or of
//! lists). Every object keeps where it came from, so errors and findings can name it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::ImportError;

/// One object of a dump and where it was found.
#[derive(Clone, Debug)]
pub struct Item {
    /// The dump file.
    pub file: PathBuf,
    /// Where in the file: `items[3]`, `document 2`, `document 1 items[0]`.
    pub at: String,
    /// The object.
    pub object: Value,
}

impl Item {
    /// `kind`, or empty.
    pub fn kind(&self) -> &str {
        self.object.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    /// `metadata.name`, or empty.
    pub fn name(&self) -> &str {
        self.object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
    }

    /// `metadata.namespace`, if set.
    pub fn namespace(&self) -> Option<&str> {
        self.object.pointer("/metadata/namespace").and_then(Value::as_str)
    }

    /// `Kind/namespace/name`, or `Kind/name` without a namespace: how findings name it.
    pub fn label(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{}/{ns}/{}", self.kind(), self.name()),
            None => format!("{}/{}", self.kind(), self.name()),
        }
    }

    /// An error about `field` of this item.
    pub fn error(&self, field: impl Into<String>, problem: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.clone(),
            item: self.at.clone(),
            object: match self.namespace() {
                Some(ns) => format!("{} {ns}/{}", self.kind(), self.name()),
                None => format!("{} {}", self.kind(), self.name()).trim().to_string(),
            },
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Parses one dump file's text. JSON (first character `{` or `[`) is read with serde_json,
/// anything else as a YAML stream; `kind: List` (and `*List` kinds with `items`) are
/// flattened. Each object must be a mapping with `apiVersion`, `kind` and `metadata.name`.
pub fn parse(file: &Path, text: &str) -> Result<Vec<Item>, ImportError> {
    let trimmed = text.trim_start();
    let docs: Vec<Value> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value =
            serde_json::from_str(text).map_err(|e| ImportError::file(file, format!("not valid JSON: {e}")))?;
        match v {
            Value::Array(a) => a,
            v => vec![v],
        }
    } else {
        serde_saphyr::from_multiple::<Value>(text)
            .map_err(|e| ImportError::file(file, format!("not valid YAML: {e}")))?
            .into_iter()
            .collect()
    };
    let many = docs.iter().filter(|d| !d.is_null()).count() > 1;
    let mut out = Vec::new();
    for (d, doc) in docs.into_iter().enumerate() {
        if doc.is_null() {
            continue;
        }
        let at = if many { format!("document {}", d + 1) } else { String::new() };
        let is_list =
            doc.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) && doc.get("items").is_some();
        if is_list {
            let items = match doc.get("items") {
                Some(Value::Array(items)) => items.clone(),
                Some(Value::Null) => Vec::new(),
                Some(_) => {
                    let item = Item { file: file.into(), at: at.clone(), object: Value::Null };
                    return Err(item.error("items", "is not a list"));
                }
                None => Vec::new(),
            };
            for (i, object) in items.into_iter().enumerate() {
                let at = if at.is_empty() { format!("items[{i}]") } else { format!("{at} items[{i}]") };
                out.push(check(Item { file: file.into(), at, object })?);
            }
        } else {
            let at = if at.is_empty() { "document 1".to_string() } else { at };
            out.push(check(Item { file: file.into(), at, object: doc })?);
        }
    }
    Ok(out)
}

/// An object has the fields every later step relies on.
fn check(item: Item) -> Result<Item, ImportError> {
    if !item.object.is_object() {
        return Err(item.error("", format!("is not an object (found {})", type_name(&item.object))));
    }
    for field in ["apiVersion", "kind"] {
        match item.object.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(v) => return Err(item.error(field, format!("must be a non-empty string (found {})", type_name(v)))),
            None => return Err(item.error(field, "Required value")),
        }
    }
    match item.object.pointer("/metadata/name") {
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(v) => {
            return Err(item.error("metadata.name", format!("must be a non-empty string (found {})", type_name(v))));
        }
        None => return Err(item.error("metadata.name", "Required value")),
    }
    Ok(item)
}

/// A JSON value's type, for errors.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_streams_flatten_with_their_positions() {
        let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: A, metadata: {name: a}}\n- {apiVersion: v1, kind: B, metadata: {name: b, namespace: x}}\n";
        let items = parse(Path::new("d.yaml"), list).unwrap();
        assert_eq!(
            items.iter().map(|i| (i.at.as_str(), i.label())).collect::<Vec<_>>(),
            [("items[0]", "A/a".to_string()), ("items[1]", "B/x/b".to_string())]
        );
        let stream =
            "apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\n";
        let items = parse(Path::new("d.yaml"), stream).unwrap();
        assert_eq!(items[1].at, "document 2");
        let json =
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"A","metadata":{"name":"a"}}]}"#;
        assert_eq!(parse(Path::new("d.json"), json).unwrap()[0].at, "items[0]");
    }

    #[test]
    fn a_nameless_item_is_named_by_file_position_and_field() {
        let list =
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: apps/v1, kind: Deployment, metadata: {namespace: x}}\n";
        let err = parse(Path::new("d.yaml"), list).unwrap_err();
        assert_eq!(err.to_string(), "d.yaml: items[0] (Deployment x/): metadata.name: Required value");
        let err = parse(Path::new("d.yaml"), "a: [b\n").unwrap_err();
        assert!(err.to_string().starts_with("d.yaml: not valid YAML"), "{err}");
    }
}
