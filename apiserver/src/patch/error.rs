//! The one error enum of the patch module, with the HTTP status the API server answers.

/// One field that two managers both want, reported in a server-side apply conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictCause {
    /// `conflict with "manager"` (plus ` using apps/v1` for Update managers), as the
    /// apiserver writes `StatusCause.message`.
    pub message: String,
    /// The field path in structured-merge-diff form, e.g. `.spec.replicas` or
    /// `.spec.containers[name="app"].image` (`StatusCause.field`).
    pub field: String,
}

/// Why a patch was rejected. Every variant maps to one Kubernetes `Status`; none is
/// retryable with the same body, except [`PatchError::Conflict`] with `force=true`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is malformed (bad JSON/YAML, wrong shape, bad directive format):
    /// 400 BadRequest with this message.
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well formed but cannot be applied to this object (a JSON patch `test`
    /// failed, a path is missing, a list of lists): 422 Invalid. The apiserver's Status
    /// message is "the server rejected our request due to an error in our request"; this text
    /// is its single cause.
    #[error("{0}")]
    Unprocessable(String),
    /// Server-side apply conflicts with other managers and `force` was false: 409 Conflict
    /// with reason Conflict, this message and one cause per field.
    #[error("{message}")]
    Conflict {
        /// `Apply failed with N conflict(s): ...`
        message: String,
        /// One cause per conflicting field, sorted by manager then path.
        causes: Vec<ConflictCause>,
    },
    /// The patch type is not accepted for this resource (strategic merge patch on a custom
    /// resource, or an unknown content type): 415 UnsupportedMediaType.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// More JSON patch operations than the apiserver accepts (10,000): 413.
    #[error("{0}")]
    TooLarge(String),
    /// An error the apiserver does not classify and answers 500 InternalError with this
    /// message: strategic merge patch without a merge key or with an unknown `$patch`, an
    /// apply configuration whose map lists lack or repeat their keys.
    #[error("{0}")]
    Internal(String),
}

impl PatchError {
    /// The HTTP status code the apiserver answers with.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::Unprocessable(_) => 422,
            PatchError::Conflict { .. } => 409,
            PatchError::UnsupportedMediaType(_) => 415,
            PatchError::TooLarge(_) => 413,
            PatchError::Internal(_) => 500,
        }
    }

    /// The `Status.reason` the apiserver sets.
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::Unprocessable(_) => "Invalid",
            PatchError::Conflict { .. } => "Conflict",
            PatchError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            PatchError::TooLarge(_) => "RequestEntityTooLarge",
            PatchError::Internal(_) => "InternalError",
        }
    }
}
