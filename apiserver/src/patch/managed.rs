//! `metadata.managedFields` entries: decoding, the apiserver's order and manager identity,
//! the fields no manager owns, and the 409 message for apply conflicts.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::PatchError;
use super::error::ConflictCause;
use super::fieldset::{FieldSet, PathElement, path_string};
use super::kind_schema::PatchSchema;

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Entry {
    pub(super) manager: String,
    pub(super) operation: String,
    pub(super) api_version: String,
    pub(super) time: Option<String>,
    pub(super) subresource: Option<String>,
    pub(super) set: FieldSet,
}

impl Entry {
    /// apiserver `BuildManagerIdentifier`: appliers are identified without API version.
    pub(super) fn identity(&self) -> (String, String, String, String) {
        let version = if self.operation == "Apply" { String::new() } else { self.api_version.clone() };
        (self.manager.clone(), self.operation.clone(), version, self.subresource.clone().unwrap_or_default())
    }

    /// apiserver `printManager`, as conflict messages show a manager.
    pub(super) fn printable(&self) -> String {
        let mut out = serde_json::to_string(&self.manager).unwrap_or_default();
        if let Some(sub) = &self.subresource {
            out.push_str(&format!(" with subresource {}", serde_json::to_string(sub).unwrap_or_default()));
        }
        if self.operation == "Update" {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(time) = &self.time {
            m.insert("time".into(), Value::String(time.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if let Some(sub) = &self.subresource {
            m.insert("subresource".into(), Value::String(sub.clone()));
        }
        Value::Object(m)
    }
}

pub(super) type Managers = BTreeMap<(String, String, String, String), Entry>;

pub(super) fn parse_managers(object: &Value) -> Result<Managers, PatchError> {
    let mut out = Managers::new();
    let Some(entries) = object.pointer("/metadata/managedFields").and_then(Value::as_array) else {
        return Ok(out);
    };
    for e in entries {
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        let entry = Entry {
            manager: text("manager").unwrap_or_default(),
            operation: text("operation").unwrap_or_else(|| "Update".to_string()),
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            subresource: text("subresource").filter(|s| !s.is_empty()),
            set: FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Object(Map::new())))?,
        };
        out.insert(entry.identity(), entry);
    }
    Ok(out)
}

/// apiserver `sortEncodedManagedFields`: Apply before Update, then time, manager, version.
pub(super) fn write_managers(object: &mut Value, managers: Managers) {
    let mut entries: Vec<Entry> = managers.into_values().filter(|e| !e.set.is_empty()).collect();
    entries.sort_by(|a, b| {
        (&a.operation, a.time.as_deref().unwrap_or(""), &a.manager, &a.api_version, &a.subresource).cmp(&(
            &b.operation,
            b.time.as_deref().unwrap_or(""),
            &b.manager,
            &b.api_version,
            &b.subresource,
        ))
    });
    let Some(root) = object.as_object_mut() else {
        return;
    };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(entries.iter().map(Entry::to_json).collect()));
    }
}

/// The apiserver's strip set: fields no manager ever owns. They are stripped from the
/// stored sets after the apply (`stripMetaManager`), so they still protect `metadata` from
/// pruning while the apply runs.
pub(super) fn stripped_fields() -> FieldSet {
    let f = |n: &str| PathElement::Field(n.to_string());
    let mut set = FieldSet::new();
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    for meta in
        ["name", "namespace", "creationTimestamp", "selfLink", "uid", "generation", "managedFields", "resourceVersion"]
    {
        set.insert(&[f("metadata"), f(meta)]);
    }
    set
}

/// The fields the endpoint resets (`ResetFieldsStrategy`): `status` through the main
/// resource, `spec` through the status subresource, for kinds with a status subresource.
pub(super) fn reset_fields(schema: &PatchSchema, subresource: Option<&str>) -> FieldSet {
    let f = |n: &str| PathElement::Field(n.to_string());
    let mut set = FieldSet::new();
    if schema.has_status_subresource() {
        match subresource {
            Some("status") => set.insert(&[f("spec")]),
            _ => set.insert(&[f("status")]),
        }
    }
    set
}

/// Removes whole subtrees named by `ignored` members from `set`.
pub(super) fn strip(set: &FieldSet, ignored: &FieldSet) -> FieldSet {
    let mut remove = FieldSet::new();
    for path in ignored.paths() {
        for owned in set.paths() {
            if owned.starts_with(&path) {
                remove.insert(&owned);
            }
        }
    }
    set.difference(&remove)
}

pub(super) fn strip_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
}

/// The apiserver's `NewConflictError` message and causes.
pub(super) fn conflict_error(mut conflicts: Vec<(String, Vec<PathElement>)>) -> PatchError {
    conflicts.sort();
    let causes: Vec<ConflictCause> = conflicts
        .iter()
        .map(|(m, p)| ConflictCause { message: format!("conflict with {m}"), field: path_string(p) })
        .collect();
    let message = if let [(manager, path)] = conflicts.as_slice() {
        format!("Apply failed with 1 conflict: conflict with {manager}: {}", path_string(path))
    } else {
        let mut lines = Vec::new();
        let mut current: Option<&str> = None;
        for (manager, path) in &conflicts {
            if current != Some(manager.as_str()) {
                lines.push(format!("conflicts with {manager}:"));
                current = Some(manager);
            }
            lines.push(format!("- {}", path_string(path)));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    PatchError::Conflict { message, causes }
}
