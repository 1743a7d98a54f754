//! REST: routing Kubernetes API paths and verbs onto the store.
//!
//! Paths, query parameters, status codes and bodies follow the real API server closely
//! enough for unmodified kube-rs clients and kubectl: discovery, list (with label and
//! field selectors and pagination), watch (initial events, resume, bookmarks, 410),
//! get, create, update, patch, delete, deletecollection, the status, binding and
//! eviction subresources, and `scale` for Deployments, ReplicaSets and StatefulSets.
//!
//! This file routes a request to its verb. Beside it: `guard.rs` (body size limit,
//! cross-origin writes refused), `request.rs` (path, query and body parsing),
//! `response.rs`, `discovery.rs`, `audit_hook.rs`, `matcher.rs` (selectors), and one file
//! per verb family: `read.rs` (get, list), `create.rs`, `update.rs` (update, patch),
//! `delete.rs` (delete, deletecollection), `watch.rs`, `subresources.rs` (binding,
//! eviction) and `scale.rs` (the scale subresource).

mod audit_hook;
mod create;
mod delete;
mod discovery;
mod guard;
mod matcher;
mod read;
mod request;
mod response;
mod scale;
mod subresources;
mod update;
mod watch;

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, header};

use super::ApiServer;
use super::error::{ApiError, ApiResult};
use super::resources::ResourceType;
use request::{Query, ResourceRequest, Target, parse_path};
use subresources::{is_pods, part_of};

pub use response::{Body, error_response};

impl ApiServer {
    /// Serves one HTTP request from an unnamed client.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        self.handle_from("", req).await
    }

    /// Serves one HTTP request from the host `peer`; mutating requests pass the audit hook.
    pub async fn handle_from<B>(&self, peer: &str, req: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        let audit = self.audit_request(peer, &req);
        let resp = self.serve_request(req).await;
        if let Some(request) = audit {
            self.audit_response(&request, resp.status().as_u16());
        }
        resp
    }

    async fn serve_request<B>(&self, req: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        let (parts, body) = req.into_parts();
        if let Err(e) = guard::refuse_cross_origin_write(&parts.method, &parts.headers) {
            return error_response(&e);
        }
        let bytes = match guard::read_body(body, guard::MAX_REQUEST_BODY_BYTES).await {
            Ok(b) => b,
            Err(e) => return error_response(&e),
        };
        let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_string();
        match self.route(&parts.method, &parts.uri, &accept, &content_type, &bytes) {
            Ok(resp) => {
                if let Some(read::AnswerLate(delay)) = resp.extensions().get::<read::AnswerLate>().copied() {
                    tokio::time::sleep(delay).await;
                }
                resp
            }
            Err(e) => error_response(&e),
        }
    }

    /// Answers discovery paths, or resolves the resource type and dispatches on the verb.
    fn route(
        &self,
        method: &Method,
        uri: &http::Uri,
        accept: &str,
        content_type: &str,
        body: &[u8],
    ) -> ApiResult<Response<Body>> {
        let path = uri.path();
        if let Some(resp) = self.serve_discovery(path, accept) {
            return resp;
        }
        let target = parse_path(path).ok_or_else(|| ApiError::not_found("", "", path))?;
        let rt = self.served_type(method, path, &target)?;
        let query = Query::parse(uri.query())?;
        self.inject_fault(method, &rt)?;
        let table = accept.contains("as=Table");
        let req = ResourceRequest { rt, target, query, content_type, body, table };
        self.dispatch(method, &req)
    }

    /// The served type a resource path names, if the path's namespacing fits it (a
    /// namespaced type is also listed across namespaces without one).
    fn served_type(&self, method: &Method, path: &str, target: &Target) -> ApiResult<Arc<ResourceType>> {
        let rt = self
            .store
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .registry()
            .get(&target.group, &target.plural)
            .filter(|t| t.version == target.version)
            .ok_or_else(|| {
                ApiError::not_found(
                    "",
                    "",
                    &format!("the server could not find the requested resource ({method} {path})"),
                )
            })?;
        if rt.namespaced != target.namespace.is_some()
            && !(target.namespace.is_none() && target.name.is_none() && *method == Method::GET)
        {
            return Err(ApiError::not_found(&rt.plural, &rt.group, target.name.as_deref().unwrap_or("")));
        }
        Ok(rt)
    }

    /// One verb on one routed request.
    fn dispatch(&self, method: &Method, req: &ResourceRequest<'_>) -> ApiResult<Response<Body>> {
        let rt = &req.rt;
        match (method.clone(), req.target.name.as_deref(), req.target.sub.as_deref()) {
            (Method::GET, None, None) if req.query.watch => self.serve_watch(req),
            (Method::GET, None, None) => self.serve_list(req),
            (Method::GET, Some(name), None | Some("status")) => self.serve_get(req, name),
            (Method::GET, Some(name), Some("scale")) if rt.has_scale() => self.serve_get_scale(req, name),
            (Method::PUT, Some(name), Some("scale")) if rt.has_scale() => self.serve_update_scale(req, name),
            (Method::PATCH, Some(name), Some("scale")) if rt.has_scale() => self.serve_patch_scale(req, name),
            (Method::POST, None, None) => self.serve_create(req),
            (Method::PUT, Some(name), sub @ (None | Some("status"))) => self.serve_update(req, name, part_of(rt, sub)?),
            (Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
                self.serve_patch(req, name, part_of(rt, sub)?)
            }
            (Method::DELETE, Some(name), None) => self.serve_delete(req, name),
            (Method::DELETE, None, None) => self.serve_delete_collection(req),
            (Method::POST, Some(name), Some("binding")) if is_pods(rt) => self.serve_binding(req, name),
            (Method::POST, Some(name), Some("eviction")) if is_pods(rt) => self.serve_eviction(req, name),
            (m, _, sub) => Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({m} {}{})",
                rt.group_resource(),
                sub.map(|s| format!("/{s}")).unwrap_or_default()
            ))),
        }
    }

    /// Draws whether this request fails with an injected API error, and traces it if so.
    fn inject_fault(&self, method: &Method, rt: &ResourceType) -> ApiResult<()> {
        let result = self.faults.lock().unwrap_or_else(|e| e.into_inner()).check(method, rt);
        if let Err(e) = &result {
            let s = self.store.lock().unwrap_or_else(|e| e.into_inner());
            s.trace().record(dovetail_world::TraceEntry {
                at: s.elapsed(),
                source: "fault",
                verb: format!("api-{}", e.code),
                subject: format!("{method} {}", rt.group_resource()),
            });
        }
        result
    }
}
