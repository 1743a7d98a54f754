//! Delete of one object and deletecollection, with `metav1.DeleteOptions` from the body
//! or the query.

use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::matcher::matcher;
use super::request::ResourceRequest;
use super::response::{Body, json_response};
use crate::ApiServer;
use crate::error::{ApiError, ApiResult};
use crate::store::{DeleteOptions, Propagation};

impl ApiServer {
    /// DELETE of one object: 200 when it is gone, 202 while finalizers or a grace period
    /// hold it.
    pub(super) fn serve_delete(&self, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
        let opts = delete_options(req)?;
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let obj = s.delete(&req.rt, req.namespace(), name, &opts)?;
        let gone = s.get(&req.rt, req.namespace(), name).is_err();
        Ok(json_response(if gone { StatusCode::OK } else { StatusCode::ACCEPTED }, &*obj))
    }

    /// DELETE of a collection: deletes every matching object and lists their last states.
    pub(super) fn serve_delete_collection(&self, req: &ResourceRequest<'_>) -> ApiResult<Response<Body>> {
        let rt = &req.rt;
        let opts = delete_options(req)?;
        let matcher = matcher(rt, &req.query)?;
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let page = s.list(rt, req.scope(), Some(&matcher), None, None)?;
        let mut items = Vec::new();
        for obj in page.items {
            let ns = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
            let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
            items.push((*s.delete(rt, &ns, &name, &opts)?).clone());
        }
        let list =
            json!({"apiVersion": rt.api_version(), "kind": format!("{}List", rt.kind), "metadata": {}, "items": items});
        Ok(json_response(StatusCode::OK, &list))
    }
}

/// `metav1.DeleteOptions` from the body (JSON, or protobuf as client-go's typed clients send
/// it), falling back to the query parameters.
fn delete_options(req: &ResourceRequest<'_>) -> ApiResult<DeleteOptions> {
    let q = &req.query;
    let b: Value = if req.body.is_empty() { json!({}) } else { req.decoded_body()? };
    let propagation = b["propagationPolicy"].as_str().map(String::from).or_else(|| q.propagation.clone());
    let propagation = match propagation.as_deref() {
        None | Some("Background") => Propagation::Background,
        Some("Foreground") => Propagation::Foreground,
        Some("Orphan") => Propagation::Orphan,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
            )));
        }
    };
    let propagation = if b["orphanDependents"].as_bool() == Some(true) { Propagation::Orphan } else { propagation };
    Ok(DeleteOptions {
        grace_period_seconds: b["gracePeriodSeconds"].as_i64().or(q.grace_period_seconds),
        propagation,
        precondition_uid: b.pointer("/preconditions/uid").and_then(Value::as_str).map(String::from),
        precondition_rv: b.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(String::from),
        dry_run: q.dry_run || b["dryRun"].as_array().is_some_and(|a| a.iter().any(|x| x == "All")),
    })
}
