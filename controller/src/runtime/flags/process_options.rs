//! What `Flags::resolve` hands the process besides the controller's settings: log level, ports,
//! leader election and AWS endpoints.

use clap::ValueEnum;

/// `LOG_LEVEL` values (Karpenter's zap levels, plus `trace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Errors and warnings.
    Warn,
    /// The default.
    Info,
    /// Decisions and API calls.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// The `tracing` filter directive for this level.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

/// Which endpoint each AWS client dials; `None` means the SDK's regional default (HTTPS).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AwsEndpoints {
    /// EC2.
    pub ec2: Option<String>,
    /// SQS.
    pub sqs: Option<String>,
    /// SSM.
    pub ssm: Option<String>,
    /// The Price List API.
    pub pricing: Option<String>,
}

/// Leader election options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionOptions {
    /// Off only for single-replica runs.
    pub enabled: bool,
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This replica's identity, if set; the binary adds a random suffix otherwise.
    pub identity: Option<String>,
}

/// What the process needs besides the controller's [`Settings`].
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessOptions {
    /// Log verbosity.
    pub log_level: LogLevel,
    /// `/metrics` port.
    pub metrics_port: u16,
    /// `/healthz`, `/readyz` port.
    pub health_probe_port: u16,
    /// Leader election.
    pub leader_election: LeaderElectionOptions,
    /// AWS endpoint overrides.
    pub aws_endpoints: AwsEndpoints,
}
