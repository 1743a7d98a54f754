//! An unmodified `kube::Client` that reaches the simulated API server over turmoil, with
//! optional client-side faults: the world outside the controller breaking what its
//! requests do or what it reads, so invariant checkers can be shown to catch it.

use std::time::Duration;

use bytes::Bytes;
use dovetail_simnet::{TurmoilConnector, http_client};
use http_body_util::BodyExt;
use kube::client::Body;

/// Faults a kube client's transport can inject. All off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientFaults {
    /// Every `POST pods/{name}/eviction` goes out as a plain `DELETE` of the pod, so
    /// PodDisruptionBudgets are not consulted.
    pub evictions_as_deletes: bool,
    /// The `karpenter.sh/do-not-disrupt` annotation is renamed in every response the
    /// client reads (lists, gets, watches), so the client never sees it.
    pub hide_do_not_disrupt: bool,
}

/// The annotation [`ClientFaults::hide_do_not_disrupt`] hides, and what it turns into
/// (same length, so Content-Length stays right).
const DO_NOT_DISRUPT: &[u8] = b"karpenter.sh/do-not-disrupt";
const HIDDEN: &[u8] = b"karpenter.sh/do-not-disrupX";

/// Builds a `kube::Client` for `http://{host}:{port}`. Call it inside the turmoil host
/// that will use the client (its connection pool lives on that host's runtime).
pub fn sim_kube_client(host: &str, port: u16) -> kube::Client {
    sim_kube_client_with_faults(host, port, ClientFaults::default())
}

/// [`sim_kube_client`] with client-side faults.
pub fn sim_kube_client_with_faults(host: &str, port: u16, faults: ClientFaults) -> kube::Client {
    build(host, port, faults, None)
}

/// The client the controller gets: like its production client, it retries what the API
/// server asks to have retried
/// ([`dovetail_controller::runtime::api_retry`]) and gives up on a response
/// after [`dovetail_controller::runtime::api_timeout::API_RESPONSE_TIMEOUT`] (a partition
/// drops the segments of the requests in flight, as a dead connection does).
pub fn controller_kube_client(host: &str, port: u16, faults: ClientFaults) -> kube::Client {
    let production = ProductionLayers {
        retry: dovetail_controller::runtime::api_retry::api_retry_layer(),
        timeout: dovetail_controller::runtime::api_timeout::api_timeout_layer(),
    };
    build(host, port, faults, Some(production))
}

/// The layers the controller's production client puts around its transport.
struct ProductionLayers {
    retry: tower::retry::RetryLayer<dovetail_controller::runtime::api_retry::RetryAfterPolicy>,
    timeout: tower::timeout::TimeoutLayer,
}

fn build(host: &str, port: u16, faults: ClientFaults, production: Option<ProductionLayers>) -> kube::Client {
    let connector = TurmoilConnector::new(Duration::from_secs(10));
    let client = http_client::<Body>(connector);
    let base: http::Uri = format!("http://{host}:{port}").parse().expect("host and port make a valid URI");
    let (retry, timeout) = production.map(|p| (p.retry, p.timeout)).unzip();
    let service = tower::ServiceBuilder::new()
        .option_layer(retry)
        .option_layer(timeout)
        // One error type with or without the timeout (whose errors are boxed).
        .map_err(tower::BoxError::from)
        .layer(kube::client::middleware::BaseUriLayer::new(base))
        .map_request(
            move |req: http::Request<Body>| {
                if faults.evictions_as_deletes { eviction_to_delete(req) } else { req }
            },
        )
        .map_response(move |resp: http::Response<hyper::body::Incoming>| {
            let hide = faults.hide_do_not_disrupt;
            resp.map(move |body| {
                body.map_frame(move |frame| frame.map_data(|data| if hide { hide_annotation(data) } else { data }))
            })
        })
        .service(client);
    kube::Client::new(service, "default")
}

/// `POST .../pods/{name}/eviction` → `DELETE .../pods/{name}`; other requests unchanged.
fn eviction_to_delete(req: http::Request<Body>) -> http::Request<Body> {
    let path = req.uri().path().to_string();
    let Some(pod_path) = path.strip_suffix("/eviction").filter(|_| req.method() == http::Method::POST) else {
        return req;
    };
    let (mut parts, _) = req.into_parts();
    parts.method = http::Method::DELETE;
    let query = parts.uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let mut uri = parts.uri.clone().into_parts();
    uri.path_and_query = format!("{pod_path}{query}").parse().ok();
    parts.uri = http::Uri::from_parts(uri).unwrap_or(parts.uri);
    parts.headers.remove(http::header::CONTENT_LENGTH);
    http::Request::from_parts(parts, Body::from(Vec::new()))
}

fn hide_annotation(data: Bytes) -> Bytes {
    if !data.windows(DO_NOT_DISRUPT.len()).any(|w| w == DO_NOT_DISRUPT) {
        return data;
    }
    let mut out = data.to_vec();
    let mut i = 0;
    while i + DO_NOT_DISRUPT.len() <= out.len() {
        if &out[i..i + DO_NOT_DISRUPT.len()] == DO_NOT_DISRUPT {
            out[i..i + HIDDEN.len()].copy_from_slice(HIDDEN);
            i += HIDDEN.len();
        } else {
            i += 1;
        }
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evictions_become_pod_deletes_and_other_requests_pass() {
        let req = http::Request::post("/api/v1/namespaces/default/pods/web-1/eviction?dryRun=All")
            .body(Body::from(b"{}".to_vec()))
            .expect("a request");
        let out = eviction_to_delete(req);
        assert_eq!(out.method(), http::Method::DELETE);
        assert_eq!(out.uri().to_string(), "/api/v1/namespaces/default/pods/web-1?dryRun=All");
        let get = http::Request::get("/api/v1/pods").body(Body::from(Vec::new())).expect("a request");
        assert_eq!(eviction_to_delete(get).method(), http::Method::GET);
    }

    #[test]
    fn the_annotation_is_renamed_in_place() {
        let body = Bytes::from_static(br#"{"annotations":{"karpenter.sh/do-not-disrupt":"true"}}"#);
        let out = hide_annotation(body.clone());
        assert_eq!(out.len(), body.len());
        assert!(!out.windows(DO_NOT_DISRUPT.len()).any(|w| w == DO_NOT_DISRUPT));
    }
}
