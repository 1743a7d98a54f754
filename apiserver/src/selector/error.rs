//! Why a selector was rejected.

/// Why a selector was rejected. The API server answers each with 400 BadRequest and the
/// `Display` text as the Status message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label selector query string or `metav1.LabelSelector` is malformed or invalid.
    #[error("{0}")]
    InvalidLabelSelector(String),
    /// A field selector query string is malformed (bad term or escape sequence).
    #[error("{0}")]
    InvalidFieldSelector(String),
    /// The field selector names a field the kind does not index
    /// (apiserver: `field label not supported: spec.foo`).
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

/// Result of selector operations.
pub type Result<T, E = SelectorError> = std::result::Result<T, E>;
