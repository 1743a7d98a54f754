//! How the production binary builds its AWS SDK clients. Our AWS SDK dependencies have their
//! default (TLS) features off, so the SDK has no HTTP client of its own: [`PlainHttpClient`] is
//! the SDK `HttpClient` of `dovetail-sdkhttp` over hyper's plain TCP connector, which reaches
//! `http://` endpoints such as moto_server or LocalStack. With the `tls` cargo feature, [`AwsConnection::default_chain`]
//! instead uses the SDK's default HTTPS client and aws-config's default credential chain
//! (environment, IRSA web identity, SSO, IMDS) for real AWS.
//!
//! The simulator does not use this module: it gives the same SDK clients the same
//! `HttpClient` over a connector that dials turmoil TCP (`dovetail_fakecloud::sdk`).

use std::time::Duration;

use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use dovetail_sdkhttp::HyperSdkClient;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector as HyperHttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

/// Connect timeout when the SDK does not set one.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Attempts per AWS operation, including the first (the SDK's standard mode).
const MAX_ATTEMPTS: u32 = 3;

/// Why the AWS clients could not be set up.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AwsSetupError {
    /// Static credentials were requested but a variable is missing.
    #[error(
        "{0} is not set: plain-HTTP builds read static credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )]
    MissingCredential(&'static str),
    /// This build cannot speak HTTPS but the endpoint needs it.
    #[error(
        "{service} endpoint {endpoint} needs HTTPS, but this dovetail-controller was built without the `tls` feature; \
         set AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_{service_upper}) to an http:// endpoint, or rebuild with \
         `cargo build --release --features tls`"
    )]
    NeedsTls {
        /// `ec2`, `sqs`, `ssm` or `pricing`.
        service: &'static str,
        /// The same, upper-case, for the variable name.
        service_upper: String,
        /// The endpoint, or the SDK's regional default.
        endpoint: String,
    },
}

/// An SDK `HttpClient` that sends each request over plain HTTP/1 with hyper's TCP connector.
/// `https://` URLs fail with hyper's "invalid URL, scheme is not http"; [`check_endpoint`]
/// reports that clearly at startup instead. The connection pool is built on first use, on the
/// runtime current then.
pub type PlainHttpClient = HyperSdkClient<HyperHttpConnector>;

/// A [`PlainHttpClient`].
pub fn plain_http_client() -> PlainHttpClient {
    HyperSdkClient::new(CONNECT_TIMEOUT, hyper_client)
}

fn hyper_client(connect_timeout: Duration) -> Client<HyperHttpConnector, SdkBody> {
    let mut connector = HyperHttpConnector::new();
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_nodelay(true);
    // tokio timers (not std::time) drive pool expiry, as everywhere else in the crate.
    Client::builder(TokioExecutor::new()).timer(TokioTimer::new()).pool_timer(TokioTimer::new()).build(connector)
}

