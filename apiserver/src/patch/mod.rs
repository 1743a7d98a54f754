//! PATCH bodies applied as a real kube-apiserver applies them: JSON patch (RFC 6902),
//! JSON merge patch (RFC 7386), strategic merge patch and server-side apply.
//!
//! The handler picks a [`PatchType`] from the request's `Content-Type`, builds the kind's
//! [`PatchSchema`] (from the built-in table or the CRD's `openAPIV3Schema`) and calls
//! [`patch`], or [`apply_create`] when an apply targets an object that does not exist yet.
//! Non-apply writes record their field ownership with [`record_update`].
//! Everything here is pure: no clock (the caller passes the timestamp), no I/O.
//!
//! ```
//! use dovetail_apiserver::patch::{ApplyOptions, PatchSchema, PatchType, patch, record_update};
//! use serde_json::json;
//!
//! let schema = PatchSchema::builtin("Pod").unwrap();
//! let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
//!                   "spec": {"containers": [{"name": "app", "image": "app:1"}]}});
//! let body = br#"{"spec":{"containers":[{"name":"app","image":"app:2"}]}}"#;
//! let opts = ApplyOptions::new("kubectl-patch").at("2026-01-01T00:00:00Z");
//! let patched = patch(PatchType::StrategicMerge, &live, body, &schema, &opts).unwrap();
//! let stored = record_update(&live, &patched, &schema, &opts);
//! assert_eq!(stored["spec"]["containers"][0]["image"], "app:2");
//! assert_eq!(stored["metadata"]["managedFields"][0]["operation"], "Update");
//! ```

mod apply;
mod builtin;
mod error;
mod fieldset;
mod json;
mod kind_schema;
mod managed;
pub mod merge;
mod schema;
mod strategic;
mod typed;

use serde_json::Value;

pub use apply::{ApplyOptions, manager_or_user_agent, record_update};
pub use error::{ConflictCause, PatchError};
pub use fieldset::{FieldSet, PathElement};
pub use kind_schema::PatchSchema;
pub use schema::{FieldSchema, ListType, Shape};

/// The four PATCH content types the apiserver understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply; the body may be YAML (kubectl) or
    /// JSON (kube-rs `Patch::Apply`).
    Apply,
}

impl PatchType {
    /// Parses a `Content-Type` header value, ignoring parameters such as `charset`.
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match media.as_str() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }

    /// The canonical media type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// The 415 the apiserver answers for a content type the resource does not accept; custom
/// resources do not accept strategic merge patch.
pub fn unsupported_media_type(schema: &PatchSchema) -> PatchError {
    let mut accepted = vec![PatchType::Json.content_type(), PatchType::Merge.content_type()];
    if schema.supports_strategic_merge() {
        accepted.push(PatchType::StrategicMerge.content_type());
    }
    accepted.push(PatchType::Apply.content_type());
    PatchError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: {}",
        accepted.join(", ")
    ))
}

/// Applies a PATCH body to the live object and returns the new object.
///
/// For [`PatchType::Apply`] the result carries updated `metadata.managedFields`; for the
/// other types `managedFields` is left as the patch leaves it, and the handler records the
/// write with [`record_update`].
///
/// # Errors
/// See [`PatchError`]: 400 for malformed bodies, 415 for strategic merge on a custom
/// resource, 422 for failed JSON patch operations, 409 for apply conflicts.
pub fn patch(
    patch_type: PatchType,
    current: &Value,
    body: &[u8],
    schema: &PatchSchema,
    opts: &ApplyOptions,
) -> Result<Value, PatchError> {
    validate_options(patch_type, opts)?;
    match patch_type {
        PatchType::Json => json::apply(current, body),
        PatchType::Merge => {
            let patch = decode_json_object(body, "merge patch")?;
            Ok(merge::apply(current, &patch))
        }
        PatchType::StrategicMerge => {
            if !schema.supports_strategic_merge() {
                return Err(unsupported_media_type(schema));
            }
            let patch = decode_json_object(body, "strategic merge patch")?;
            strategic::apply(current, &patch, schema.root())
        }
        PatchType::Apply => {
            let config = decode_apply(body)?;
            apply::apply(current, &config, schema, opts)
        }
    }
}

/// Server-side apply to an object that does not exist: the apiserver creates it from the
/// applied configuration, owned by the applying manager.
///
/// # Errors
/// As [`patch`] with [`PatchType::Apply`].
pub fn apply_create(body: &[u8], schema: &PatchSchema, opts: &ApplyOptions) -> Result<Value, PatchError> {
    validate_options(PatchType::Apply, opts)?;
    let config = decode_apply(body)?;
    apply::apply(&Value::Object(serde_json::Map::new()), &config, schema, opts)
}

