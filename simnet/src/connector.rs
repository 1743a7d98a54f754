//! A hyper-util connector that dials turmoil TCP.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

/// Dials `host:port` of a URI over the simulated network.
///
/// A partitioned peer drops packets without a reset, so an unguarded connect would hang
/// forever; the connect is bounded by `connect_timeout` in simulated time.
#[derive(Clone, Debug)]
pub struct TurmoilConnector {
    connect_timeout: Duration,
}

impl TurmoilConnector {
    /// A connector whose connects give up after `connect_timeout` of simulated time.
    pub fn new(connect_timeout: Duration) -> Self {
        Self { connect_timeout }
    }
}

impl Default for TurmoilConnector {
    fn default() -> Self {
        Self::new(Duration::from_secs(10))
    }
}

impl tower::Service<Uri> for TurmoilConnector {
    type Response = SimIo;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<SimIo, io::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let timeout = self.connect_timeout;
        Box::pin(async move {
            let host =
                uri.host().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "uri has no host"))?.to_string();
            let port = uri.port_u16().unwrap_or(80);
            let connect = turmoil::net::TcpStream::connect((host.as_str(), port));
            match tokio::time::timeout(timeout, connect).await {
                Ok(Ok(stream)) => Ok(SimIo(TokioIo::new(stream))),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connect to {host}:{port} timed out after {timeout:?}"),
                )),
            }
        })
    }
}

/// A turmoil TCP stream that hyper-util's client accepts.
///
/// `TokioIo<turmoil::net::TcpStream>` does not implement hyper-util's `Connection`, and
/// orphan rules keep us from adding it, hence the newtype.
#[derive(Debug)]
pub struct SimIo(TokioIo<turmoil::net::TcpStream>);

impl Connection for SimIo {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for SimIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for SimIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// A pooled HTTP/1 client over the simulated network.
///
/// Both timers are tokio's (simulated): without them hyper-util's pool falls back to
/// `std::time::Instant` for idle expiry, which is a wall clock.
pub fn http_client<B>(connector: TurmoilConnector) -> Client<TurmoilConnector, B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    Client::builder(TokioExecutor::new()).timer(TokioTimer::new()).pool_timer(TokioTimer::new()).build(connector)
}
