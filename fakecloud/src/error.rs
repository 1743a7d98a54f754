//! Errors: API errors the fake returns to callers, and errors building the fake itself.

use std::path::PathBuf;

/// An error as EC2 or SQS reports it on the wire: a code, a message and an HTTP status.
///
/// The code is the contract: Karpenter and the SDK branch on it (`RequestLimitExceeded` is
/// retried, `InvalidInstanceID.NotFound` means "gone", ICE codes feed the ICE cache).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// The AWS error code, e.g. `InsufficientInstanceCapacity`.
    pub code: String,
    /// The human-readable message.
    pub message: String,
    /// The HTTP status the wire adapter answers with.
    pub status: u16,
}

impl ApiError {
    /// A client error (HTTP 400): the request itself is wrong or refers to something missing.
    pub fn client(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_string(), message: message.into(), status: 400 }
    }

    /// A server-side error with an explicit status (500 and 503 are retried by the SDK).
    pub fn server(code: &str, message: impl Into<String>, status: u16) -> Self {
        Self { code: code.to_string(), message: message.into(), status }
    }

    /// EC2's throttling error. HTTP 503, which the SDK classifies as throttling and retries.
    pub fn throttled(action: &str) -> Self {
        Self::server("RequestLimitExceeded", format!("Request limit exceeded for {action}."), 503)
    }

    /// `InvalidParameterValue`, for malformed input.
    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::client("InvalidParameterValue", message)
    }

    /// `MissingParameter`, when a required field is absent.
    pub fn missing_parameter(name: &str) -> Self {
        Self::client("MissingParameter", format!("The request must contain the parameter {name}"))
    }
}

/// Result of a fake-cloud API call.
pub type ApiResult<T> = Result<T, ApiError>;

/// Errors building a fake cloud (loading the catalog, bad scenario input). Not retryable:
/// they mean the scenario or the data files are wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A data file could not be read.
    #[error("reading {path}")]
    Read {
        /// The file that failed.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A CSV line did not have the expected shape.
    #[error("{file}:{line}: {message}")]
    Csv {
        /// Which file (a name, for messages).
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The shared data directory could not be found.
    #[error("cannot find the EC2 data directory (looked for {0:?})")]
    DataDirNotFound(Vec<PathBuf>),
    /// A scenario asked for something the catalog does not contain.
    #[error("unknown {kind} {name:?}")]
    Unknown {
        /// What kind of thing (`instance type`, `zone`, ...).
        kind: &'static str,
        /// Its name.
        name: String,
    },
}

/// Result of building or configuring a fake cloud.
pub type Result<T, E = Error> = std::result::Result<T, E>;