/// apiserver `ValidatePatchOptions`: apply needs a field manager, only apply may force.
/// Both failures are 422 Invalid on `PatchOptions`.
pub fn validate_options(patch_type: PatchType, opts: &ApplyOptions) -> Result<(), PatchError> {
    let invalid =
        |detail: &str| PatchError::Unprocessable(format!("PatchOptions.meta.k8s.io \"\" is invalid: {detail}"));
    match patch_type {
        PatchType::Apply if opts.field_manager.is_empty() => {
            Err(invalid("fieldManager: Required value: is required for apply patch"))
        }
        PatchType::Json | PatchType::Merge | PatchType::StrategicMerge if opts.force => {
            Err(invalid("force: Forbidden: may not be specified for non-apply patch"))
        }
        _ => Ok(()),
    }
}

fn decode_json_object(body: &[u8], what: &str) -> Result<Value, PatchError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON in {what} body: {e}")))?;
    if !value.is_object() {
        return Err(PatchError::BadRequest(format!("a {what} body must be a JSON object")));
    }
    Ok(value)
}

/// Apply bodies are YAML; JSON is YAML too, but is decoded as JSON first to keep its exact
/// numbers and strings.
fn decode_apply(body: &[u8]) -> Result<Value, PatchError> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => {
            serde_saphyr::from_slice(body).map_err(|e| PatchError::BadRequest(format!("error decoding YAML: {e}")))?
        }
    };
    if !value.is_object() {
        return Err(PatchError::BadRequest("an apply configuration must be an object".to_string()));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types_map_to_patch_types() {
        assert_eq!(PatchType::from_content_type("application/json-patch+json"), Some(PatchType::Json));
        assert_eq!(PatchType::from_content_type("application/merge-patch+json; charset=utf-8"), Some(PatchType::Merge));
        assert_eq!(
            PatchType::from_content_type("application/strategic-merge-patch+json"),
            Some(PatchType::StrategicMerge)
        );
        assert_eq!(PatchType::from_content_type("application/apply-patch+yaml"), Some(PatchType::Apply));
        assert_eq!(PatchType::from_content_type("application/json"), None);
    }

    #[test]
    fn strategic_merge_on_a_custom_resource_is_unsupported_media_type() {
        let schema = PatchSchema::from_crd(None, true);
        let err = patch(PatchType::StrategicMerge, &json!({}), b"{}", &schema, &ApplyOptions::new("t")).unwrap_err();
        assert_eq!(err.status_code(), 415);
        assert_eq!(
            err.to_string(),
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
    }

    #[test]
    fn merge_patch_body_must_be_a_json_object() {
        let schema = PatchSchema::builtin("Pod").unwrap();
        let opts = ApplyOptions::new("t");
        assert_eq!(patch(PatchType::Merge, &json!({}), b"{", &schema, &opts).unwrap_err().status_code(), 400);
        assert_eq!(patch(PatchType::Merge, &json!({}), b"[1]", &schema, &opts).unwrap_err().status_code(), 400);
        let out = patch(PatchType::Merge, &json!({"a": 1}), br#"{"b": 2}"#, &schema, &opts).unwrap();
        assert_eq!(out, json!({"a": 1, "b": 2}));
    }

    #[test]
    fn apply_needs_a_field_manager_and_only_apply_may_force() {
        let schema = PatchSchema::builtin("Pod").unwrap();
        let body = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}"#;
        let err = patch(PatchType::Apply, &json!({}), body, &schema, &ApplyOptions::new("")).unwrap_err();
        assert_eq!(err.status_code(), 422);
        assert!(err.to_string().ends_with("fieldManager: Required value: is required for apply patch"));
        let forced = ApplyOptions::new("m").force(true);
        assert_eq!(patch(PatchType::Merge, &json!({}), b"{}", &schema, &forced).unwrap_err().status_code(), 422);
    }

    #[test]
    fn kube_rs_json_apply_goes_through_patch() {
        let schema = PatchSchema::builtin("Pod").unwrap();
        let live =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u1", "resourceVersion": "7"}});
        let body = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}}}"#;
        let out = patch(PatchType::Apply, &live, body, &schema, &ApplyOptions::new("kube-rs")).unwrap();
        assert_eq!(out["metadata"]["uid"], json!("u1"));
        assert_eq!(out["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(out["metadata"]["managedFields"][0]["fieldsV1"], json!({"f:metadata": {"f:labels": {"f:a": {}}}}));
    }

    #[test]
    fn apply_accepts_yaml_bodies_from_kubectl() {
        let schema = PatchSchema::builtin("Deployment").unwrap();
        let yaml = b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n";
        let out = apply_create(yaml, &schema, &ApplyOptions::new("kubectl")).unwrap();
        assert_eq!(out["spec"]["replicas"], json!(3));
        assert_eq!(out["metadata"]["managedFields"][0]["manager"], json!("kubectl"));
        let bad = apply_create(b"a: [", &schema, &ApplyOptions::new("kubectl")).unwrap_err();
        assert_eq!(bad.status_code(), 400);
    }
}
