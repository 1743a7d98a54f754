//! Label and field selectors with the parsing, validation and matching rules of apimachinery.
//!
//! Clients (kube-rs, kubectl, the scheduler) send selectors as query strings
//! (`labelSelector=app=web,tier!=db`, `fieldSelector=spec.nodeName=`), and objects carry
//! selectors as `metav1.LabelSelector` (Deployments, PDBs). Both must behave exactly as
//! `k8s.io/apimachinery/pkg/labels` and `.../fields` do, including their error messages,
//! because a client that works against the simulator must work against EKS.
//!
//! ```
//! use dovetail_apiserver::selector::{FieldSelector, LabelSelector};
//! use serde_json::json;
//!
//! let pod = json!({"kind": "Pod", "metadata": {"name": "web-1", "labels": {"app": "web"}},
//!                  "status": {"phase": "Pending"}});
//! let labels = LabelSelector::parse("app in (web, api), !canary").unwrap();
//! let fields = FieldSelector::parse("spec.nodeName=,status.phase!=Failed").unwrap();
//! fields.supported_for("Pod").unwrap();
//! assert!(labels.matches_object(&pod) && fields.matches(&pod));
//! assert_eq!(labels.to_string(), "app in (api,web),!canary");
//! ```
//!
//! Files: `label.rs` (label selectors and their requirements), `label_parser.rs` (the
//! query-string lexer and parser of `labels.Parse`), `field.rs` (field selectors),
//! `field_labels.rs` (which fields each kind indexes and how their values read) and
//! `validation.rs` (label key and value validation with apimachinery's messages).

mod field;
mod field_labels;
mod label;
mod label_parser;
mod validation;

pub use field::{FieldSelector, FieldTerm, escape_value};
pub use field_labels::{field_value, supported_fields};
pub use label::{LabelSelector, Operator, Requirement};
pub use validation::{label_value_errors, qualified_name_errors};

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
