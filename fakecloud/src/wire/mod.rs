//! The wire adapter: an HTTP/1 server that speaks EC2's query protocol and SQS's (and
//! SSM's) JSON protocol in front of a shared [`FakeCloud`].
//!
//! The server is generic over its IO, so the same code serves a turmoil listener inside a
//! simulation ([`serve_turmoil`]) and a real TCP listener on 127.0.0.1 ([`serve_tcp`]) that
//! the AWS CLI can use. Each request acts on the cloud through [`SharedCloud::advance`],
//! so everything due by the request's instant has happened by the time the caller looks.

mod ec2;
mod instance_type_xml;
mod pricing_json;
mod query;
mod sqs_json;
mod xml;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};

use crate::cloud::SharedCloud;
use crate::error::ApiError;

/// Everything a connection handler needs.
#[derive(Clone)]
pub struct Server {
    cloud: SharedCloud,
    endpoint: String,
    wake: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

impl Server {
    /// A server for `cloud`, serving at the cloud's clock. `endpoint` (e.g. `http://aws:80`)
    /// prefixes the queue URLs it hands out, so clients can send them back.
    pub fn new(cloud: SharedCloud, endpoint: &str) -> Self {
        Self { cloud, endpoint: endpoint.trim_end_matches('/').to_string(), wake: Arc::new(tokio::sync::Notify::new()) }
    }

    /// The shared cloud.
    pub fn cloud(&self) -> &SharedCloud {
        &self.cloud
    }

    /// Serves one connection until the peer closes it.
    pub async fn serve_io<IO>(&self, io: IO)
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let server = self.clone();
        let service = service_fn(move |req| {
            let server = server.clone();
            async move { Ok::<_, Infallible>(server.handle(req).await) }
        });
        let result = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .keep_alive(true)
            .serve_connection(TokioIo::new(io), service)
            .await;
        if let Err(e) = result {
            tracing::debug!(%e, "fakecloud connection ended");
        }
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let target = req.headers().get("x-amz-target").and_then(|v| v.to_str().ok()).map(str::to_string);
        let body = match req.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return plain(StatusCode::BAD_REQUEST, format!("unreadable body: {e}")),
        };
        match target.as_deref().and_then(|t| t.split_once('.')) {
            Some(("AmazonSQS", op)) => self.handle_sqs(op, &body).await,
            Some(("AmazonSSM", op)) => self.handle_ssm(op, &body),
            Some(("AWSPriceListService", op)) => self.handle_pricing(op, &body),
            _ => self.handle_ec2(&body),
        }
    }

    fn handle_ec2(&self, body: &[u8]) -> Response<Full<Bytes>> {
        let params = query::Params::parse(body);
        let action = params.get("Action").unwrap_or("").to_string();
        let mut cloud = self.cloud.advance();
        let request_id = cloud.message_ids.uuid();
        let result = cloud.admit(&action).and_then(|()| ec2::dispatch(&mut cloud, &action, &params, &request_id));
        cloud.log_call(&action, result.as_ref().err());
        drop(cloud);
        self.wake.notify_waiters();
        match result {
            Ok(xml) => respond(StatusCode::OK, "text/xml;charset=UTF-8", xml, None),
            Err(e) => respond(
                status(&e),
                "text/xml;charset=UTF-8",
                xml::error_document(&e.code, &e.message, &request_id),
                None,
            ),
        }
    }

    async fn handle_sqs(&self, op: &str, body: &[u8]) -> Response<Full<Bytes>> {
        let value: serde_json::Value = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        let action = format!("SQS.{op}");
        let mut waited = Duration::ZERO;
        // Bounded: each pass either answers or waits out part of the (≤ 20 s) long poll.
        loop {
            let wake = self.wake.notified();
            let (result, deadline) = {
                let now = self.cloud.now();
                let mut cloud = self.cloud.advance();
                let first = waited.is_zero();
                let result = if first { cloud.admit(&action) } else { Ok(()) }
                    .and_then(|()| sqs_json::dispatch(&mut cloud, &self.endpoint, op, &value, waited));
                let is_final = !matches!(result, Ok(sqs_json::JsonOutcome::Wait(_)));
                if is_final {
                    cloud.log_call(&action, result.as_ref().err());
                }
                (result, cloud.next_deadline().map(|d| d.saturating_sub(now)))
            };
            match result {
                Ok(sqs_json::JsonOutcome::Done(v)) => {
                    if op == "SendMessage" {
                        self.wake.notify_waiters();
                    }
                    return respond(StatusCode::OK, "application/x-amz-json-1.0", v.to_string(), None);
                }
                Ok(sqs_json::JsonOutcome::Wait(left)) => {
                    // Re-check at least every second: a scenario may schedule events on the shared
                    // cloud directly, which does not wake this poller.
                    let step = deadline
                        .map_or(left, |d| d.min(left))
                        .min(Duration::from_secs(1))
                        .max(Duration::from_millis(1));
                    let before = self.cloud.now();
                    tokio::select! {
                        biased;
                        () = wake => {}
                        () = tokio::time::sleep(step) => {}
                    }
                    waited += self.cloud.now().saturating_sub(before).max(Duration::from_millis(1));
                }
                Err(e) => return json_error(&e),
            }
        }
    }

    fn handle_ssm(&self, op: &str, body: &[u8]) -> Response<Full<Bytes>> {
        let value: serde_json::Value = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        let action = format!("SSM.{op}");
        let mut cloud = self.cloud.advance();
        let result = cloud.admit(&action).and_then(|()| sqs_json::dispatch_ssm(&mut cloud, op, &value));
        cloud.log_call(&action, result.as_ref().err());
        match result {
            Ok(v) => respond(StatusCode::OK, "application/x-amz-json-1.1", v.to_string(), None),
            Err(e) => json_error(&e),
        }
    }
}

