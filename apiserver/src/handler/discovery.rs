//! Paths that name no resource: version, health checks, API discovery and the (empty)
//! OpenAPI document kubectl downloads.

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::response::{Body, bytes_response, json_response, text_response};
use crate::ApiServer;
use crate::error::{ApiError, ApiResult};

impl ApiServer {
    /// Answers version, health, discovery and OpenAPI paths; `None` for every other path.
    pub(super) fn serve_discovery(&self, path: &str, accept: &str) -> Option<ApiResult<Response<Body>>> {
        let store = || self.store.lock().unwrap_or_else(|e| e.into_inner());
        match path.trim_end_matches('/') {
            "/version" => return Some(Ok(json_response(StatusCode::OK, &version_info()))),
            "/healthz" | "/readyz" | "/livez" => return Some(Ok(text_response(StatusCode::OK, "ok"))),
            "/api" => return Some(Ok(json_response(StatusCode::OK, &store().registry().core_versions()))),
            "/apis" => return Some(Ok(json_response(StatusCode::OK, &store().registry().group_list()))),
            _ => {}
        }
        if path == "/openapi/v2" {
            return Some(Ok(openapi_v2(accept)));
        }
        if path.starts_with("/openapi/") {
            return Some(Err(ApiError::not_found("openapi", "", path)));
        }
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        let document = match segs.as_slice() {
            ["api", v] => store().registry().resource_list("", v),
            ["apis", g] => store().registry().group(g),
            ["apis", g, v] => store().registry().resource_list(g, v),
            _ => return None,
        };
        Some(document.map(|d| json_response(StatusCode::OK, &d)).ok_or_else(|| ApiError::not_found("", "", path)))
    }
}

/// An OpenAPI v2 document with no definitions. kubectl downloads it (as protobuf) to
/// validate manifests client-side and skips types it does not describe; schema checks
/// then happen where they belong, in the server's admission.
fn openapi_v2(accept: &str) -> Response<Body> {
    if accept.contains("protobuf") {
        // openapi_v2.Document{swagger: "2.0", info: {title: "dovetail", version: "v1.34.0"}}
        let mut doc = vec![0x0a, 3];
        doc.extend_from_slice(b"2.0");
        let info = [&[0x0a, 8][..], b"dovetail", &[0x12, 7][..], b"v1.34.0"].concat();
        doc.push(0x12);
        doc.push(info.len() as u8);
        doc.extend_from_slice(&info);
        return bytes_response(
            StatusCode::OK,
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            Bytes::from(doc),
        );
    }
    json_response(
        StatusCode::OK,
        &json!({"swagger": "2.0", "info": {"title": "dovetail", "version": "v1.34.0"}, "paths": {}, "definitions": {}}),
    )
}

/// What `/version` reports: the Kubernetes release the server imitates.
fn version_info() -> Value {
    json!({
        "major": "1", "minor": "34", "gitVersion": "v1.34.0-dovetail", "gitCommit": "dovetail",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
        "compiler": "gc", "platform": "linux/amd64",
    })
}
