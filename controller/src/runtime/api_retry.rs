//! Retrying a request the API server asked to have retried, as client-go does.
//!
//! Karpenter talks to the API server through client-go, whose `rest.Request` retries a
//! response by itself when the server says when to come back: a 429 or any 5xx that carries
//! a `Retry-After` header is sent again after exactly that many seconds, up to ten times
//! (k8s.io/client-go `rest/with_retry.go` `IsNextRetry` and `checkWait`; `rest/request.go`
//! `NewRequest`, `maxRetries: 10`). The API server sets the header for priority-and-fairness
//! rejections (429 with `retryAfterSeconds`) and whenever a `Status` names a retry delay
//! (k8s.io/apiserver `endpoints/handlers/responsewriters/writers.go` `ErrorNegotiated`); a
//! 429 or 5xx without it — a PodDisruptionBudget refusing an eviction, a failing etcd — goes
//! back to the caller at once. So a throttled Karpenter rarely sees a 429: its reconcile goes
//! on a second later instead of failing and waiting for a requeue.
//!
//! kube-rs' own `RetryPolicy::server_retry` (on by default for clients built from a
//! `kube::Config`) differs: it also retries 503 and 504 without the header, with exponential
//! backoff jittered from a process-random hasher. Dovetail turns it off and uses this policy
//! in production and in the simulator alike, so both retry as Karpenter does and a seed
//! replays the same waits.

use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;
use tower::retry::{Policy, RetryLayer};

/// Retries after the first attempt (client-go `rest.NewRequest`: `maxRetries: 10`).
pub const MAX_RETRIES: u32 = 10;

/// The client-go retry policy (see the module docs). A fresh clone serves each request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryAfterPolicy {
    /// Retries made so far for this request.
    retries: u32,
}

/// The wait a response asks for before the request is sent again: `Some` for a 429 or a 5xx
/// whose `Retry-After` is a whole number of seconds (client-go `checkWait` and
/// `retryAfterSeconds`), else `None`.
pub fn retry_after<B>(response: &Response<B>) -> Option<Duration> {
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds: u64 = response.headers().get(http::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

impl<B, E> Policy<Request<Body>, Response<B>, E> for RetryAfterPolicy {
    type Future = tokio::time::Sleep;

    fn retry(&mut self, _request: &mut Request<Body>, result: &mut Result<Response<B>, E>) -> Option<Self::Future> {
        let wait = retry_after(result.as_ref().ok()?)?;
        if self.retries >= MAX_RETRIES {
            return None;
        }
        self.retries += 1;
        tracing::debug!(retry = self.retries, wait_seconds = wait.as_secs(), "the API server asked for a retry");
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, request: &Request<Body>) -> Option<Request<Body>> {
        // A streamed body cannot be sent twice (client-go: "an opaque reader" is not retried).
        let body = request.body().try_clone()?;
        let mut copy = Request::new(body);
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        Some(copy)
    }
}

/// The layer that applies [`RetryAfterPolicy`] to a kube client's service stack (production
/// and simulator build their clients with it; the inner service must be `Clone`).
pub fn api_retry_layer() -> RetryLayer<RetryAfterPolicy> {
    RetryLayer::new(RetryAfterPolicy::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, retry_after: Option<&str>) -> Response<()> {
        let mut r = Response::builder().status(status);
        if let Some(value) = retry_after {
            r = r.header(http::header::RETRY_AFTER, value);
        }
        r.body(()).expect("a response")
    }

    #[test]
    fn only_throttles_and_server_errors_that_name_a_delay_are_retried() {
        assert_eq!(retry_after(&response(429, Some("1"))), Some(Duration::from_secs(1)));
        assert_eq!(retry_after(&response(503, Some("5"))), Some(Duration::from_secs(5)));
        assert_eq!(retry_after(&response(500, Some("2"))), Some(Duration::from_secs(2)));
        // No header: a PDB refusing an eviction, an API server failing outright.
        assert_eq!(retry_after(&response(429, None)), None);
        assert_eq!(retry_after(&response(503, None)), None);
        // Client errors are never retried, header or not; nor is a date-form header.
        assert_eq!(retry_after(&response(409, Some("1"))), None);
        assert_eq!(retry_after(&response(200, Some("1"))), None);
        assert_eq!(retry_after(&response(429, Some("Wed, 21 Oct 2026 07:28:00 GMT"))), None);
    }

    #[tokio::test(start_paused = true)]
    async fn ten_retries_then_the_answer_goes_back() {
        let mut policy = RetryAfterPolicy::default();
        let mut request = Request::new(Body::from(b"{}".to_vec()));
        let mut retries = 0;
        loop {
            let mut result: Result<Response<()>, ()> = Ok(response(429, Some("1")));
            let Some(wait) = policy.retry(&mut request, &mut result) else { break };
            wait.await;
            retries += 1;
            let copy = Policy::<Request<Body>, Response<()>, ()>::clone_request(&mut policy, &request);
            assert!(copy.is_some(), "a whole body can be sent again");
        }
        assert_eq!(retries, MAX_RETRIES);
        // A fresh policy (a new request) starts counting again.
        let mut fresh = RetryAfterPolicy::default();
        let mut ok: Result<Response<()>, ()> = Ok(response(200, None));
        assert!(fresh.retry(&mut request, &mut ok).is_none());
        let mut error: Result<Response<()>, ()> = Err(());
        assert!(fresh.retry(&mut request, &mut error).is_none(), "transport errors are the caller's");
    }
}
