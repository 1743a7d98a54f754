//! How long the controller waits for the API server to answer a request before giving up on
//! the connection.
//!
//! A request sent on a connection that died without a FIN or RST (the API server's host
//! crashed, a load balancer dropped the flow, a network partition ate the segments) gets no
//! answer; without a bound the call, and the reconcile loop awaiting it, waits for ever.
//! kube-rs sets no read timeout by default (`kube::Config::read_timeout` is `None`), while
//! client-go, which Karpenter uses, finds such a connection dead within about 45 s with
//! HTTP/2 health checks (k8s.io/apimachinery `pkg/util/net/http.go`
//! `readIdleTimeoutSeconds` 30 s + `pingTimeoutSeconds` 15 s) and fails the request. Dovetail
//! bounds the wait for the response's headers instead: a unary request the API server has
//! not answered within its own non-long-running request timeout (kube-apiserver
//! `--request-timeout`, 60 s by default, after which it answers 504) will not be answered.
//! Watches are unaffected: their headers come at once and the body streams on.

use std::time::Duration;

/// The longest wait for a response's headers.
pub const API_RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// The layer that applies [`API_RESPONSE_TIMEOUT`] to every request of a kube client's
/// service stack (production and simulator build their clients with it).
pub fn api_timeout_layer() -> tower::timeout::TimeoutLayer {
    tower::timeout::TimeoutLayer::new(API_RESPONSE_TIMEOUT)
}
