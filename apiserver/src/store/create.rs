//! Create: the server fills in identity (uid, generated name, timestamps, generation)
//! before admission, as the generic registry does.

use std::sync::Arc;

use rand::Rng;
use serde_json::{Map, Value, json};

use super::gc::owners_all_missing;
use super::metadata::{metadata_mut, set_type_meta};
use super::object_ref::ObjRef;
use super::objects::Store;
use super::options::{DeleteOptions, WriteOptions};
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use dovetail_world::rng::SimRng;

impl Store {
    /// Creates an object. The server sets uid, creationTimestamp, resourceVersion and
    /// generation, and fills generateName.
    pub fn create(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        mut obj: Value,
        opts: WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the body of the request was not a JSON object"));
        }
        set_type_meta(&mut obj, rt);
        let meta = metadata_mut(&mut obj);
        set_namespace(rt, namespace, meta)?;
        let name = assign_name(rt, meta, &mut self.rng)?;
        self.check_creatable(rt, namespace, &name)?;
        for k in ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
            meta.remove(k);
        }
        meta.insert("uid".into(), json!(random_uid(&mut self.rng)));
        meta.insert("creationTimestamp".into(), json!(self.clock.now_rfc3339()));
        if rt.has_spec {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        admission::admit_create(self, rt, &mut obj, opts.strict)?;
        if opts.dry_run {
            return Ok(Arc::new(obj));
        }
        if rt.custom && rt.status_subresource {
            // A create through the main resource cannot set status (it is reset).
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
        let r = ObjRef { key: rt.key(), namespace: namespace.to_string(), name: name.clone() };
        let stored = self.commit(r.clone(), obj, None, "create");
        admission::after_commit(self, rt, &stored, None);
        // A dependent whose owners are all gone is garbage (as the GC controller decides).
        if owners_all_missing(self, &stored) {
            let _ = self.delete(rt, &r.namespace, &r.name, &DeleteOptions::default());
        }
        Ok(stored)
    }

    /// The namespace must exist and not be terminating, and the name must be free.
    fn check_creatable(&self, rt: &ResourceType, namespace: &str, name: &str) -> ApiResult<()> {
        if rt.namespaced && !self.namespace_exists(namespace) {
            return Err(ApiError::not_found("namespaces", "", namespace));
        }
        if rt.namespaced && self.namespace_terminating(namespace) {
            return Err(ApiError::forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                rt.group_resource()
            )));
        }
        if self.get(rt, namespace, name).is_ok() {
            return Err(ApiError::already_exists(&rt.plural, &rt.group, name));
        }
        Ok(())
    }
}

/// A namespaced object takes the request's namespace (a different one in the body is an
/// error); a cluster-scoped object has none.
fn set_namespace(rt: &ResourceType, namespace: &str, meta: &mut Map<String, Value>) -> ApiResult<()> {
    if rt.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != namespace => {
                return Err(ApiError::bad_request(format!(
                    "the namespace of the provided object does not match the namespace sent on the request ({ns} != {namespace})"
                )));
            }
            _ => {
                meta.insert("namespace".into(), json!(namespace));
            }
        }
    } else {
        meta.remove("namespace");
    }
    Ok(())
}

/// The object's name, generated from `generateName` with a random suffix when absent.
fn assign_name(rt: &ResourceType, meta: &mut Map<String, Value>, rng: &mut SimRng) -> ApiResult<String> {
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    if !name.is_empty() {
        return Ok(name);
    }
    match meta.get("generateName").and_then(Value::as_str) {
        Some(prefix) if !prefix.is_empty() => {
            let name = format!("{prefix}{}", random_suffix(rng));
            meta.insert("name".into(), json!(name));
            Ok(name)
        }
        _ => Err(ApiError::invalid(
            &rt.kind,
            &rt.group,
            "",
            &[(
                "FieldValueRequired".into(),
                "metadata.name".into(),
                "Required value: name or generateName is required".into(),
            )],
        )),
    }
}

/// Five lowercase alphanumerics, like apiserver's generateName suffix (no vowels, to
/// avoid words).
fn random_suffix(rng: &mut SimRng) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// A version-4-shaped UUID from the seeded stream.
fn random_uid(rng: &mut SimRng) -> String {
    let a: u128 = rng.random();
    let a = (a & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let h = format!("{a:032x}");
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}
