//! Validation errors with field paths, and the checks shared by the CRD kinds.
//!
//! The upstream CRDs carry OpenAPI constraints (patterns, enums, ranges, item counts) and CEL
//! rules (`x-kubernetes-validations`) that a real kube-apiserver enforces on admission. Dovetail's
//! simulated API server does not evaluate CEL, and scenario files are loaded without an API server
//! at all, so each kind ports its rules to Rust (`NodePool::validate` and friends). Errors name
//! the field the way the API server does (`spec.template.spec.requirements[2].operator`) and use
//! the CRD's own message for CEL rules, so a user sees the error Karpenter would show.
//!
//! Karpenter additionally runs `RuntimeValidate` in its NodePool readiness controller (restricted
//! label domains, qualified names, duplicate taints). Its failures do not reject an object; they
//! set the NodePool's `ValidationSucceeded` condition to False. Those checks live here as
//! `runtime_*` helpers and are exposed as `NodePool::runtime_validate`.
//!
//! The parts: `errors.rs` ([`ValidationErrors`]), `patterns.rs` (the CRDs' compiled patterns),
//! `names.rs` (apimachinery name rules), `crd_rules.rs` (schema and CEL rules shared by the
//! kinds) and `runtime.rs` (Karpenter's runtime checks). Everything is re-exported here.

mod crd_rules;
mod errors;
mod names;
mod patterns;
mod runtime;

pub(crate) use crd_rules::{
    ConditionRules, RequirementsOf, conditions, label_key_cel_rules, requirements, resource_list, taints,
    template_labels,
};
pub(crate) use errors::supported;
pub use errors::{FieldError, ValidationErrors};
pub use names::{label_value_errors, qualified_name_errors};
// Every compiled pattern, by the name the kinds' rules use (`validation::LABEL_KEY`).
pub(crate) use patterns::*;
pub use runtime::runtime_requirement_errors;
pub(crate) use runtime::{runtime_labels, runtime_taints};