/// Static credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optionally
/// `AWS_SESSION_TOKEN`, read through `lookup` (the binary passes `std::env::var`).
///
/// # Errors
/// When the key id or secret is missing or empty.
pub fn credentials_from_env(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<SharedCredentialsProvider, AwsSetupError> {
    let get = |name: &'static str| lookup(name).filter(|v| !v.is_empty());
    let key = get("AWS_ACCESS_KEY_ID").ok_or(AwsSetupError::MissingCredential("AWS_ACCESS_KEY_ID"))?;
    let secret = get("AWS_SECRET_ACCESS_KEY").ok_or(AwsSetupError::MissingCredential("AWS_SECRET_ACCESS_KEY"))?;
    Ok(SharedCredentialsProvider::new(Credentials::new(key, secret, get("AWS_SESSION_TOKEN"), None, "environment")))
}

/// Whether this build can reach `endpoint` (`None`: the SDK's regional HTTPS default).
///
/// # Errors
/// [`AwsSetupError::NeedsTls`] when the build has no `tls` feature and the endpoint is not http://.
pub fn check_endpoint(service: &'static str, endpoint: Option<&str>) -> Result<(), AwsSetupError> {
    let plain = endpoint.is_some_and(|e| e.trim().to_ascii_lowercase().starts_with("http://"));
    if plain || cfg!(feature = "tls") {
        return Ok(());
    }
    Err(AwsSetupError::NeedsTls {
        service,
        service_upper: service.to_ascii_uppercase(),
        endpoint: endpoint.map_or_else(|| format!("(the {service} regional default, https)"), str::to_string),
    })
}

/// What every AWS client shares: region, credentials and HTTP client.
#[derive(Clone, Debug)]
pub struct AwsConnection {
    /// AWS region.
    pub region: String,
    /// Credentials.
    pub credentials: SharedCredentialsProvider,
    /// The HTTP client; `None` means the SDK's default HTTPS client (only with `tls`).
    pub http: Option<SharedHttpClient>,
}

impl AwsConnection {
    /// Plain HTTP with the given credentials: the only mode without the `tls` feature.
    pub fn plain_http(region: impl Into<String>, credentials: SharedCredentialsProvider) -> Self {
        Self { region: region.into(), credentials, http: Some(SharedHttpClient::new(plain_http_client())) }
    }

    /// The SDK's default HTTPS client and aws-config's default credential chain (environment,
    /// profile, IRSA web identity, ECS, IMDS), for real AWS.
    #[cfg(feature = "tls")]
    pub async fn default_chain(region: impl Into<String>) -> Self {
        let region = region.into();
        let chain = aws_config::default_provider::credentials::DefaultCredentialsChain::builder()
            .region(aws_config::Region::new(region.clone()))
            .build()
            .await;
        Self { region, credentials: SharedCredentialsProvider::new(chain), http: None }
    }
}

fn timeouts(read: Duration, attempt: Duration) -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(read)
        .operation_attempt_timeout(attempt)
        .operation_timeout(attempt * MAX_ATTEMPTS + Duration::from_secs(30))
        .build()
}

/// A retry partition that owns its token bucket and client rate limiter.
///
/// The SDK's default partition keeps them in a process-wide static map keyed by service and
/// region (aws-smithy-runtime `client/retries/strategy/standard.rs` `TOKEN_BUCKET`), so every
/// client of that service in the process draws on one retry quota. One controller per process
/// sees no difference; but a controller restarted inside one process, or several controllers
/// in one process, would inherit each other's spent quota: behaviour that depends on what
/// ran before. A custom partition starts full, with the same default bucket, as a fresh
/// process does.
fn own_retry_partition(service: &'static str, region: &str) -> aws_sdk_ec2::config::retry::RetryPartition {
    aws_sdk_ec2::config::retry::RetryPartition::custom(format!("{service}-{region}")).build()
}

