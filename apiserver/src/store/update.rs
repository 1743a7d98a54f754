//! Update (PUT, and every patch once merged): optimistic concurrency, the main resource
//! versus the status subresource, and the metadata fields only the server may write.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::delete::is_pod_in_grace;
use super::metadata::{metadata_mut, set_type_meta, string_set, strip_rv};
use super::object_ref::ObjRef;
use super::objects::Store;
use super::options::{Part, Propagation, WriteOptions};
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;

impl Store {
    /// Replaces an object (PUT), honouring optimistic concurrency when the body carries a
    /// resourceVersion.
    pub fn update(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        mut obj: Value,
        part: Part,
        opts: WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the body of the request was not a JSON object"));
        }
        let old = self.get(rt, namespace, name)?;
        set_type_meta(&mut obj, rt);
        check_name_and_version(rt, name, &obj, &old)?;
        let mut new = written_part(rt, &old, obj, part);
        keep_server_owned_metadata(rt, name, &old, &mut new)?;
        if rt.has_spec && part == Part::Main && spec_changed(&old, &new) {
            let g = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            new["metadata"]["generation"] = json!(g);
        }
        admission::admit_update(self, rt, &mut new, &old, part, opts.strict)?;
        if opts.dry_run {
            return Ok(Arc::new(new));
        }
        if strip_rv(&new) == strip_rv(&old) {
            // A no-op write does not bump the resourceVersion or notify watchers.
            return Ok(old);
        }
        let r = ObjRef { key: rt.key(), namespace: namespace.to_string(), name: name.to_string() };
        let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
        let no_finalizers = string_set(new.pointer("/metadata/finalizers")).is_empty();
        let pod_waiting = is_pod_in_grace(rt, &new);
        let stored =
            self.commit(r.clone(), new, Some(old.clone()), if part == Part::Status { "status" } else { "update" });
        admission::after_commit(self, rt, &stored, Some(&old));
        if deleting && no_finalizers && !pod_waiting {
            self.remove(&r, Propagation::Background);
        }
        Ok(stored)
    }
}

/// The body must name the object on the URL, and a resourceVersion in the body must be
/// the stored one (optimistic concurrency).
fn check_name_and_version(rt: &ResourceType, name: &str, obj: &Value, old: &Value) -> ApiResult<()> {
    let body_name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(rv) = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str)
        && !rv.is_empty()
        && old["metadata"]["resourceVersion"].as_str() != Some(rv)
    {
        return Err(ApiError::conflict(
            &rt.plural,
            &rt.group,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        ));
    }
    Ok(())
}

/// The object an update would store: through the status subresource only status changes;
/// through the main resource everything but status (for types with a status subresource).
fn written_part(rt: &ResourceType, old: &Value, mut obj: Value, part: Part) -> Value {
    match part {
        Part::Status => {
            let mut n = old.clone();
            n["status"] = obj.get("status").cloned().unwrap_or(Value::Null);
            if n["status"].is_null() {
                n.as_object_mut().map(|m| m.remove("status"));
            }
            n
        }
        Part::Main => {
            if rt.status_subresource {
                match old.get("status") {
                    Some(s) => obj["status"] = s.clone(),
                    None => {
                        obj.as_object_mut().map(|m| m.remove("status"));
                    }
                }
            }
            obj
        }
    }
}

/// Restores the metadata fields the server owns from the stored object, and refuses new
/// finalizers on an object that is being deleted.
fn keep_server_owned_metadata(rt: &ResourceType, name: &str, old: &Value, new: &mut Value) -> ApiResult<()> {
    let old_meta = old["metadata"].as_object().cloned().unwrap_or_default();
    let meta = metadata_mut(new);
    for k in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace"]
    {
        match old_meta.get(k) {
            Some(v) => meta.insert(k.into(), v.clone()),
            None => meta.remove(k),
        };
    }
    meta.insert("name".into(), json!(name));
    if old_meta.contains_key("deletionTimestamp") {
        let old_f = string_set(old_meta.get("finalizers"));
        let new_f = string_set(meta.get("finalizers"));
        if let Some(added) = new_f.difference(&old_f).next() {
            return Err(ApiError::invalid(
                &rt.kind,
                &rt.group,
                name,
                &[(
                    "FieldValueForbidden".into(),
                    "metadata.finalizers".into(),
                    format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{\"{added}\"}}"
                    ),
                )],
            ));
        }
    }
    Ok(())
}

/// Whether anything but metadata and status changed (what bumps `generation`).
fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("status");
        m
    };
    strip(old) != strip(new)
}
