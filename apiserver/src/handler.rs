//! REST: routing Kubernetes API paths and verbs onto the store.
//!
//! Paths, query parameters, status codes and bodies follow the real API server closely
//! enough for unmodified kube-rs clients and kubectl: discovery, list (with label and
//! field selectors and pagination), watch (initial events, resume, bookmarks, 410),
//! get, create, update, patch, delete, deletecollection, and the status, binding and
//! eviction subresources.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};

use super::ApiServer;
use super::audit::AuditRequest;
use super::error::{ApiError, ApiResult};
use super::eviction;
use super::patch::{self, PatchType};
use super::resources::ResourceType;
use super::selector::{FieldSelector, LabelSelector};
use super::store::{DeleteOptions, Matcher, Part, Propagation, WatchMsg, WatchStart, WriteOptions};

/// The response body type: a whole JSON document or a watch stream.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A parsed API path.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    group: String,
    version: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    sub: Option<String>,
}

/// Query parameters the server understands.
#[derive(Debug, Default)]
struct Query {
    watch: bool,
    label_selector: Option<String>,
    field_selector: Option<String>,
    limit: Option<usize>,
    continue_token: Option<String>,
    resource_version: Option<String>,
    timeout_seconds: Option<u64>,
    allow_bookmarks: bool,
    send_initial_events: bool,
    field_manager: Option<String>,
    force: bool,
    dry_run: bool,
    propagation: Option<String>,
    grace_period_seconds: Option<i64>,
    strict: bool,
}

impl Query {
    fn write(&self) -> WriteOptions {
        WriteOptions { dry_run: self.dry_run, strict: self.strict }
    }

    fn parse(q: Option<&str>) -> ApiResult<Self> {
        let mut out = Query::default();
        for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
            let truthy = v == "true" || v == "1";
            match &*k {
                "watch" => out.watch = truthy,
                "labelSelector" => out.label_selector = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "fieldSelector" => out.field_selector = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "limit" => {
                    let l: i64 = v.parse().map_err(|_| ApiError::bad_request(format!("invalid limit: {v}")))?;
                    out.limit = (l > 0).then_some(l as usize);
                }
                "continue" => out.continue_token = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "resourceVersion" => out.resource_version = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "timeoutSeconds" => out.timeout_seconds = v.parse().ok(),
                "allowWatchBookmarks" => out.allow_bookmarks = truthy,
                "sendInitialEvents" => out.send_initial_events = truthy,
                "fieldManager" => out.field_manager = Some(v.into_owned()),
                "force" => out.force = truthy,
                "dryRun" => out.dry_run = v == "All",
                "propagationPolicy" => out.propagation = Some(v.into_owned()),
                "gracePeriodSeconds" => out.grace_period_seconds = v.parse().ok(),
                "fieldValidation" => out.strict = v == "Strict",
                _ => {}
            }
        }
        Ok(out)
    }
}

fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => (String::new(), v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (g.to_string(), v.to_string(), rest),
        _ => return None,
    };
    let (namespace, rest): (Option<String>, &[&str]) = match rest {
        ["namespaces", ns, r, ..] if !matches!(*r, "status" | "finalize") => (Some(ns.to_string()), &rest[2..]),
        _ => (None, rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (p.to_string(), None, None),
        [p, n] => (p.to_string(), Some(n.to_string()), None),
        [p, n, s] => (p.to_string(), Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    Some(Target { group, version, namespace, plural, name, sub })
}

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
            let position = self.store.lock().unwrap_or_else(|e| e.into_inner()).trace().len();
            self.audit.lock().unwrap_or_else(|e| e.into_inner()).after(&request, resp.status().as_u16(), position);
        }
        resp
    }

    /// Describes a mutating request for the audit hook and shows it to the observers
    /// before it is applied. `None` for reads and unparseable paths.
    fn audit_request<B>(&self, peer: &str, req: &Request<B>) -> Option<AuditRequest> {
        let target = parse_path(req.uri().path())?;
        let verb = match (req.method().clone(), target.name.is_some(), target.sub.as_deref()) {
            (Method::POST, true, Some("eviction")) => "evict",
            (Method::POST, true, Some("binding")) => "bind",
            (Method::POST, false, _) => "create",
            (Method::PUT, true, _) => "update",
            (Method::PATCH, true, _) => "patch",
            (Method::DELETE, true, _) => "delete",
            (Method::DELETE, false, _) => "deletecollection",
            _ => return None,
        };
        let mut audit = self.audit.lock().unwrap_or_else(|e| e.into_inner());
        let request = AuditRequest {
            seq: audit.next_seq(),
            at: self.store.lock().unwrap_or_else(|e| e.into_inner()).elapsed(),
            host: peer.to_string(),
            user_agent: req
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string(),
            verb,
            group: target.group,
            resource: target.plural,
            namespace: target.namespace.unwrap_or_default(),
            name: target.name.unwrap_or_default(),
        };
        if audit.has_observers() {
            let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
            audit.before(&store, &request);
        }
        Some(request)
    }

    async fn serve_request<B>(&self, req: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        let (parts, body) = req.into_parts();
        let bytes = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return error_response(&ApiError::bad_request(format!("reading the request body: {e}"))),
        };
        let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_string();
        match self.route(&parts.method, &parts.uri, &accept, &content_type, bytes).await {
            Ok(resp) => resp,
            Err(e) => error_response(&e),
        }
    }

    async fn route(
        &self,
        method: &Method,
        uri: &http::Uri,
        accept: &str,
        content_type: &str,
        body: Bytes,
    ) -> ApiResult<Response<Body>> {
        let path = uri.path();
        let store = || self.store.lock().unwrap_or_else(|e| e.into_inner());
        match path.trim_end_matches('/') {
            "/version" => return Ok(json_response(StatusCode::OK, &version_info())),
            "/healthz" | "/readyz" | "/livez" => return Ok(text_response(StatusCode::OK, "ok")),
            "/api" => return Ok(json_response(StatusCode::OK, &store().registry().core_versions())),
            "/apis" => return Ok(json_response(StatusCode::OK, &store().registry().group_list())),
            _ => {}
        }
        if path == "/openapi/v2" {
            return Ok(openapi_v2(accept));
        }
        if path.starts_with("/openapi/") {
            return Err(ApiError::not_found("openapi", "", path));
        }
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        match segs.as_slice() {
            ["api", v] => {
                return store()
                    .registry()
                    .resource_list("", v)
                    .map(|l| json_response(StatusCode::OK, &l))
                    .ok_or_else(|| ApiError::not_found("", "", path));
            }
            ["apis", g] => {
                return store()
                    .registry()
                    .group(g)
                    .map(|l| json_response(StatusCode::OK, &l))
                    .ok_or_else(|| ApiError::not_found("", "", path));
            }
            ["apis", g, v] => {
                return store()
                    .registry()
                    .resource_list(g, v)
                    .map(|l| json_response(StatusCode::OK, &l))
                    .ok_or_else(|| ApiError::not_found("", "", path));
            }
            _ => {}
        }
        let target = parse_path(path).ok_or_else(|| ApiError::not_found("", "", path))?;
        let rt =
            store().registry().get(&target.group, &target.plural).filter(|t| t.version == target.version).ok_or_else(
                || {
                    ApiError::not_found(
                        "",
                        "",
                        &format!("the server could not find the requested resource ({method} {path})"),
                    )
                },
            )?;
        if rt.namespaced != target.namespace.is_some()
            && !(target.namespace.is_none() && target.name.is_none() && *method == Method::GET)
        {
            return Err(ApiError::not_found(&rt.plural, &rt.group, target.name.as_deref().unwrap_or("")));
        }
        let q = Query::parse(uri.query())?;
        self.inject_fault(method, &rt)?;
        let ns = target.namespace.clone().unwrap_or_default();
        let table = accept.contains("as=Table");
        match (method.clone(), target.name.as_deref(), target.sub.as_deref()) {
            (Method::GET, None, None) if q.watch => self.watch(&rt, target.namespace.as_deref(), &q, table),
            (Method::GET, None, None) => self.list(&rt, target.namespace.as_deref(), &q, table),
            (Method::GET, Some(name), None | Some("status")) => {
                let obj = store().get(&rt, &ns, name)?;
                if table {
                    return Ok(json_response(StatusCode::OK, &super::table::table(&rt, &[obj], store().elapsed())));
                }
                Ok(json_response(StatusCode::OK, &*obj))
            }
            (Method::POST, None, None) => {
                let obj = decode_body(&body, content_type)?;
                let created = store().create(&rt, &ns, obj, q.write())?;
                Ok(json_response(StatusCode::CREATED, &*created))
            }
            (Method::PUT, Some(name), sub @ (None | Some("status"))) => {
                let part = part_of(&rt, sub)?;
                let obj = decode_body(&body, content_type)?;
                let updated = store().update(&rt, &ns, name, obj, part, q.write())?;
                Ok(json_response(StatusCode::OK, &*updated))
            }
            (Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
                let part = part_of(&rt, sub)?;
                let (obj, created) = self.patch(&rt, &ns, name, part, content_type, &body, &q)?;
                let code = if created { StatusCode::CREATED } else { StatusCode::OK };
                Ok(json_response(code, &*obj))
            }
            (Method::DELETE, Some(name), None) => {
                let opts = delete_options(&body, &q)?;
                let mut s = store();
                let obj = s.delete(&rt, &ns, name, &opts)?;
                let gone = s.get(&rt, &ns, name).is_err();
                Ok(json_response(if gone { StatusCode::OK } else { StatusCode::ACCEPTED }, &*obj))
            }
            (Method::DELETE, None, None) => {
                let opts = delete_options(&body, &q)?;
                let matcher = matcher(&rt, &q)?;
                let mut s = store();
                let page = s.list(&rt, target.namespace.as_deref(), Some(&matcher), None, None)?;
                let mut items = Vec::new();
                for obj in page.items {
                    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
                    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
                    items.push((*s.delete(&rt, &ns, &name, &opts)?).clone());
                }
                let list = json!({"apiVersion": rt.api_version(), "kind": format!("{}List", rt.kind), "metadata": {}, "items": items});
                Ok(json_response(StatusCode::OK, &list))
            }
            (Method::POST, Some(name), Some("binding")) if is_pods(&rt) => {
                let binding = decode_body(&body, content_type)?;
                self.bind(&ns, name, &binding)?;
                Ok(json_response(StatusCode::CREATED, &success(201)))
            }
            (Method::POST, Some(name), Some("eviction")) if is_pods(&rt) => {
                let ev = decode_body(&body, content_type)?;
                let mut s = store();
                eviction::evict(&mut s, &ns, name, &ev)?;
                Ok(json_response(StatusCode::CREATED, &success(201)))
            }
            (m, _, sub) => Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({m} {}{})",
                rt.group_resource(),
                sub.map(|s| format!("/{s}")).unwrap_or_default()
            ))),
        }
    }

    fn list(&self, rt: &ResourceType, namespace: Option<&str>, q: &Query, table: bool) -> ApiResult<Response<Body>> {
        let matcher = matcher(rt, q)?;
        let s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let page = s.list(rt, namespace, Some(&matcher), q.limit, q.continue_token.as_deref())?;
        let mut meta = json!({"resourceVersion": page.rv.to_string()});
        if let Some(c) = &page.continue_token {
            meta["continue"] = json!(c);
        }
        if let Some(r) = page.remaining {
            meta["remainingItemCount"] = json!(r);
        }
        if table {
            let mut t = super::table::table(rt, &page.items, s.elapsed());
            t["metadata"] = meta;
            return Ok(json_response(StatusCode::OK, &t));
        }
        // Serialise without cloning the stored objects.
        let mut out = Vec::with_capacity(256 + page.items.len() * 512);
        out.extend_from_slice(
            format!(
                "{{\"apiVersion\":{},\"kind\":{},\"metadata\":{},\"items\":[",
                json!(rt.api_version()),
                json!(format!("{}List", rt.kind)),
                meta
            )
            .as_bytes(),
        );
        for (i, item) in page.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, item.as_ref()).map_err(|e| ApiError::internal(e.to_string()))?;
        }
        out.extend_from_slice(b"]}");
        Ok(bytes_response(StatusCode::OK, "application/json", Bytes::from(out)))
    }

    fn watch(&self, rt: &ResourceType, namespace: Option<&str>, q: &Query, table: bool) -> ApiResult<Response<Body>> {
        let matcher = matcher(rt, q)?;
        let start = match (q.send_initial_events, q.resource_version.as_deref()) {
            (true, _) | (false, None | Some("0")) => WatchStart::Current,
            (false, Some(rv)) => WatchStart::After(
                rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
            ),
        };
        let stream = {
            let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
            match s.watch(rt, namespace, matcher, start) {
                Ok(w) => w,
                // A too-old resourceVersion is reported in the stream, as the real server does.
                Err(e) if e.code == 410 => {
                    let line = watch_line("ERROR", &e.to_status());
                    return Ok(bytes_response(StatusCode::OK, "application/json", Bytes::from(line)));
                }
                Err(e) => return Err(e),
            }
        };
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Frame<Bytes>, Infallible>>();
        let cfg = WatchTask {
            store: self.store.clone(),
            rt: Arc::new(rt.clone()),
            timeout: Duration::from_secs(q.timeout_seconds.unwrap_or(1800).min(3600)),
            bookmarks: q.allow_bookmarks,
            initial_end_bookmark: q.send_initial_events,
            delay: self.config.watch_delay,
            faults: self.faults.clone(),
            bookmark_interval: self.config.bookmark_interval,
            table,
        };
        tokio::spawn(cfg.run(stream, tx));
        let body = StreamBody::new(rx);
        let mut resp = Response::new(UnsyncBoxBody::new(body));
        resp.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        resp.headers_mut().insert(header::TRANSFER_ENCODING, http::HeaderValue::from_static("chunked"));
        Ok(resp)
    }

    #[allow(clippy::too_many_arguments)] // the patch request's parts, each distinct
    fn patch(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        part: Part,
        content_type: &str,
        body: &[u8],
        q: &Query,
    ) -> ApiResult<(Arc<Value>, bool)> {
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
                let obj = patch::apply_create(body, &schema, &opts).map_err(patch_error)?;
                return Ok((s.create(rt, ns, obj, q.write())?, true));
            }
            Err(e) => return Err(e),
        };
        let mut patched = patch::patch(pt, &current, body, &schema, &opts).map_err(patch_error)?;
        // A patch is applied to the latest version: concurrency is only enforced when the
        // patch itself carries a resourceVersion.
        let patch_rv = patched.pointer("/metadata/resourceVersion").cloned();
        if patch_rv.as_ref() == current.pointer("/metadata/resourceVersion") {
            patched["metadata"].as_object_mut().map(|m| m.remove("resourceVersion"));
        }
        Ok((s.update(rt, ns, name, patched, part, q.write())?, false))
    }

    fn bind(&self, ns: &str, name: &str, binding: &Value) -> ApiResult<()> {
        let node = binding.pointer("/target/name").and_then(Value::as_str).unwrap_or("");
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        super::binding::bind(&mut s, ns, name, node)
    }

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

