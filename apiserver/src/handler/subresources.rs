//! The subresources besides status: `pods/binding` (the scheduler's bind) and
//! `pods/eviction` (a PDB-guarded delete); and which part of an object a write targets.

use http::{Response, StatusCode};
use serde_json::Value;

use super::request::ResourceRequest;
use super::response::{Body, json_response, success};
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use crate::store::Part;
use crate::{ApiServer, binding, eviction};

impl ApiServer {
    /// POST `pods/<name>/binding`: assigns the pod to the Binding's target node.
    pub(super) fn serve_binding(&self, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
        let binding = req.decoded_body()?;
        let node = binding.pointer("/target/name").and_then(Value::as_str).unwrap_or("");
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        binding::bind(&mut s, req.namespace(), name, node)?;
        Ok(json_response(StatusCode::CREATED, &success(201)))
    }

    /// POST `pods/<name>/eviction`: deletes the pod if its disruption budgets allow.
    pub(super) fn serve_eviction(&self, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
        let ev = req.decoded_body()?;
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        eviction::evict(&mut s, req.namespace(), name, &ev)?;
        Ok(json_response(StatusCode::CREATED, &success(201)))
    }
}

/// Whether the type is core/v1 pods (the only type with binding and eviction).
pub(super) fn is_pods(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "pods"
}

/// Which part of the object a PUT or PATCH writes: the main resource, or `status` for
/// types with a status subresource.
pub(super) fn part_of(rt: &ResourceType, sub: Option<&str>) -> ApiResult<Part> {
    match sub {
        None => Ok(Part::Main),
        Some("status") if rt.status_subresource => Ok(Part::Status),
        Some(s) => Err(ApiError::not_found("", "", &format!("{}/{s}", rt.group_resource()))),
    }
}
