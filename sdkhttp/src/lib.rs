//! The AWS SDK's `HttpClient` over a pooled hyper-util HTTP/1 client, whatever dials its TCP.
//!
//! Our AWS SDK dependencies have their default (TLS) features off, so the SDK has no HTTP
//! client of its own. [`HyperSdkClient`] is the one we give it: each SDK attempt becomes one
//! request on a hyper-util [`Client`], its body is read whole, and the SDK's read timeout
//! bounds the exchange. What the client dials is the caller's choice: the production
//! controller passes hyper-util's TCP `HttpConnector`, the simulator a connector that dials
//! turmoil TCP. This crate knows neither.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::Connect;

/// Builds the pooled client for a connect timeout (the SDK's, or the default).
type BuildClient<C> = dyn Fn(Duration) -> Client<C, SdkBody> + Send + Sync;

/// An SDK `HttpClient` that sends each attempt over a pooled hyper-util client.
///
/// The pool is built on first use, on the tokio runtime current then: build the SDK client
/// inside the runtime (or simulated host) that will use it.
pub struct HyperSdkClient<C> {
    default_connect_timeout: Duration,
    build: Arc<BuildClient<C>>,
    client: Arc<OnceLock<Client<C, SdkBody>>>,
}

impl<C> HyperSdkClient<C> {
    /// A client whose pool `build` makes for the SDK's connect timeout, or
    /// `default_connect_timeout` when the SDK sets none.
    pub fn new(
        default_connect_timeout: Duration,
        build: impl Fn(Duration) -> Client<C, SdkBody> + Send + Sync + 'static,
    ) -> Self {
        Self { default_connect_timeout, build: Arc::new(build), client: Arc::new(OnceLock::new()) }
    }
}

impl<C> Clone for HyperSdkClient<C> {
    fn clone(&self) -> Self {
        Self {
            default_connect_timeout: self.default_connect_timeout,
            build: self.build.clone(),
            client: self.client.clone(),
        }
    }
}

impl<C> std::fmt::Debug for HyperSdkClient<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperSdkClient")
            .field("default_connect_timeout", &self.default_connect_timeout)
            .field("pool_built", &self.client.get().is_some())
            .finish_non_exhaustive()
    }
}

impl<C> HttpClient for HyperSdkClient<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    fn http_connector(&self, settings: &HttpConnectorSettings, _components: &RuntimeComponents) -> SharedHttpConnector {
        let connect_timeout = settings.connect_timeout().unwrap_or(self.default_connect_timeout);
        let client = self.client.get_or_init(|| (self.build)(connect_timeout)).clone();
        SharedHttpConnector::new(Exchange { client, read_timeout: settings.read_timeout() })
    }
}

/// One SDK attempt: a request, the whole response body, bounded by the read timeout.
struct Exchange<C> {
    client: Client<C, SdkBody>,
    read_timeout: Option<Duration>,
}

impl<C> std::fmt::Debug for Exchange<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange").field("read_timeout", &self.read_timeout).finish_non_exhaustive()
    }
}

impl<C> HttpConnector for Exchange<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = self.client.clone();
        let read_timeout = self.read_timeout;
        HttpConnectorFuture::new(async move {
            let request = request.try_into_http1x().map_err(|e| ConnectorError::user(e.into()))?;
            let exchange = async {
                let response = client.request(request).await.map_err(|e| ConnectorError::io(e.into()))?;
                let (parts, body) = response.into_parts();
                let bytes = body.collect().await.map_err(|e| ConnectorError::io(e.into()))?.to_bytes();
                Ok::<_, ConnectorError>(http::Response::from_parts(parts, SdkBody::from(bytes)))
            };
            let response = match read_timeout {
                Some(limit) => {
                    tokio::time::timeout(limit, exchange).await.map_err(|e| ConnectorError::timeout(e.into()))??
                }
                None => exchange.await?,
            };
            HttpResponse::try_from(response).map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}
