//! Karpenter's `RuntimeValidate` (core `pkg/apis/v1/nodepool_validation.go`,
//! `nodeclaim_validation.go`): checks whose failures do not reject an object but set a
//! NodePool's `ValidationSucceeded` condition to False.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Taint;

use super::errors::ValidationErrors;
use super::names::{label_value_errors, qualified_name_errors};
use crate::apis::labels;
use crate::apis::requirements::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};
/// Karpenter's `ValidateRequirement`: normalized key not restricted and a qualified name, values
/// valid label values, `In` non-empty, `In`+minValues has enough values, `Gt`/`Lt` single
/// non-negative integer. Returns the messages (empty when valid).
pub fn runtime_requirement_errors(requirement: &NodeSelectorRequirementWithMinValues) -> Vec<String> {
    let key = labels::normalize_label(&requirement.key);
    let operator = requirement.operator;
    let values = requirement.values();
    let mut errors = Vec::new();
    if let Some(reason) = labels::restricted_label_reason(key) {
        errors.push(reason);
    }
    for error in qualified_name_errors(key) {
        errors.push(format!("key {key} is not a qualified name, {error}"));
    }
    for value in values {
        for error in label_value_errors(value) {
            errors.push(format!("invalid value {value} for key {key}, {error}"));
        }
    }
    if operator == NodeSelectorOperator::In && values.is_empty() {
        errors.push(format!("key {key} with operator {operator} must have a value defined"));
    }
    if operator == NodeSelectorOperator::In
        && requirement.min_values.is_some_and(|min| i64::try_from(values.len()).unwrap_or(i64::MAX) < min)
    {
        errors.push(format!(
            "key {key} with operator {operator} must have at least minimum number of values defined in 'values' field"
        ));
    }
    if operator.is_numeric() {
        let valid = matches!(values, [value] if value.parse::<i64>().is_ok_and(|number| number >= 0));
        if !valid {
            errors.push(format!("key {key} with operator {operator} must have a single positive integer value"));
        }
    }
    errors
}

/// Karpenter's `validateTaints` over `taints` then `startupTaints`: qualified-name keys and
/// values, known effects, and no duplicate key/effect pair across both lists.
pub(crate) fn runtime_taints(
    errors: &mut ValidationErrors,
    spec_path: &str,
    taints: &[Taint],
    startup_taints: &[Taint],
) {
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for (field, list) in [("taints", taints), ("startupTaints", startup_taints)] {
        for (i, taint) in list.iter().enumerate() {
            let item = format!("{spec_path}.{field}[{i}]");
            for error in qualified_name_errors(&taint.key) {
                errors.push(format!("{item}.key"), format!("invalid value: {error}"));
            }
            if let Some(value) = taint.value.as_deref().filter(|value| !value.is_empty()) {
                for error in qualified_name_errors(value) {
                    errors.push(format!("{item}.value"), format!("invalid value: {error}"));
                }
            }
            if !taint.effect.is_empty() && !labels::TAINT_EFFECTS.contains(&taint.effect.as_str()) {
                errors.push(format!("{item}.effect"), format!("invalid value: {}", taint.effect));
            }
            if !seen.insert((taint.key.clone(), taint.effect.clone())) {
                errors.push(item, format!("duplicate taint Key/Effect pair {}={}", taint.key, taint.effect));
            }
        }
    }
}

/// Karpenter's `validateLabels` on NodePool template labels: not `karpenter.sh/nodepool`,
/// qualified-name keys, valid values, and no restricted label.
pub(crate) fn runtime_labels(errors: &mut ValidationErrors, path: &str, template_labels: &BTreeMap<String, String>) {
    for (key, value) in template_labels {
        if key == labels::NODE_POOL_LABEL {
            errors.push(path, format!("invalid key name {key:?}: restricted"));
        }
        for error in qualified_name_errors(key) {
            errors.push(path, format!("invalid key name {key:?}: {error}"));
        }
        for error in label_value_errors(value) {
            errors.push(format!("{path}[{key}]"), format!("invalid value: {value}, {error}"));
        }
        if let Some(reason) = labels::restricted_label_reason(key) {
            errors.push(path, format!("invalid key name {key:?}: {reason}"));
        }
    }
}
