//! One `x-kubernetes-validations` rule, compiled by kube-cel and evaluated against one value.
//!
//! kube-cel's [`Validator`] walks a whole schema tree, pairing old and new values by array index
//! and visiting properties in hash order. A real apiserver pairs list items only through
//! `x-kubernetes-list-type: map` keys and its errors come out in a fixed order, so we keep the walk
//! ourselves ([`super::rules`]) and hand kube-cel one rule at a time: each rule is compiled against
//! a copy of its node's subtree with every other rule removed. kube-cel then does what it is good
//! at: CEL, the Kubernetes function libraries, `format`-aware value conversion, `messageExpression`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use kube_cel::{CompiledSchema, ErrorKind, ValidationError, Validator, compile_schema};
use serde_json::Value;

use super::error::{FieldError, FieldErrorKind, Shown};
use super::path;

/// A compiled rule plus what the apiserver needs to report its failure.
#[derive(Debug)]
pub(crate) struct CelRule {
    /// The CEL expression as written.
    pub(crate) rule: String,
    /// `reason` (`FieldValueForbidden`, ...), if given.
    reason: Option<String>,
    /// `fieldPath`, relative to the node (`.spec.foo`, `['key']`), if given.
    field_path: Option<String>,
    /// Whether the rule reads `oldSelf` (then it runs only on update, with a correlated old value).
    pub(crate) is_transition: bool,
    /// `optionalOldSelf: true`: run transition rules on create too, with `oldSelf` null.
    optional_old_self: bool,
    /// This node's subtree holding only this rule.
    compiled: CompiledSchema,
    /// Outcomes already computed, by the serialized value and old value. A rule is a pure
    /// function of them, and the same values come back again and again (every NodeClaim of a
    /// NodePool carries the same requirements; status writes resend unchanged specs), while
    /// CEL's `matches()` compiles its regular expression on every call (cel 0.13
    /// `functions::matches`): that compile was 9% of the API-server-fault scenario's CPU.
    memo: Mutex<BTreeMap<MemoKey, Option<ValidationError>>>,
}

/// A rule's input as the memo keys it: the serialized value and old value.
type MemoKey = (String, Option<String>);

/// How many outcomes a rule remembers before it starts over; bounds the memory a long run
/// with ever-changing values can take.
const MEMO_LIMIT: usize = 4096;

/// What one rule did to one value.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleResult {
    /// The rule returned `true`.
    Passed,
    /// The rule returned `false`: the object is invalid.
    Failed(FieldError),
    /// The rule could not be evaluated (unsupported function, runtime error, non-bool result).
    /// The object is rejected with this error: we fail closed rather than admit unchecked data.
    Errored(FieldError),
    /// A transition rule on create, or on a value with no correlatable old value: not run, as
    /// in the apiserver.
    SkippedNoOldSelf,
    /// On update, the value equals its old value and the rule does not read `oldSelf`: not run
    /// (validation ratcheting).
    SkippedUnchanged,
}

impl CelRule {
    /// Compiles every rule of `schema`'s `x-kubernetes-validations`, recording compile failures
    /// (the apiserver rejects such a CRD) in `problems`.
    pub(crate) fn compile_all(schema: &Value, at: &str, problems: &mut Vec<String>) -> Vec<CelRule> {
        let Some(raw_rules) = schema.get("x-kubernetes-validations").and_then(Value::as_array) else {
            return Vec::new();
        };
        let mut stripped = schema.clone();
        strip_rules(&mut stripped);
        let mut out = Vec::with_capacity(raw_rules.len());
        for (i, raw) in raw_rules.iter().enumerate() {
            let at_rule = path::index(&path::child(at, "x-kubernetes-validations"), i);
            let Some(rule) = raw.get("rule").and_then(Value::as_str) else {
                problems.push(format!("{at_rule}.rule: Required value"));
                continue;
            };
            let mut single = stripped.clone();
            if let Some(obj) = single.as_object_mut() {
                obj.insert("x-kubernetes-validations".into(), Value::Array(vec![raw.clone()]));
            }
            let compiled = compile_schema(&single);
            let Some(first) = compiled.validations.first() else {
                problems.push(format!("{at_rule}: rule was not compiled"));
                continue;
            };
            let is_transition = match first {
                Ok(result) => result.is_transition_rule,
                Err(e) => {
                    problems.push(format!("{at_rule}.rule: Invalid value: {rule:?}: compilation failed: {e}"));
                    continue;
                }
            };
            let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
            out.push(CelRule {
                rule: rule.to_string(),
                reason: text("reason"),
                field_path: text("fieldPath"),
                is_transition,
                optional_old_self: raw.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
                compiled,
                memo: Mutex::new(BTreeMap::new()),
            });
        }
        out
    }

