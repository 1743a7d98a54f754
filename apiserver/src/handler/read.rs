//! Reads: get one object, and list (selectors, pagination, kubectl's table form).

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::json;

use super::matcher::matcher;
use super::request::ResourceRequest;
use super::response::{Body, bytes_response, json_response};
use crate::ApiServer;
use crate::error::{ApiError, ApiResult};
use crate::table::table;

impl ApiServer {
    /// GET of one object (or its status subresource, which reads the same).
    pub(super) fn serve_get(&self, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
        let store = || self.store.lock().unwrap_or_else(|e| e.into_inner());
        let obj = store().get(&req.rt, req.namespace(), name)?;
        if req.table {
            return Ok(json_response(StatusCode::OK, &table(&req.rt, &[obj], store().elapsed())));
        }
        Ok(json_response(StatusCode::OK, &*obj))
    }

    /// GET of a collection: one page of the matching objects.
    pub(super) fn serve_list(&self, req: &ResourceRequest<'_>) -> ApiResult<Response<Body>> {
        let (rt, q) = (&req.rt, &req.query);
        let matcher = matcher(rt, q)?;
        let limit =
            self.faults.lock().unwrap_or_else(|e| e.into_inner()).list_page(q.limit, q.continue_token.is_some());
        let s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let limit = limit.inspect_err(|e| {
            s.trace().record(dovetail_world::TraceEntry {
                at: s.elapsed(),
                source: "fault",
                verb: format!("api-{}", e.code),
                subject: format!("GET {} (continue)", rt.group_resource()),
            });
        })?;
        let page = s.list(rt, req.scope(), Some(&matcher), limit, q.continue_token.as_deref())?;
        let mut meta = json!({"resourceVersion": page.rv.to_string()});
        if let Some(c) = &page.continue_token {
            meta["continue"] = json!(c);
        }
        if let Some(r) = page.remaining {
            meta["remainingItemCount"] = json!(r);
        }
        if req.table {
            let mut t = table(rt, &page.items, s.elapsed());
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
}