macro_rules! client_builder {
    ($(#[$doc:meta])* $name:ident, $sdk:ident, $read:expr, $attempt:expr) => {
        $(#[$doc])*
        pub fn $name(endpoint: Option<&str>, conn: &AwsConnection) -> $sdk::Client {
            let mut builder = $sdk::Config::builder()
                .behavior_version($sdk::config::BehaviorVersion::latest())
                .region($sdk::config::Region::new(conn.region.clone()))
                .credentials_provider(conn.credentials.clone())
                .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
                .retry_partition(own_retry_partition(stringify!($sdk), &conn.region))
                .timeout_config(timeouts($read, $attempt));
            if let Some(endpoint) = endpoint {
                builder = builder.endpoint_url(endpoint);
            }
            if let Some(http) = &conn.http {
                builder = builder.http_client(http.clone());
            }
            $sdk::Client::from_conf(builder.build())
        }
    };
}

client_builder!(
    /// An EC2 client for `endpoint` (`None`: the regional default).
    ec2_client, aws_sdk_ec2, Duration::from_secs(30), Duration::from_secs(45)
);
client_builder!(
    /// An SQS client; its timeouts exceed Karpenter's 20 s long poll.
    sqs_client, aws_sdk_sqs, Duration::from_secs(30), Duration::from_secs(45)
);
client_builder!(
    /// An SSM client (AMI alias resolution).
    ssm_client, aws_sdk_ssm, Duration::from_secs(30), Duration::from_secs(45)
);
client_builder!(
    /// A Price List API client in `conn`'s region (use [`pricing_client`]).
    pricing_client_in_region, aws_sdk_pricing, Duration::from_secs(30), Duration::from_secs(45)
);

/// A Price List API client for a cluster in `conn`'s region: the API lives in a few regions
/// only, so it dials the nearest (aws `pkg/providers/pricing/pricing.go` `NewAPI`).
pub fn pricing_client(endpoint: Option<&str>, conn: &AwsConnection) -> aws_sdk_pricing::Client {
    let mut conn = conn.clone();
    conn.region = crate::cloudprovider::aws::price_list::pricing_region(&conn.region).to_owned();
    pricing_client_in_region(endpoint, &conn)
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[test]
    fn env_credentials_need_key_and_secret() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_string())
        };
        assert_eq!(
            credentials_from_env(env(&[("AWS_SECRET_ACCESS_KEY", "s")])).unwrap_err(),
            AwsSetupError::MissingCredential("AWS_ACCESS_KEY_ID")
        );
        assert_eq!(
            credentials_from_env(env(&[("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "")])).unwrap_err(),
            AwsSetupError::MissingCredential("AWS_SECRET_ACCESS_KEY")
        );
        assert!(credentials_from_env(env(&[("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s")])).is_ok());
    }

    #[test]
    fn plain_builds_refuse_https_endpoints_with_a_hint() {
        assert_eq!(check_endpoint("ec2", Some("http://localhost:5000")), Ok(()));
        if cfg!(feature = "tls") {
            assert_eq!(check_endpoint("ec2", None), Ok(()));
        } else {
            let err = check_endpoint("sqs", None).unwrap_err().to_string();
            assert!(err.contains("--features tls") && err.contains("AWS_ENDPOINT_URL_SQS"), "{err}");
            let err = check_endpoint("ec2", Some("https://ec2.us-west-2.amazonaws.com")).unwrap_err().to_string();
            assert!(err.contains("https://ec2.us-west-2.amazonaws.com"), "{err}");
        }
    }

    /// The SDK client reaches a plain-HTTP server through [`PlainHttpClient`] and parses its
    /// answer (a one-request EC2 stand-in on a loopback port).
    #[test]
    fn ec2_client_speaks_plain_http() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let service = hyper::service::service_fn(|request: http::Request<hyper::body::Incoming>| async move {
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    let form = String::from_utf8_lossy(&body).to_string();
                    assert!(form.contains("Action=DescribeAvailabilityZones"), "{form}");
                    let xml = r#"<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><availabilityZoneInfo><item><zoneName>us-west-2a</zoneName><zoneId>usw2-az1</zoneId></item></availabilityZoneInfo></DescribeAvailabilityZonesResponse>"#;
                    Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(bytes::Bytes::from(xml))))
                });
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await
                    .unwrap();
            });
            let credentials = SharedCredentialsProvider::new(Credentials::new("AKID", "secret", None, None, "test"));
            let conn = AwsConnection::plain_http("us-west-2", credentials);
            let ec2 = ec2_client(Some(&format!("http://{addr}")), &conn);
            let zones = ec2.describe_availability_zones().send().await.unwrap();
            let names: Vec<_> = zones.availability_zones().iter().filter_map(|z| z.zone_name()).collect();
            assert_eq!(names, ["us-west-2a"]);
            drop(ec2);
            server.abort();
        });
    }
}