impl Server {
    fn handle_pricing(&self, op: &str, body: &[u8]) -> Response<Full<Bytes>> {
        let value: serde_json::Value = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        let action = format!("Pricing.{op}");
        let mut cloud = self.cloud.advance();
        let result = cloud.admit_scripted(&action).and_then(|()| pricing_json::dispatch(&mut cloud, op, &value));
        cloud.log_call(&action, result.as_ref().err());
        match result {
            Ok(v) => respond(StatusCode::OK, "application/x-amz-json-1.1", v.to_string(), None),
            Err(e) => json_error(&e),
        }
    }
}

fn status(e: &ApiError) -> StatusCode {
    StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST)
}

fn respond(code: StatusCode, content_type: &str, body: String, query_error: Option<String>) -> Response<Full<Bytes>> {
    let mut builder = Response::builder().status(code).header("content-type", content_type);
    if let Some(q) = query_error {
        builder = builder.header("x-amzn-query-error", q);
    }
    builder.body(Full::new(Bytes::from(body))).unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

fn plain(code: StatusCode, message: String) -> Response<Full<Bytes>> {
    respond(code, "text/plain", message, None)
}

/// awsJson error: `__type` plus SQS's query-compatible header, which the SDK prefers.
fn json_error(e: &ApiError) -> Response<Full<Bytes>> {
    let short = match e.code.as_str() {
        "AWS.SimpleQueueService.NonExistentQueue" => "QueueDoesNotExist",
        other => other,
    };
    let fault = if e.status >= 500 { "Receiver" } else { "Sender" };
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.sqs#{short}"),
        "message": e.message,
        "Message": e.message,
    })
    .to_string();
    respond(status(e), "application/x-amz-json-1.0", body, Some(format!("{};{fault}", e.code)))
}

/// Accepts connections on a turmoil listener forever (run it as a turmoil host). Each
/// connection's CPU is the fake cloud's in `dovetail bench split`.
pub async fn serve_turmoil(listener: turmoil::net::TcpListener, server: Server) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let server = server.clone();
        tokio::spawn(dovetail_world::cpu_meter::metered(("fakecloud", "fakecloud"), async move {
            server.serve_io(stream).await
        }));
    }
}

/// Accepts connections on a real TCP listener forever (e.g. 127.0.0.1 for the AWS CLI).
pub async fn serve_tcp(listener: tokio::net::TcpListener, server: Server) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let server = server.clone();
        tokio::spawn(async move { server.serve_io(stream).await });
    }
}
