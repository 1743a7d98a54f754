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

/// Marks a response the server holds back for the given time before sending it (a slow
/// list, [`crate::faults::ApiFaults::list_delay`]): its content is already fixed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AnswerLate(pub(crate) std::time::Duration);

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
        let slow = self.faults.lock().unwrap_or_else(|e| e.into_inner()).slow_list();
        let s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(delay) = slow {
            s.trace().record(dovetail_world::TraceEntry {
                at: s.elapsed(),
                source: "fault",
                verb: "api-slow".into(),
                subject: format!("GET {} (answered {} s late)", rt.group_resource(), delay.as_secs_f64()),
            });
        }
        let limit = limit.inspect_err(|e| {
            s.trace().record(dovetail_world::TraceEntry {
                at: s.elapsed(),
                source: "fault",
                verb: format!("api-{}", e.code),
                subject: format!("GET {} (continue)", rt.group_resource()),
            });
        })?;
        let page = s.list(rt, req.scope(), Some(&matcher), limit, q.continue_token.as_deref())?;
        drop(s);
        let mut resp = self.list_response(req, page)?;
        if let Some(delay) = slow {
            resp.extensions_mut().insert(AnswerLate(delay));
        }
        Ok(resp)
    }

    /// The list page as JSON (or kubectl's table).
    fn list_response(&self, req: &ResourceRequest<'_>, page: crate::store::ListPage) -> ApiResult<Response<Body>> {
        let rt = &req.rt;
        let mut meta = json!({"resourceVersion": page.rv.to_string()});
        if let Some(c) = &page.continue_token {
            meta["continue"] = json!(c);
        }
        if let Some(r) = page.remaining {
            meta["remainingItemCount"] = json!(r);
        }
        if req.table {
            let now = self.store.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
            let mut t = table(rt, &page.items, now);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::Method;

    use super::AnswerLate;

    fn get(server: &crate::ApiServer, path: &str) -> http::Response<super::Body> {
        server.route(&Method::GET, &path.parse().unwrap(), "application/json", "application/json", b"").unwrap()
    }

    #[test]
    fn while_lists_are_slow_a_list_is_held_back_and_a_get_is_not() {
        let server = crate::sim_server(1, dovetail_world::Trace::default());
        let late = |r: &http::Response<super::Body>| r.extensions().get::<AnswerLate>().map(|a| a.0);
        assert_eq!(late(&get(&server, "/api/v1/namespaces/default/pods")), None, "no fault, no delay");
        server.faults.lock().unwrap().list_delay = Duration::from_secs(5);
        assert_eq!(late(&get(&server, "/api/v1/namespaces/default/pods")), Some(Duration::from_secs(5)));
        assert_eq!(late(&get(&server, "/api/v1/namespaces")), Some(Duration::from_secs(5)));
        assert_eq!(late(&get(&server, "/api/v1/namespaces/default")), None, "a get is not a list");
        assert_eq!(server.faults.lock().unwrap().injected.slow_lists, 2);
    }
}
