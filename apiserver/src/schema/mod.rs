//! CustomResourceDefinition admission: what a real kube-apiserver does to a custom resource
//! between decoding the request and storing it.
//!
//! Start at [`CrdSchema::compile`] (once per CRD version) and [`CrdSchema::admit`] (per write).
//! Admission runs the apiserver's steps in its order:
//!
//! 1. **Decode** integral floats as integers ([`numbers`]), then **prune** fields the schema does
//!    not know ([`prune`]); their paths come back so the handler can fail under
//!    `fieldValidation=Strict` or warn.
//! 2. **Default** missing fields from schema `default`s, nested ones included ([`default`]).
//! 3. **Validate** `metadata` ([`metadata`]), the structural schema ([`validate`], kube-openapi's
//!    rules and messages), and list-type invariants ([`list_type`]).
//! 4. **CEL**: every `x-kubernetes-validations` rule ([`rules`], evaluated by kube-cel in
//!    [`cel`]), unless step 3 found an error that blocks CEL, as `hasBlockingErr` does.
//!
//! Errors are [`FieldError`]s rendered exactly like apimachinery's `field.Error`;
//! [`invalid_status`] wraps them in the 422 `Status` body.
//!
//! ```
//! use dovetail_apiserver::schema::{CrdSchema, Rejection, invalid_status};
//! use serde_json::json;
//!
//! let crd = json!({
//!     "apiVersion": "apiextensions.k8s.io/v1",
//!     "kind": "CustomResourceDefinition",
//!     "metadata": {"name": "widgets.example.com"},
//!     "spec": {
//!         "group": "example.com",
//!         "names": {"plural": "widgets", "kind": "Widget"},
//!         "scope": "Cluster",
//!         "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
//!             "type": "object",
//!             "properties": {"spec": {
//!                 "type": "object",
//!                 "properties": {"size": {"type": "string", "enum": ["S", "M"], "default": "S"}},
//!                 "x-kubernetes-validations": [{"rule": "self.size != 'M'", "message": "no M today"}]
//!             }}
//!         }}}]
//!     }
//! });
//! let schema = CrdSchema::compile(&crd, "v1")?;
//!
//! let mut widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
//!                         "metadata": {"name": "w"}, "spec": {"colour": "red"}});
//! let admitted = schema.admit(&mut widget, None, false).expect("valid");
//! assert_eq!(admitted.warnings, [r#"unknown field "spec.colour""#]);
//! assert_eq!(widget["spec"], json!({"size": "S"}));
//!
//! let mut bad = json!({"apiVersion": "example.com/v1", "kind": "Widget",
//!                      "metadata": {"name": "w"}, "spec": {"size": "M"}});
//! let Err(Rejection::Invalid(errors)) = schema.admit(&mut bad, None, true) else { panic!() };
//! assert_eq!(errors[0].message, r#"spec: Invalid value: "object": no M today"#);
//! let status = invalid_status(schema.group(), schema.kind(), "w", &errors);
//! assert_eq!(status["code"], 422);
//! assert_eq!(status["message"], r#"Widget.example.com "w" is invalid: spec: Invalid value: "object": no M today"#);
//! # Ok::<(), dovetail_apiserver::schema::CrdError>(())
//! ```

#![warn(missing_docs)]

mod cel;
mod crd;
mod default;
mod error;
mod format;
mod list_type;
mod metadata;
mod node;
mod numbers;
mod path;
mod pattern;
mod prune;
mod rules;
mod status;
#[cfg(test)]
mod tests;
mod validate;

pub use cel::RuleResult;
pub use error::{CrdError, FieldError, FieldErrorKind};
pub use rules::RuleOutcome;
pub use status::{invalid_status, strict_decoding_status};

use serde_json::Value;

use node::{Additional, Node};

/// Compiled admission for one served version of one CRD. Compile once when the CRD is applied
/// (NodePool: a few milliseconds), then `admit` every write: about 1 ms for a NodePool create,
/// mostly CEL (kube-cel recompiles the regex of every `find()` call); much less on updates, where
/// unchanged values ratchet and skip their rules. `Send + Sync`, so it can be shared.
pub struct CrdSchema {
    name: String,
    group: String,
    kind: String,
    plural: String,
    version: String,
    namespaced: bool,
    status_subresource: bool,
    root: Node,
    validator: kube_cel::Validator,
}

impl std::fmt::Debug for CrdSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrdSchema").field("name", &self.name).field("version", &self.version).finish_non_exhaustive()
    }
}

/// A write that passed admission.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Admitted {
    /// Paths of unknown fields that were pruned (`spec.foo`, `spec.list[0].bar`), document order.
    pub pruned: Vec<String>,
    /// `Warning` headers for `fieldValidation=Warn`: `unknown field "spec.foo"`.
    pub warnings: Vec<String>,
}

/// Why a write was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// 422 Invalid: the object breaks its schema or rules. Render with [`invalid_status`].
    Invalid(Vec<FieldError>),
    /// 400 BadRequest under `fieldValidation=Strict`: unknown fields were sent. Render with
    /// [`strict_decoding_status`].
    UnknownFields(Vec<String>),
}

