//! What the server refuses before it routes a request: bodies over kube-apiserver's size
//! limit, and writes a web browser sends from another origin.
//!
//! `dovetail serve` binds loopback and has no authentication, so any web page the user
//! visits could otherwise POST to it (a "simple" cross-origin request needs no preflight).
//! Browsers mark such requests with `Origin` and `Sec-Fetch-Site`; kubectl, client-go,
//! kube-rs and the Python client send neither.

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, header};
use http_body_util::BodyExt;

use crate::error::{ApiError, ApiResult};

/// kube-apiserver's limit on a request body (`MaxRequestBodyBytes`, 3 MiB), past which it
/// answers 413 `RequestEntityTooLarge`.
pub(super) const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Reads the body, refusing it with a 413 as soon as it passes `limit` bytes, so an
/// oversized body is never held whole.
pub(super) async fn read_body<B>(body: B, limit: usize) -> ApiResult<Bytes>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let mut body = std::pin::pin!(body);
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(ApiError::request_entity_too_large(format!("Request entity too large: limit is {limit}")));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Refuses a write a browser sent from another origin: a non-read method with an `Origin`
/// header naming a different host than the request's `Host`, or with `Sec-Fetch-Site` saying
/// `cross-site` or `same-site`. Reads stay open (a browser cannot read a cross-origin answer
/// without CORS headers, which the server never sends).
pub(super) fn refuse_cross_origin_write(method: &Method, headers: &HeaderMap) -> ApiResult<()> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let fetch_site = header("sec-fetch-site");
    let cross_fetch = matches!(fetch_site, Some("cross-site" | "same-site"));
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let cross_origin = header("origin").is_some_and(|origin| {
        let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest).trim_end_matches('/');
        Some(origin_host) != host
    });
    if cross_fetch || cross_origin {
        return Err(ApiError::forbidden(format!(
            "{method} refused: a browser sent it from another origin ({}); the simulated API server has no authentication, so it takes writes only from API clients",
            header("origin").or(fetch_site).unwrap_or("unknown")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (http::HeaderName::from_static(k), http::HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn browser_writes_from_other_origins_are_refused() {
        let evil = headers(&[("host", "127.0.0.1:6443"), ("origin", "https://evil.example")]);
        assert_eq!(refuse_cross_origin_write(&Method::POST, &evil).unwrap_err().code, 403);
        assert_eq!(refuse_cross_origin_write(&Method::DELETE, &evil).unwrap_err().code, 403);
        assert!(refuse_cross_origin_write(&Method::GET, &evil).is_ok(), "reads stay open");
        let fetch = headers(&[("host", "127.0.0.1:6443"), ("sec-fetch-site", "cross-site")]);
        assert_eq!(refuse_cross_origin_write(&Method::PATCH, &fetch).unwrap_err().code, 403);
        let same = headers(&[
            ("host", "127.0.0.1:6443"),
            ("origin", "http://127.0.0.1:6443"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert!(refuse_cross_origin_write(&Method::POST, &same).is_ok(), "a page served by the server itself");
        let kubectl = headers(&[("host", "127.0.0.1:6443"), ("user-agent", "kubectl/v1.34")]);
        assert!(refuse_cross_origin_write(&Method::POST, &kubectl).is_ok(), "API clients send no Origin");
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_refused_with_413() {
        let small = http_body_util::Full::new(Bytes::from(vec![b'x'; 10]));
        assert_eq!(read_body(small, 16).await.unwrap().len(), 10);
        let big = http_body_util::Full::new(Bytes::from(vec![b'x'; 17]));
        let e = read_body(big, 16).await.unwrap_err();
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (413, "RequestEntityTooLarge", "Request entity too large: limit is 16")
        );
    }
}
