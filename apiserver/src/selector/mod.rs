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
//! Files: `label.rs` (label selectors), `requirement.rs` (their ANDed terms),
//! `label_parser.rs` (the query-string lexer and parser of `labels.Parse`), `field.rs`
//! (field selectors), `field_labels.rs` (which fields each kind indexes and how their
//! values read), `validation.rs` (label key and value validation with apimachinery's
//! messages) and `error.rs`.

mod error;
mod field;
mod field_labels;
mod label;
mod label_parser;
mod requirement;
mod validation;

pub use error::{Result, SelectorError};
pub use field::{FieldSelector, FieldTerm, escape_value};
pub use field_labels::{field_value, supported_fields};
pub use label::LabelSelector;
pub use requirement::{Operator, Requirement};
pub use validation::{label_value_errors, qualified_name_errors};
