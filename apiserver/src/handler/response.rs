//! Building responses: JSON documents, plain text, `Status` errors and watch lines.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::Full;
use http_body_util::combinators::UnsyncBoxBody;
use serde_json::{Value, json};

use crate::error::ApiError;

/// The response body type: a whole JSON document or a watch stream.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The `Status` response for a failed request. A `Status` naming a retry delay also names it
/// in a `Retry-After` header, which clients (client-go, the controller's) wait out and retry
/// by themselves (k8s.io/apiserver `endpoints/handlers/responsewriters/writers.go`
/// `ErrorNegotiated`: "check to see if the status indicates a retry after period").
pub fn error_response(e: &ApiError) -> Response<Body> {
    let mut resp =
        json_response(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &e.to_status());
    let delay = e.details.as_ref().and_then(|d| d.get("retryAfterSeconds")).and_then(serde_json::Value::as_u64);
    if let Some(seconds) = delay.filter(|s| *s > 0) {
        resp.headers_mut().insert(header::RETRY_AFTER, http::HeaderValue::from(seconds));
    }
    resp
}

/// A `Status` of kind `Success` (binding and eviction answer with it).
pub(super) fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// A JSON response.
pub(super) fn json_response(code: StatusCode, v: &impl serde::Serialize) -> Response<Body> {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    bytes_response(code, "application/json", Bytes::from(bytes))
}

/// A plain-text response (health checks).
pub(super) fn text_response(code: StatusCode, s: &'static str) -> Response<Body> {
    bytes_response(code, "text/plain", Bytes::from_static(s.as_bytes()))
}

/// A response with a ready body.
pub(super) fn bytes_response(code: StatusCode, content_type: &'static str, b: Bytes) -> Response<Body> {
    let mut resp = Response::new(UnsyncBoxBody::new(Full::new(b)));
    *resp.status_mut() = code;
    resp.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    resp
}

/// One line of a watch stream: `{"type": ..., "object": ...}` and a newline.
pub(super) fn watch_line(kind: &str, obj: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": obj})).unwrap_or_default();
    line.push(b'\n');
    line
}
