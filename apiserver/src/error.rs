//! Kubernetes `Status` errors, as a real API server returns them.
//!
//! Clients branch on `code` and `reason` (kube-rs maps them into `ErrorResponse`,
//! kube-runtime's watcher relists on 410, Karpenter retries evictions on 429), so each
//! failure carries both, and a message a human can act on.

use serde_json::{Value, json};

/// A failed API request.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `metav1.StatusReason`, e.g. `NotFound`, `Conflict`.
    pub reason: &'static str,
    /// What went wrong, in apimachinery's words where one exists.
    pub message: String,
    /// `details` of the Status (name, group, kind, causes), if any.
    pub details: Option<Value>,
}

/// Result of an API operation.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None }
    }

    /// 404: `pods "x" not found`.
    pub fn not_found(resource: &str, group: &str, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{} \"{name}\" not found", qualified(resource, group)))
            .with_details(name, group, resource)
    }

    /// 409 on create: the name is taken.
    pub fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", qualified(resource, group)))
            .with_details(name, group, resource)
    }

    /// 409 on update: optimistic concurrency lost.
    pub fn conflict(resource: &str, group: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": {why}", qualified(resource, group)),
        )
        .with_details(name, group, resource)
    }

    /// 400: the request itself is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422: the object fails validation. `causes` are `(reason, field, message)`.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: &[(String, String, String)]) -> Self {
        let fields: Vec<String> = causes.iter().map(|(_, f, m)| format!("{f}: {m}")).collect();
        let joined = if fields.len() == 1 { fields[0].clone() } else { format!("[{}]", fields.join(", ")) };
        let gk = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let mut e = Self::new(422, "Invalid", format!("{gk} \"{name}\" is invalid: {joined}"));
        e.details = Some(json!({
            "name": name, "group": group, "kind": kind,
            "causes": causes.iter().map(|(r, f, m)| json!({"reason": r, "message": m, "field": f})).collect::<Vec<_>>(),
        }));
        e
    }

    /// 405: the verb is not supported on this resource.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 410: the requested resourceVersion has been compacted.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 415: e.g. strategic merge patch on a custom resource.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 429 from the eviction subresource when a PDB forbids the disruption.
    pub fn too_many_requests(message: impl Into<String>, causes: Value) -> Self {
        let mut e = Self::new(429, "TooManyRequests", message);
        e.details = Some(json!({"causes": causes}));
        e
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 503, e.g. an injected fault.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// 413: the request body is over the server's limit.
    pub fn request_entity_too_large(message: impl Into<String>) -> Self {
        Self::new(413, "RequestEntityTooLarge", message)
    }

    /// 403.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    fn with_details(mut self, name: &str, group: &str, resource: &str) -> Self {
        self.details = Some(json!({"name": name, "group": group, "kind": resource}));
        self
    }

    /// An error from a `metav1.Status` body built elsewhere (e.g. schema admission).
    pub fn from_status(s: &Value) -> Self {
        let code = s["code"].as_u64().unwrap_or(500) as u16;
        let reason = match s["reason"].as_str().unwrap_or("") {
            "Invalid" => "Invalid",
            "BadRequest" => "BadRequest",
            "Conflict" => "Conflict",
            "NotFound" => "NotFound",
            "Forbidden" => "Forbidden",
            _ => "InternalError",
        };
        Self {
            code,
            reason,
            message: s["message"].as_str().unwrap_or("").to_string(),
            details: s.get("details").cloned(),
        }
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_apimachinery() {
        assert_eq!(ApiError::not_found("pods", "", "web").message, "pods \"web\" not found");
        assert_eq!(
            ApiError::conflict(
                "nodepools",
                "karpenter.sh",
                "default",
                "the object has been modified; please apply your changes to the latest version and try again"
            )
            .message,
            "Operation cannot be fulfilled on nodepools.karpenter.sh \"default\": the object has been modified; please apply your changes to the latest version and try again"
        );
        let s = ApiError::gone("too old resource version: 1 (5)").to_status();
        assert_eq!(s["code"], 410);
        assert_eq!(s["reason"], "Expired");
    }
}
