//! Update (PUT) and patch (PATCH, in all four patch types, including server-side apply
//! that creates), of the main resource or its status subresource.

use std::sync::Arc;

use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::request::ResourceRequest;
use super::response::{Body, json_response};
use crate::ApiServer;
use crate::error::{ApiError, ApiResult};
use crate::patch::{self, PatchType};
use crate::resources::ResourceType;
use crate::store::Part;

impl ApiServer {
    /// PUT of a whole object: 200 with the stored object.
    pub(super) fn serve_update(&self, req: &ResourceRequest<'_>, name: &str, part: Part) -> ApiResult<Response<Body>> {
        let obj = req.decoded_body()?;
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let updated = s.update(&req.rt, req.namespace(), name, obj, part, req.query.write())?;
        Ok(json_response(StatusCode::OK, &*updated))
    }

    /// PATCH: 200 with the patched object, or 201 when an apply created it.
    pub(super) fn serve_patch(&self, req: &ResourceRequest<'_>, name: &str, part: Part) -> ApiResult<Response<Body>> {
        let (obj, created) = self.patch(req, name, part)?;
        let code = if created { StatusCode::CREATED } else { StatusCode::OK };
        Ok(json_response(code, &*obj))
    }

    /// Applies a patch to the latest version of the object; returns the stored object and
    /// whether a server-side apply created it.
    fn patch(&self, req: &ResourceRequest<'_>, name: &str, part: Part) -> ApiResult<(Arc<Value>, bool)> {
        let (rt, ns, q, content_type) = (&req.rt, req.namespace(), &req.query, req.content_type);
        let pt = PatchType::from_content_type(content_type)
            .ok_or_else(|| ApiError::unsupported_media_type(format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type})")))?;
        if pt == PatchType::StrategicMerge && !patch_schema(rt).supports_strategic_merge() {
            return Err(patch_error(patch::unsupported_media_type(&patch_schema(rt))));
        }
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let mut opts = patch::ApplyOptions::new(q.field_manager.as_deref().unwrap_or(""))
            .force(q.force)
            .at(&s.clock().now_rfc3339());
        if part == Part::Status {
            opts = opts.subresource("status");
        }
        patch::validate_options(pt, &opts).map_err(patch_error)?;
        let schema = patch_schema(rt);
        let current = match s.get(rt, ns, name) {
            Ok(c) => c,
            Err(e) if e.code == 404 && pt == PatchType::Apply && part == Part::Main => {
                let obj = patch::apply_create(req.body, &schema, &opts).map_err(patch_error)?;
                return Ok((s.create(rt, ns, obj, q.write())?, true));
            }
            Err(e) => return Err(e),
        };
        let mut patched = patch::patch(pt, &current, req.body, &schema, &opts).map_err(patch_error)?;
        // A patch is applied to the latest version: concurrency is only enforced when the
        // patch itself carries a resourceVersion.
        let patch_rv = patched.pointer("/metadata/resourceVersion").cloned();
        if patch_rv.as_ref() == current.pointer("/metadata/resourceVersion") {
            patched["metadata"].as_object_mut().map(|m| m.remove("resourceVersion"));
        }
        Ok((s.update(rt, ns, name, patched, part, q.write())?, false))
    }
}

/// A patch failure as the API server reports it: field-manager conflicts and invalid
/// results carry their causes.
fn patch_error(e: patch::PatchError) -> ApiError {
    let code = e.status_code();
    let reason = e.reason();
    let mut err = match &e {
        patch::PatchError::Unprocessable(cause) => ApiError {
            code,
            reason,
            message: "the server rejected our request due to an error in our request".into(),
            details: Some(json!({"causes": [{"reason": "FieldValueInvalid", "message": cause}]})),
        },
        _ => ApiError { code, reason, message: e.to_string(), details: None },
    };
    if let patch::PatchError::Conflict { causes, .. } = &e {
        err.details = Some(
            json!({"causes": causes.iter().map(|c| json!({"reason": "FieldManagerConflict", "message": c.message, "field": c.field})).collect::<Vec<_>>()}),
        );
    }
    err
}

/// How patches merge lists of this type: the built-in table, or the CRD's list types.
fn patch_schema(rt: &ResourceType) -> patch::PatchSchema {
    if let Some(crd) = &rt.crd
        && let Some(s) = patch::PatchSchema::from_crd_manifest(crd, &rt.version)
    {
        return s;
    }
    patch::PatchSchema::builtin(&rt.kind).unwrap_or_else(|| patch::PatchSchema::from_crd(None, rt.status_subresource))
}
