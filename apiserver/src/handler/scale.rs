//! The `scale` subresource of Deployments, ReplicaSets and StatefulSets: an
//! autoscaling/v1 `Scale` view of the object's replica count, read with GET and written
//! with PUT or PATCH, as kube-apiserver serves it (`pkg/registry/apps/deployment/storage`
//! `ScaleREST`). `kubectl scale` patches it (merge patch `{"spec":{"replicas":N}}`, or a
//! PUT when it has a resourceVersion precondition), and so do HPAs and KEDA.

use http::{Response, StatusCode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use serde_json::{Value, json};

use super::request::ResourceRequest;
use super::response::{Body, json_response};
use crate::ApiServer;
use crate::error::{ApiError, ApiResult};
use crate::patch::{self, PatchType};
use crate::resources::ResourceType;
use crate::selector::LabelSelector;
use crate::store::{Part, Store};

impl ApiServer {
    /// GET `<workload>/<name>/scale`.
    pub(super) fn serve_get_scale(&self, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
        let s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let obj = s.get(&req.rt, req.namespace(), name)?;
        Ok(json_response(StatusCode::OK, &scale_of(&obj)?))
    }

    /// PUT `<workload>/<name>/scale`: sets `spec.replicas` from the Scale's; a Scale that
    /// carries a resourceVersion must carry the object's current one (409 otherwise).
    pub(super) fn serve_update_scale(&self, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
        let scale = req.decoded_body()?;
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let updated = write_replicas(&mut s, req, name, &scale)?;
        Ok(json_response(StatusCode::OK, &scale_of(&updated)?))
    }

    /// PATCH `<workload>/<name>/scale`: the patch applies to the Scale view, whose new
    /// `spec.replicas` is then written to the object. A Scale has no lists, so a strategic
    /// merge patch merges as a JSON merge patch does.
    pub(super) fn serve_patch_scale(&self, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
        let pt = match PatchType::from_content_type(req.content_type) {
            Some(PatchType::StrategicMerge) => PatchType::Merge,
            Some(pt @ (PatchType::Merge | PatchType::Json)) => pt,
            _ => {
                return Err(ApiError::unsupported_media_type(format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {})",
                    req.content_type
                )));
            }
        };
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let current = scale_of(&*s.get(&req.rt, req.namespace(), name)?)?;
        let opts = patch::ApplyOptions::new(req.query.field_manager.as_deref().unwrap_or(""));
        let patched = patch::patch(pt, &current, req.body, &patch::PatchSchema::from_crd(None, false), &opts)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let updated = write_replicas(&mut s, req, name, &patched)?;
        Ok(json_response(StatusCode::OK, &scale_of(&updated)?))
    }
}

/// Writes the Scale's `spec.replicas` into the object, keeping the Scale's resourceVersion
/// (if any) as the update's precondition.
fn write_replicas(
    s: &mut Store,
    req: &ResourceRequest<'_>,
    name: &str,
    scale: &Value,
) -> ApiResult<std::sync::Arc<Value>> {
    let replicas = desired_replicas(&req.rt, name, scale)?;
    let mut obj = (*s.get(&req.rt, req.namespace(), name)?).clone();
    match scale.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|rv| !rv.is_empty()) {
        Some(rv) => obj["metadata"]["resourceVersion"] = json!(rv),
        None => {
            obj["metadata"].as_object_mut().map(|m| m.remove("resourceVersion"));
        }
    }
    obj["spec"]["replicas"] = json!(replicas);
    s.update(&req.rt, req.namespace(), name, obj, Part::Main, req.query.write())
}

/// The Scale's `spec.replicas`, validated as kube-apiserver validates a Scale
/// (`ValidateScale`: must be greater than or equal to 0).
fn desired_replicas(rt: &ResourceType, name: &str, scale: &Value) -> ApiResult<i64> {
    let invalid = |why: String| {
        ApiError::invalid("Scale", "autoscaling", name, &[("FieldValueInvalid".into(), "spec.replicas".into(), why)])
    };
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 && n <= i64::from(i32::MAX) => Ok(n),
            Some(n) if n < 0 => Err(invalid(format!("Invalid value: {n}: must be greater than or equal to 0"))),
            Some(n) => Err(invalid(format!("Invalid value: {n}: must be no more than 2147483647"))),
            None => Err(ApiError::bad_request(format!(
                "{}/{name} scale: spec.replicas must be an integer, got {v}",
                rt.group_resource()
            ))),
        },
    }
}

/// The autoscaling/v1 Scale view of a workload: its identity, desired replicas, and the
/// observed replicas with the pod selector in its string form.
fn scale_of(obj: &Value) -> ApiResult<Value> {
    let meta = &obj["metadata"];
    let mut metadata = serde_json::Map::new();
    for key in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(key) {
            metadata.insert(key.into(), v.clone());
        }
    }
    let replicas = obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let mut spec = json!({});
    // autoscaling/v1 ScaleSpec.replicas is `omitempty`.
    if replicas != 0 {
        spec["replicas"] = json!(replicas);
    }
    let mut status = json!({"replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0)});
    if let Some(selector) = obj.pointer("/spec/selector") {
        let selector: metav1::LabelSelector = serde_json::from_value(selector.clone())
            .map_err(|e| ApiError::internal(format!("the stored spec.selector does not parse: {e}")))?;
        let selector =
            LabelSelector::from_api(&selector).map_err(|e| ApiError::internal(format!("spec.selector: {e}")))?;
        status["selector"] = json!(selector.to_string());
    }
    Ok(json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata, "spec": spec, "status": status}))
}