fn is_pods(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "pods"
}

fn part_of(rt: &ResourceType, sub: Option<&str>) -> ApiResult<Part> {
    match sub {
        None => Ok(Part::Main),
        Some("status") if rt.status_subresource => Ok(Part::Status),
        Some(s) => Err(ApiError::not_found("", "", &format!("{}/{s}", rt.group_resource()))),
    }
}

fn matcher(rt: &ResourceType, q: &Query) -> ApiResult<Matcher> {
    let labels = match &q.label_selector {
        Some(s) => Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?),
        None => None,
    };
    let fields = match &q.field_selector {
        Some(s) => {
            let f = FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
            let supported = if rt.custom {
                let selectable = selectable_fields(rt);
                let refs: Vec<&str> = selectable.iter().map(String::as_str).collect();
                f.supported_for_custom_resource(!rt.namespaced, &refs)
            } else {
                f.supported_for(&rt.kind)
            };
            supported.map_err(|e| ApiError::bad_request(e.to_string()))?;
            Some(f)
        }
        None => None,
    };
    Ok(Arc::new(move |obj: &Value| {
        labels.as_ref().is_none_or(|l| l.matches(&super::labels_of(obj)))
            && fields.as_ref().is_none_or(|f| f.matches(obj))
    }))
}

/// A CRD version's `selectableFields`, as field labels (`spec.x`).
fn selectable_fields(rt: &ResourceType) -> Vec<String> {
    rt.crd
        .as_ref()
        .and_then(|crd| {
            crd.pointer("/spec/versions")?.as_array()?.iter().find(|v| v["name"].as_str() == Some(&rt.version)).cloned()
        })
        .and_then(|v| v["selectableFields"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|f| f["jsonPath"].as_str().map(|p| p.trim_start_matches('.').to_string()))
        .collect()
}

fn decode_body(body: &[u8], content_type: &str) -> ApiResult<Value> {
    if content_type.contains("protobuf") || content_type.contains("cbor") {
        // client-go falls back to JSON on 415, as it does against servers without protobuf.
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type})"
        )));
    }
    if body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    if content_type.contains("yaml") {
        return serde_saphyr::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("the body of the request could not be decoded as YAML: {e}")));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body of the request could not be decoded as JSON: {e}")))
}

