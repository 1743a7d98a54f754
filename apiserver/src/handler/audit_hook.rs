//! The audit hook: each mutating request is described, shown to the observers before it
//! is applied, and reported with its status code after.

use http::{Method, Request, header};

use super::request::parse_path;
use crate::ApiServer;
use crate::audit::AuditRequest;

impl ApiServer {
    /// Describes a mutating request for the audit hook and shows it to the observers
    /// before it is applied. `None` for reads and unparseable paths.
    pub(super) fn audit_request<B>(&self, peer: &str, req: &Request<B>) -> Option<AuditRequest> {
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

    /// Reports a finished mutating request to the audit hook, with the trace position it
    /// left.
    pub(super) fn audit_response(&self, request: &AuditRequest, status: u16) {
        let position = self.store.lock().unwrap_or_else(|e| e.into_inner()).trace().len();
        self.audit.lock().unwrap_or_else(|e| e.into_inner()).after(request, status, position);
    }
}