    /// Runs the rule on `value` (at field path `at`, schema type `type_name`), with `old` the
    /// correlated old value on update.
    pub(crate) fn evaluate(
        &self,
        validator: &Validator,
        value: &Value,
        old: Option<&Value>,
        at: &str,
        type_name: &str,
    ) -> RuleResult {
        if self.is_transition && old.is_none() && !self.optional_old_self {
            return RuleResult::SkippedNoOldSelf;
        }
        let Some(err) = self.first_error(validator, value, old) else {
            return RuleResult::Passed;
        };
        let field = match &self.field_path {
            Some(fp) => join_field_path(at, fp),
            None => at.to_string(),
        };
        let shown = Shown::Json(Value::String(type_name.to_string()));
        match err.kind {
            ErrorKind::ValidationFailure => {
                let kind = self.reason.as_deref().map(FieldErrorKind::from_reason).unwrap_or(FieldErrorKind::Invalid);
                let detail = if kind == FieldErrorKind::Duplicate { "" } else { err.message.as_str() };
                RuleResult::Failed(FieldError::new(&field, kind, shown, detail))
            }
            // The apiserver's wording for runtime errors: `<error> evaluating rule: <rule>`.
            ErrorKind::EvaluationError => {
                let cause = err.message.strip_prefix("rule evaluation error: ").unwrap_or(&err.message);
                let detail = format!("{cause} evaluating rule: {}", self.rule.trim());
                RuleResult::Errored(FieldError::new(&field, FieldErrorKind::Invalid, shown, &detail))
            }
            _ => RuleResult::Errored(FieldError::new(&field, FieldErrorKind::Invalid, shown, &err.message)),
        }
    }
}

impl CelRule {
    /// The rule's first error on `value` (and `old`), remembered per pair of values. One rule
    /// at the root of the compiled tree yields at most one error.
    fn first_error(&self, validator: &Validator, value: &Value, old: Option<&Value>) -> Option<ValidationError> {
        let key = (value.to_string(), old.map(Value::to_string));
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = memo.get(&key) {
            return known.clone();
        }
        let first =
            validator.validate_compiled(&self.compiled, value, old).err().and_then(|e| e.into_vec().into_iter().next());
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(key, first.clone());
        first
    }
}

/// Removes `x-kubernetes-validations` everywhere in a schema subtree.
fn strip_rules(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.shift_remove("x-kubernetes-validations");
            for (_, child) in map.iter_mut() {
                strip_rules(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_rules),
        _ => {}
    }
}

/// Appends a rule's `fieldPath` (`.a.b`, `['x']`, `.list[0]`) to the node's path.
fn join_field_path(base: &str, field_path: &str) -> String {
    let mut out = base.to_string();
    let mut rest = field_path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out = path::child(&out, &r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").unwrap_or(r.len());
            out = path::child(&out, &r[..end]);
            rest = r.get(end + 2..).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            out = format!("{out}[{}]", &r[..end]);
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out = path::child(&out, &rest[..end]);
            rest = &rest[end..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_join_like_the_apiserver() {
        assert_eq!(join_field_path("spec", ".role"), "spec.role");
        assert_eq!(join_field_path("spec", "['a.b'].c"), "spec.a.b.c");
        assert_eq!(join_field_path("", ".spec.list[1]"), "spec.list[1]");
    }
}