fn delete_options(body: &[u8], q: &Query) -> ApiResult<DeleteOptions> {
    let b: Value = if body.is_empty() { json!({}) } else { decode_body(body, "application/json")? };
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

fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

fn version_info() -> Value {
    json!({
        "major": "1", "minor": "34", "gitVersion": "v1.34.0-dovetail", "gitCommit": "dovetail",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
        "compiler": "gc", "platform": "linux/amd64",
    })
}

fn json_response(code: StatusCode, v: &impl serde::Serialize) -> Response<Body> {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    bytes_response(code, "application/json", Bytes::from(bytes))
}

fn text_response(code: StatusCode, s: &'static str) -> Response<Body> {
    bytes_response(code, "text/plain", Bytes::from_static(s.as_bytes()))
}

fn bytes_response(code: StatusCode, content_type: &'static str, b: Bytes) -> Response<Body> {
    let mut resp = Response::new(UnsyncBoxBody::new(Full::new(b)));
    *resp.status_mut() = code;
    resp.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    resp
}

/// The `Status` response for a failed request.
pub fn error_response(e: &ApiError) -> Response<Body> {
    json_response(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &e.to_status())
}

fn watch_line(kind: &str, obj: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": obj})).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Feeds one watch connection: initial events, then live ones, with bookmarks, an
/// optional delivery delay (a fault hook) and the request's timeout, all in simulated
/// time.
struct WatchTask {
    store: Arc<std::sync::Mutex<super::store::Store>>,
    rt: Arc<ResourceType>,
    timeout: Duration,
    bookmarks: bool,
    initial_end_bookmark: bool,
    delay: Duration,
    faults: Arc<std::sync::Mutex<super::ApiFaults>>,
    bookmark_interval: Duration,
    table: bool,
}

type FrameTx = futures::channel::mpsc::UnboundedSender<Result<Frame<Bytes>, Infallible>>;

impl WatchTask {
    async fn run(self, mut stream: super::store::WatchStream, tx: FrameTx) {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut last_rv = stream.rv;
        for msg in std::mem::take(&mut stream.initial) {
            if !self.send(&tx, msg, &mut last_rv) {
                return;
            }
        }
        if self.initial_end_bookmark {
            let bm = self.bookmark(stream.rv, true);
            if tx.unbounded_send(Ok(Frame::data(Bytes::from(bm)))).is_err() {
                return;
            }
        }
        let mut next_bookmark = tokio::time::Instant::now() + self.bookmark_interval;
        loop {
            let wake = deadline.min(next_bookmark);
            tokio::select! {
                biased;
                msg = stream.rx.recv() => {
                    let Some(msg) = msg else { return };
                    let delay = self.delay.max(self.faults.lock().unwrap_or_else(|e| e.into_inner()).watch_delay);
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    let expired = matches!(msg, WatchMsg::Expired(_));
                    if !self.send(&tx, msg, &mut last_rv) || expired {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(wake) => {
                    if tokio::time::Instant::now() >= deadline {
                        return;
                    }
                    if self.bookmarks {
                        // Everything up to the store's version has been delivered once the
                        // channel is empty, so the bookmark may name it.
                        let rv = {
                            let s = self.store.lock().unwrap_or_else(|e| e.into_inner());
                            if stream.rx.is_empty() { s.resource_version() } else { last_rv }
                        };
                        if tx.unbounded_send(Ok(Frame::data(Bytes::from(self.bookmark(rv, false))))).is_err() {
                            return;
                        }
                    }
                    next_bookmark = tokio::time::Instant::now() + self.bookmark_interval;
                }
            }
        }
    }

    fn send(&self, tx: &FrameTx, msg: WatchMsg, last_rv: &mut u64) -> bool {
        let line = match msg {
            WatchMsg::Event(kind, obj, rv) => {
                *last_rv = rv;
                if self.table {
                    let now = self.store.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
                    watch_line(kind.as_str(), &super::table::table(&self.rt, &[obj], now))
                } else {
                    let mut line = Vec::with_capacity(512);
                    line.extend_from_slice(format!("{{\"type\":\"{}\",\"object\":", kind.as_str()).as_bytes());
                    let _ = serde_json::to_writer(&mut line, obj.as_ref());
                    line.extend_from_slice(b"}\n");
                    line
                }
            }
            WatchMsg::Expired(m) => watch_line("ERROR", &ApiError::gone(m).to_status()),
        };
        tx.unbounded_send(Ok(Frame::data(Bytes::from(line)))).is_ok()
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Vec<u8> {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        watch_line("BOOKMARK", &json!({"apiVersion": self.rt.api_version(), "kind": self.rt.kind, "metadata": meta}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_like_the_apiserver() {
        let t = parse_path("/api/v1/namespaces/default/pods/web/eviction").unwrap();
        assert_eq!(
            t,
            Target {
                group: "".into(),
                version: "v1".into(),
                namespace: Some("default".into()),
                plural: "pods".into(),
                name: Some("web".into()),
                sub: Some("eviction".into())
            }
        );
        let t = parse_path("/api/v1/namespaces/kube-system").unwrap();
        assert_eq!((t.plural.as_str(), t.name.as_deref(), t.namespace), ("namespaces", Some("kube-system"), None));
        let t = parse_path("/api/v1/namespaces/x/status").unwrap();
        assert_eq!((t.plural.as_str(), t.name.as_deref(), t.sub.as_deref()), ("namespaces", Some("x"), Some("status")));
        let t = parse_path("/apis/karpenter.sh/v1/nodepools/default/status").unwrap();
        assert_eq!(
            (t.group.as_str(), t.plural.as_str(), t.sub.as_deref()),
            ("karpenter.sh", "nodepools", Some("status"))
        );
        assert!(parse_path("/apis/karpenter.sh").is_none());
    }
}
