//! What a client sent, parsed: the resource path, the query parameters the server
//! understands, and the body (JSON or YAML).

use std::sync::Arc;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use crate::store::WriteOptions;

/// A request for a served resource type, once routed: the type, the path, the query,
/// and the body with its content type.
pub(super) struct ResourceRequest<'a> {
    pub(super) rt: Arc<ResourceType>,
    pub(super) target: Target,
    pub(super) query: Query,
    pub(super) content_type: &'a str,
    pub(super) body: &'a [u8],
    /// The client asked for kubectl's table form (`Accept: ...;as=Table`).
    pub(super) table: bool,
}

impl ResourceRequest<'_> {
    /// The namespace on the path: `None` for cluster-scoped types and all-namespace lists.
    pub(super) fn scope(&self) -> Option<&str> {
        self.target.namespace.as_deref()
    }

    /// The namespace on the path, empty when there is none.
    pub(super) fn namespace(&self) -> &str {
        self.scope().unwrap_or_default()
    }

    /// The body, decoded as its content type says; protobuf only for built-in types, as
    /// kube-apiserver serves custom resources in JSON and YAML only.
    pub(super) fn decoded_body(&self) -> ApiResult<Value> {
        if is_protobuf(self.content_type) && self.rt.crd.is_none() {
            return crate::protobuf::decode(self.body).map_err(|e| {
                ApiError::bad_request(format!("the body of the request could not be decoded as protobuf: {e}"))
            });
        }
        decode_body(self.body, self.content_type)
    }
}

/// A parsed API path.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Target {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) namespace: Option<String>,
    pub(super) plural: String,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

/// Query parameters the server understands.
#[derive(Debug, Default)]
pub(super) struct Query {
    pub(super) watch: bool,
    pub(super) label_selector: Option<String>,
    pub(super) field_selector: Option<String>,
    pub(super) limit: Option<usize>,
    pub(super) continue_token: Option<String>,
    pub(super) resource_version: Option<String>,
    pub(super) timeout_seconds: Option<u64>,
    pub(super) allow_bookmarks: bool,
    pub(super) send_initial_events: bool,
    pub(super) field_manager: Option<String>,
    pub(super) force: bool,
    pub(super) dry_run: bool,
    pub(super) propagation: Option<String>,
    pub(super) grace_period_seconds: Option<i64>,
    pub(super) strict: bool,
}

impl Query {
    /// The options of a create, update or patch.
    pub(super) fn write(&self) -> WriteOptions {
        WriteOptions { dry_run: self.dry_run, strict: self.strict }
    }

    /// Parses a URL query string; unknown parameters are ignored, as the real server does.
    ///
    /// Booleans and integers are read as kube-apiserver reads them (its parameter codec,
    /// k8s.io/apimachinery `pkg/runtime/conversion.go`): a boolean is false only when it is
    /// `0` or `false` in any case, so `watch=True`, `watch=1` and a bare `watch` all watch
    /// (the Python client sends `watch=True`); an integer that does not parse is a 400
    /// naming the parameter, not silently dropped.
    pub(super) fn parse(q: Option<&str>) -> ApiResult<Self> {
        let mut out = Query::default();
        for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
            let truthy = query_bool(&v);
            match &*k {
                "watch" => out.watch = truthy,
                "labelSelector" => out.label_selector = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "fieldSelector" => out.field_selector = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "limit" => {
                    let l = query_int(&k, &v)?;
                    out.limit = (l > 0).then_some(l as usize);
                }
                "continue" => out.continue_token = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "resourceVersion" => out.resource_version = Some(v.into_owned()).filter(|s| !s.is_empty()),
                "timeoutSeconds" => out.timeout_seconds = Some(query_int(&k, &v)?.max(0) as u64),
                "allowWatchBookmarks" => out.allow_bookmarks = truthy,
                "sendInitialEvents" => out.send_initial_events = truthy,
                "fieldManager" => out.field_manager = Some(v.into_owned()),
                "force" => out.force = truthy,
                "dryRun" => out.dry_run = v == "All",
                "propagationPolicy" => out.propagation = Some(v.into_owned()),
                "gracePeriodSeconds" => out.grace_period_seconds = Some(query_int(&k, &v)?),
                "fieldValidation" => out.strict = v == "Strict",
                _ => {}
            }
        }
        Ok(out)
    }
}

/// A boolean query parameter as kube-apiserver reads it (`Convert_Slice_string_To_bool`):
/// only `0` and `false` (any case) are false; every other value, the empty one included,
/// is true.
fn query_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// An integer query parameter as kube-apiserver reads it (`strconv.ParseInt`, base 10):
/// anything else is a 400 that names the parameter.
fn query_int(name: &str, v: &str) -> ApiResult<i64> {
    v.parse().map_err(|_| {
        ApiError::bad_request(format!("invalid value for query parameter {name}: {v:?} is not an integer"))
    })
}

/// Splits `/api/v1/...` and `/apis/<group>/<version>/...` into a [`Target`]; `None` for
/// paths that name no resource.
pub(super) fn parse_path(path: &str) -> Option<Target> {
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

/// Whether a content type is Kubernetes protobuf.
fn is_protobuf(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|t| t.trim() == crate::protobuf::CONTENT_TYPE)
}

/// Decodes a request body as JSON, or YAML when the content type says so. Protobuf bodies
/// for built-in types are decoded by [`ResourceRequest::decoded_body`]; here (custom
/// resources, patches, delete options) they get kube-apiserver's 415, as does CBOR.
pub(super) fn decode_body(body: &[u8], content_type: &str) -> ApiResult<Value> {
    if content_type.contains("protobuf") || content_type.contains("cbor") {
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

    #[test]
    fn booleans_and_integers_parse_like_kube_apiserver() {
        for q in ["watch=true", "watch=True", "watch=TRUE", "watch=1", "watch", "watch=yes"] {
            assert!(Query::parse(Some(q)).unwrap().watch, "{q} should watch");
        }
        for q in ["watch=false", "watch=False", "watch=0", ""] {
            assert!(!Query::parse(Some(q)).unwrap().watch, "{q} should not watch");
        }
        let q = Query::parse(Some("limit=5&timeoutSeconds=30&gracePeriodSeconds=0&allowWatchBookmarks=True")).unwrap();
        assert_eq!(
            (q.limit, q.timeout_seconds, q.grace_period_seconds, q.allow_bookmarks),
            (Some(5), Some(30), Some(0), true)
        );
        for q in ["limit=five", "timeoutSeconds=1.5", "gracePeriodSeconds=soon"] {
            let Err(e) = Query::parse(Some(q)) else { panic!("{q} should be refused") };
            let name = q.split('=').next().unwrap();
            assert!(format!("{e:?}").contains(name), "{q}: the error names the parameter: {e:?}");
        }
    }
}