impl Rejection {
    /// The `Status` body (and its `code`) a real apiserver returns for this rejection.
    pub fn status(&self, group: &str, kind: &str, name: &str) -> Value {
        match self {
            Self::Invalid(errors) => invalid_status(group, kind, name, errors),
            Self::UnknownFields(pruned) => strict_decoding_status(pruned),
        }
    }
}

/// Detail of the error the apiserver adds when CEL rules were skipped because of blocking errors.
const CEL_SKIPPED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

impl CrdSchema {
    /// Checks the CRD manifest and compiles `version`'s schema and CEL rules.
    ///
    /// # Errors
    /// [`CrdError::Invalid`] if the apiserver would refuse the CRD (bad names or group, not exactly
    /// one storage version, a version without schema, a non-structural schema, a pattern that
    /// does not compile, a CEL rule that does not compile); [`CrdError::VersionNotServed`] if
    /// `version` is not a served version.
    pub fn compile(crd: &Value, version: &str) -> Result<CrdSchema, CrdError> {
        match crd::read(crd, version) {
            crd::Read::Ok(parts) => Ok(CrdSchema {
                name: parts.name,
                group: parts.group,
                kind: parts.kind,
                plural: parts.plural,
                version: version.to_string(),
                namespaced: parts.namespaced,
                status_subresource: parts.status_subresource,
                root: parts.root,
                validator: kube_cel::Validator::new(),
            }),
            crd::Read::Invalid { name, problems } => Err(CrdError::Invalid { name, problems }),
            crd::Read::VersionNotServed { name } => {
                Err(CrdError::VersionNotServed { name, version: version.to_string() })
            }
        }
    }

    /// Admits a write: prunes, defaults and validates `obj` in place.
    ///
    /// `old` is `None` on create and the stored object on update (transition rules, those that
    /// read `oldSelf`, run only then). With `strict`, any pruned field rejects the write
    /// (`fieldValidation=Strict`); otherwise pruned fields come back as warnings.
    ///
    /// # Errors
    /// [`Rejection::UnknownFields`] under `strict`; [`Rejection::Invalid`] with every field
    /// error, in a stable order: metadata, schema (depth first, schema property order), list
    /// types, then CEL rules.
    pub fn admit(&self, obj: &mut Value, old: Option<&Value>, strict: bool) -> Result<Admitted, Rejection> {
        numbers::normalize(obj);
        let pruned = prune::prune_root(&self.root, obj);
        if strict && !pruned.is_empty() {
            return Err(Rejection::UnknownFields(pruned));
        }
        default::apply(&self.root, obj);
        let mut errs = Vec::new();
        metadata::validate(obj, self.namespaced, &mut errs);
        validate::validate(&self.root, obj, old, "", &mut errs);
        list_type::validate(&self.root, obj, old, "", &mut errs);
        if errs.iter().any(|e| e.kind.blocks_cel()) {
            errs.push(FieldError::invalid("", Value::Null, CEL_SKIPPED));
        } else {
            for outcome in rules::evaluate(&self.validator, &self.root, obj, old) {
                match outcome.result {
                    RuleResult::Failed(e) | RuleResult::Errored(e) => errs.push(e),
                    RuleResult::Passed | RuleResult::SkippedNoOldSelf | RuleResult::SkippedUnchanged => {}
                }
            }
        }
        if !errs.is_empty() {
            return Err(Rejection::Invalid(errs));
        }
        let warnings = pruned.iter().map(|p| format!("unknown field {p:?}")).collect();
        Ok(Admitted { pruned, warnings })
    }

    /// Runs every CEL rule that applies to `obj` (no pruning, defaulting or schema checks) and
    /// reports each result, passes included. For tests and for explaining a rejection.
    pub fn evaluate_rules(&self, obj: &Value, old: Option<&Value>) -> Vec<RuleOutcome> {
        rules::evaluate(&self.validator, &self.root, obj, old)
    }

    /// Every CEL rule in the schema as `(schema path, rule)`, in schema order; list items are
    /// `[*]` and map values `[*]` in the path (`spec.template.spec.requirements[*].key`).
    pub fn rule_sites(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        collect_sites(&self.root, "", &mut out);
        out
    }

    /// The CRD's API group (`karpenter.sh`).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The kind (`NodePool`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The resource name in URLs (`nodepools`).
    pub fn plural(&self) -> &str {
        &self.plural
    }

    /// The version this schema admits (`v1`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether objects live in namespaces (`scope: Namespaced`).
    pub fn namespaced(&self) -> bool {
        self.namespaced
    }

    /// Whether the version declares the `status` subresource.
    pub fn has_status_subresource(&self) -> bool {
        self.status_subresource
    }
}

fn collect_sites(node: &Node, at: &str, out: &mut Vec<(String, String)>) {
    for rule in &node.rules {
        out.push((at.to_string(), rule.rule.clone()));
    }
    for (name, child) in &node.properties {
        collect_sites(child, &path::child(at, name), out);
    }
    if let Additional::Schema(child) = &node.additional {
        collect_sites(child, &format!("{at}[*]"), out);
    }
    if let Some(items) = &node.items {
        collect_sites(items, &format!("{at}[*]"), out);
    }
}
