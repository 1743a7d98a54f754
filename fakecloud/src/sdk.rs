//! How an unmodified AWS SDK client reaches the fake: the SDK `HttpClient` over turmoil TCP,
//! a simulated time source, and configs built the way `rust-stack.md` §3.2 prescribes.
//!
//! Build clients *inside* the turmoil host that uses them: the hyper pool spawns its
//! connection tasks on the runtime current at the first request, and turmoil drops that
//! runtime when the host crashes or bounces.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sdk_ec2::config::SharedAsyncSleep;
use aws_sdk_ec2::config::retry::RetryConfig;
use aws_sdk_ec2::config::timeout::TimeoutConfig;
use aws_smithy_async::rt::sleep::TokioSleep;
use aws_smithy_async::time::TimeSource;
use dovetail_sdkhttp::HyperSdkClient;
use dovetail_simnet::{TurmoilConnector, http_client};

use crate::thread_rng_reseed::ThreadRngReseed;

/// The SDK's wall clock, replaced by simulated time: `UNIX_EPOCH + turmoil::since_epoch()`.
/// Used for SigV4 dates, clock-skew correction and retry token-bucket refill.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimTimeSource;

impl TimeSource for SimTimeSource {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + turmoil::since_epoch().unwrap_or_default()
    }
}

/// The SDK `HttpClient` (`dovetail-sdkhttp`, the production controller's too) over turmoil
/// TCP, so every attempt is a real request that the simulated network can delay, drop or
/// partition. Its connects give up after the SDK's connect timeout (10 s when unset) of
/// simulated time: a partitioned peer never answers a SYN.
pub fn sim_http_client() -> HyperSdkClient<TurmoilConnector> {
    HyperSdkClient::new(Duration::from_secs(10), |connect_timeout| http_client(TurmoilConnector::new(connect_timeout)))
}

/// What differs between simulated AWS clients. Everything else is fixed by
/// [`ec2_config`] / [`sqs_config`] for determinism.
#[derive(Debug, Clone)]
pub struct SdkOptions {
    /// e.g. `http://aws:80` (plain HTTP to the turmoil host).
    pub endpoint_url: String,
    /// e.g. `us-west-2`.
    pub region: String,
    /// Attempts per operation, including the first (SDK standard mode default: 3).
    pub max_attempts: u32,
    /// Retry back-off scale: attempt n waits `initial_backoff * 2^n * jitter`, where the
    /// SDK draws `jitter` from the thread-local fastrand, which this client reseeds from
    /// `thread_rng_seed` at the start of every operation and before each retry decision
    /// (see [`ThreadRngReseed`]).
    pub initial_backoff: Duration,
    /// Where this client's sequence of thread-local reseeds starts. Give each client of a world its
    /// own, derived from the world's seed.
    pub thread_rng_seed: u64,
    /// Per-attempt read timeout.
    pub read_timeout: Duration,
    /// Per-attempt timeout.
    pub attempt_timeout: Duration,
    /// Whole-operation timeout, retries included.
    pub operation_timeout: Duration,
}

impl SdkOptions {
    /// Options for EC2 calls: 3 attempts, 1 s initial back-off, 5 s read / 10 s attempt /
    /// 60 s operation timeouts (rust-stack.md §3.2).
    pub fn ec2(endpoint_url: &str, region: &str) -> Self {
        Self {
            endpoint_url: endpoint_url.into(),
            region: region.into(),
            max_attempts: 3,
            initial_backoff: Duration::from_secs(1),
            thread_rng_seed: 0,
            read_timeout: Duration::from_secs(5),
            attempt_timeout: Duration::from_secs(10),
            operation_timeout: Duration::from_secs(60),
        }
    }

    /// Options for SQS: as EC2 but with timeouts above Karpenter's 20 s long poll.
    pub fn sqs(endpoint_url: &str, region: &str) -> Self {
        Self {
            read_timeout: Duration::from_secs(30),
            attempt_timeout: Duration::from_secs(35),
            operation_timeout: Duration::from_secs(120),
            ..Self::ec2(endpoint_url, region)
        }
    }

    /// The same options with the retry jitter sequence starting at `seed`.
    #[must_use]
    pub fn with_thread_rng_seed(self, seed: u64) -> Self {
        Self { thread_rng_seed: seed, ..self }
    }

    fn retry(&self) -> RetryConfig {
        RetryConfig::standard().with_max_attempts(self.max_attempts).with_initial_backoff(self.initial_backoff)
    }

    fn timeouts(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .read_timeout(self.read_timeout)
            .operation_attempt_timeout(self.attempt_timeout)
            .operation_timeout(self.operation_timeout)
            .build()
    }
}

fn credentials() -> Credentials {
    Credentials::new("AKIDDOVETAILSIM", "dovetail-sim-secret", None, None, "dovetail-sim")
}

/// Defines `$config(opts)` and `$client(opts)` for one SDK crate: turmoil HTTP, simulated
/// time, tokio sleep, back-off jitter seeded per client ([`ThreadRngReseed`]), an own retry
/// partition `$partition` (the SDK's default token bucket is process-global), explicit
/// timeouts and fixed credentials. The crates share no config type, hence a macro.
macro_rules! sim_sdk {
    ($sdk:ident, $partition:literal, $config:ident, $client:ident, $what:literal) => {
        #[doc = concat!("The simulator's `", stringify!($sdk), "::Config` (", $what, ").")]
        pub fn $config(opts: &SdkOptions) -> $sdk::Config {
            $sdk::Config::builder()
                .behavior_version($sdk::config::BehaviorVersion::latest())
                .region($sdk::config::Region::new(opts.region.clone()))
                .endpoint_url(opts.endpoint_url.clone())
                .credentials_provider(credentials())
                .http_client(sim_http_client())
                .sleep_impl(SharedAsyncSleep::new(TokioSleep::new()))
                .time_source(SimTimeSource)
                .retry_config(opts.retry())
                .retry_partition($sdk::config::retry::RetryPartition::custom($partition).build())
                .interceptor(ThreadRngReseed::new(opts.thread_rng_seed))
                .timeout_config(opts.timeouts())
                .build()
        }

        #[doc = concat!("A client over [`", stringify!($config), "`].")]
        pub fn $client(opts: &SdkOptions) -> $sdk::Client {
            $sdk::Client::from_conf($config(opts))
        }
    };
}

sim_sdk!(aws_sdk_ec2, "dovetail-sim-ec2", ec2_config, ec2_client, "EC2");
sim_sdk!(aws_sdk_sqs, "dovetail-sim-sqs", sqs_config, sqs_client, "SQS: the interruption queue");
sim_sdk!(aws_sdk_ssm, "dovetail-sim-ssm", ssm_config, ssm_client, "SSM: Karpenter resolves AMI aliases through it");
sim_sdk!(
    aws_sdk_pricing,
    "dovetail-sim-pricing",
    pricing_config,
    pricing_client,
    "the Price List API, served at the EC2 endpoint and told apart by `X-Amz-Target: AWSPriceListService.*`"
);
