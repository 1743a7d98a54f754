//! Walks an object and its old version together and runs every CEL rule where it applies,
//! pairing old and new values the way apiextensions-apiserver's CEL validator does: object
//! properties and map entries by key, list items only in `x-kubernetes-list-type: map` lists (by
//! their map keys). Items of atomic and set lists have no old value, so their transition rules
//! do not run.
//!
//! Rules ratchet like schema validation: a rule that does not read `oldSelf` is not run on a value
//! equal to its correlated old value.

use kube_cel::Validator;
use serde_json::{Map, Value};

use super::cel::RuleResult;
use super::node::{Additional, ListType, Node};
use super::path;
use super::validate::{correlate, json_equal};

/// One rule's result at one place in an object.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleOutcome {
    /// Path of the value the rule ran on (`spec.template.spec.requirements`).
    pub field: String,
    /// The rule's CEL expression.
    pub rule: String,
    /// What happened.
    pub result: RuleResult,
}

/// Runs all rules under `node` on `value` (with `old` on update), in schema order.
pub(crate) fn evaluate(validator: &Validator, node: &Node, value: &Value, old: Option<&Value>) -> Vec<RuleOutcome> {
    let mut out = Vec::new();
    // The root sees `metadata` as the apiserver shows it to CEL: name and generateName only.
    if !node.rules.is_empty() {
        let root_value = with_cel_metadata(value);
        let root_old = old.map(with_cel_metadata);
        run_rules(validator, node, &root_value, root_old.as_ref(), "", &mut out);
    }
    walk_children(validator, node, value, old, "", &mut out, true);
    out
}

fn walk(validator: &Validator, node: &Node, value: &Value, old: Option<&Value>, at: &str, out: &mut Vec<RuleOutcome>) {
    if value.is_null() {
        return;
    }
    run_rules(validator, node, value, old, at, out);
    walk_children(validator, node, value, old, at, out, false);
}

fn run_rules(
    validator: &Validator,
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    at: &str,
    out: &mut Vec<RuleOutcome>,
) {
    let unchanged = old.is_some_and(|o| json_equal(o, value));
    for rule in &node.rules {
        let result = if unchanged && !rule.is_transition {
            RuleResult::SkippedUnchanged
        } else {
            rule.evaluate(validator, value, old, at, node.type_name())
        };
        out.push(RuleOutcome { field: at.to_string(), rule: rule.rule.clone(), result });
    }
}

fn walk_children(
    validator: &Validator,
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    at: &str,
    out: &mut Vec<RuleOutcome>,
    is_root: bool,
) {
    match value {
        Value::Object(obj) => {
            for (name, child) in &node.properties {
                if is_root && name == "metadata" {
                    continue;
                }
                if let Some(v) = obj.get(name) {
                    let o = old.and_then(|o| o.get(name));
                    walk(validator, child, v, o, &path::child(at, name), out);
                }
            }
            if let Additional::Schema(child) = &node.additional {
                for (k, v) in obj {
                    if node.properties.contains_key(k) {
                        continue;
                    }
                    let o = old.and_then(|o| o.get(k));
                    walk(validator, child, v, o, &path::key(at, k), out);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_node) = &node.items else { return };
            for (i, item) in items.iter().enumerate() {
                // Set items have no old value for CEL; map-list items are paired by key.
                let o = match (&node.list_type, old.and_then(Value::as_array)) {
                    (ListType::Map(_), Some(old_items)) => correlate(&node.list_type, item, old_items),
                    _ => None,
                };
                walk(validator, item_node, item, o, &path::index(at, i), out);
            }
        }
        _ => {}
    }
}

fn with_cel_metadata(value: &Value) -> Value {
    let mut v = value.clone();
    if let Some(Value::Object(meta)) = v.get_mut("metadata") {
        let kept: Map<String, Value> = meta
            .iter()
            .filter(|(k, _)| *k == "name" || *k == "generateName")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        *meta = kept;
    }
    v
}
