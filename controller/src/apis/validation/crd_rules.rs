//! CRD rules shared by NodePool, NodeClaim, NodeOverlay and EC2NodeClass: the OpenAPI
//! constraints and CEL rules on requirements, taints, template labels, resource lists and
//! status conditions, ported so that objects are checked without a CEL-evaluating API server.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Taint;

use super::errors::{ValidationErrors, supported};
use super::patterns::{CONDITION_REASON, CONDITION_REASON_OR_EMPTY, CONDITION_TYPE, LABEL_KEY, LABEL_VALUE, QUANTITY};
use crate::apis::condition::Condition;
use crate::apis::labels;
use crate::apis::quantity::{IntOrQuantity, ResourceList};
use crate::apis::requirements::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};

/// Which CRD a requirement list belongs to: the key rules differ slightly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequirementsOf {
    /// NodePool `spec.template.spec.requirements`: also forbids `karpenter.sh/nodepool`.
    NodePool,
    /// NodeClaim `spec.requirements`.
    NodeClaim,
}

const MSG_KARPENTER_DOMAIN: &str = "label domain \"karpenter.sh\" is restricted";
const MSG_NODEPOOL_LABEL: &str = "label \"karpenter.sh/nodepool\" is restricted";
const MSG_HOSTNAME_LABEL: &str = "label \"kubernetes.io/hostname\" is restricted";
const MSG_AWS_DOMAIN: &str = "label domain \"karpenter.k8s.aws\" is restricted";

/// The CEL expression `x.find("^([^/]+)")`: the text before the first `/` (or all of it).
fn cel_domain(key: &str) -> &str {
    key.split('/').next().unwrap_or_default()
}

/// CEL key rules on requirement keys and template label keys. `allowed_aws` is the list of
/// `karpenter.k8s.aws/*` keys the CRD admits.
///
/// Rules (karpenter.sh_nodepools.yaml, requirements[].key and template.metadata.labels):
/// `self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !self.find("^([^/]+)").endsWith("karpenter.sh")`,
/// `self != "karpenter.sh/nodepool"` (NodePool only), `self != "kubernetes.io/hostname"`, and the
/// AWS provider's `self in [...] || !self.find("^([^/]+)").endsWith("karpenter.k8s.aws")`.
pub(crate) fn label_key_cel_rules(
    errors: &mut ValidationErrors,
    path: &str,
    key: &str,
    forbid_nodepool: bool,
    allowed_aws: &[&str],
) {
    let domain = cel_domain(key);
    errors.rule(
        labels::CRD_ALLOWED_KARPENTER_SH_KEYS.contains(&key) || !domain.ends_with(labels::KARPENTER_GROUP),
        path,
        MSG_KARPENTER_DOMAIN,
    );
    if forbid_nodepool {
        errors.rule(key != labels::NODE_POOL_LABEL, path, MSG_NODEPOOL_LABEL);
    }
    errors.rule(key != labels::HOSTNAME_LABEL, path, MSG_HOSTNAME_LABEL);
    errors.rule(allowed_aws.contains(&key) || !domain.ends_with(labels::AWS_GROUP), path, MSG_AWS_DOMAIN);
}

/// Schema and CEL rules of a `requirements` list (NodePool template and NodeClaim spec).
///
/// Per item: `key` maxLength 316 + pattern + the key CEL rules; `operator` is typed; `values`
/// items maxLength 63 + label-value pattern (the CRD puts these on the array, which the API server
/// ignores, but Karpenter's RuntimeValidate enforces them on each value); `minValues` 1..=50.
/// List: maxItems 100 and the three CEL rules, reported at the offending item's path.
pub(crate) fn requirements(
    errors: &mut ValidationErrors,
    path: &str,
    requirements: &[NodeSelectorRequirementWithMinValues],
    of: RequirementsOf,
) {
    errors.max_items(path, requirements.len(), 100);
    for (i, requirement) in requirements.iter().enumerate() {
        let item = format!("{path}[{i}]");
        let key_path = format!("{item}.key");
        errors.max_length(key_path.clone(), &requirement.key, 316);
        errors.pattern(key_path.clone(), &requirement.key, &LABEL_KEY);
        label_key_cel_rules(
            errors,
            &key_path,
            &requirement.key,
            of == RequirementsOf::NodePool,
            &labels::CRD_ALLOWED_AWS_KEYS,
        );
        for (j, value) in requirement.values().iter().enumerate() {
            let value_path = format!("{item}.values[{j}]");
            errors.max_length(value_path.clone(), value, 63);
            errors.pattern(value_path, value, &LABEL_VALUE);
        }
        if let Some(min_values) = requirement.min_values {
            errors.range(format!("{item}.minValues"), min_values, Some(1), Some(50));
        }
        requirement_cel_rules(errors, &item, requirement);
    }
}

/// The three list-level CEL rules, evaluated per item:
/// - `self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)`
/// - `self.all(x, (x.operator == 'Gt' || 'Lt' || 'Gte' || 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)`
/// - `self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)`
fn requirement_cel_rules(
    errors: &mut ValidationErrors,
    item: &str,
    requirement: &NodeSelectorRequirementWithMinValues,
) {
    let values = requirement.values();
    let operator = requirement.operator;
    if operator == NodeSelectorOperator::In {
        errors.rule(
            !values.is_empty(),
            format!("{item}.values"),
            "requirements with operator 'In' must have a value defined",
        );
        if let Some(min_values) = requirement.min_values {
            errors.rule(
                i64::try_from(values.len()).unwrap_or(i64::MAX) >= min_values,
                format!("{item}.minValues"),
                "requirements with 'minValues' must have at least that many values specified in the 'values' field",
            );
        }
    }
    if operator.is_numeric() {
        let single_non_negative_int = matches!(values, [value] if value.parse::<i64>().is_ok_and(|number| number >= 0));
        errors.rule(
            single_non_negative_int,
            format!("{item}.values"),
            "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
        );
    }
}

/// Schema rules of a taint list (`taints`, `startupTaints`): key non-empty + pattern, value
/// pattern, effect enum.
pub(crate) fn taints(errors: &mut ValidationErrors, path: &str, taints: &[Taint]) {
    for (i, taint) in taints.iter().enumerate() {
        let item = format!("{path}[{i}]");
        if taint.key.is_empty() {
            errors.push(format!("{item}.key"), "Invalid value: \"\": should be at least 1 chars long");
        } else {
            errors.pattern(format!("{item}.key"), &taint.key, &LABEL_KEY);
        }
        if let Some(value) = &taint.value {
            errors.pattern(format!("{item}.value"), value, &LABEL_KEY);
        }
        if taint.effect.is_empty() {
            errors.required(format!("{item}.effect"));
        } else if !labels::TAINT_EFFECTS.contains(&taint.effect.as_str()) {
            errors.push(
                format!("{item}.effect"),
                format!(
                    "Unsupported value: {:?}: supported values: {}",
                    taint.effect,
                    supported(&labels::TAINT_EFFECTS)
                ),
            );
        }
    }
}

/// Schema and CEL rules of NodePool `spec.template.metadata.labels`: maxProperties 100, values
/// maxLength 63 + pattern, and the key CEL rules.
pub(crate) fn template_labels(errors: &mut ValidationErrors, path: &str, template_labels: &BTreeMap<String, String>) {
    if template_labels.len() > 100 {
        errors.push(path, format!("Too many: {}: must have at most 100 items", template_labels.len()));
    }
    for (key, value) in template_labels {
        let entry_path = format!("{path}[{key}]");
        errors.max_length(entry_path.clone(), value, 63);
        errors.pattern(entry_path.clone(), value, &LABEL_VALUE);
        label_key_cel_rules(errors, &entry_path, key, true, &labels::CRD_ALLOWED_AWS_KEYS);
    }
}

/// Pattern rule of a ResourceList: quantities written as strings must be well formed.
pub(crate) fn resource_list(errors: &mut ValidationErrors, path: &str, list: &ResourceList) {
    for (name, quantity) in list {
        if let IntOrQuantity::String(text) = quantity {
            errors.pattern(format!("{path}[{name}]"), text, &QUANTITY);
        }
    }
}

/// Which constraints a kind's CRD puts on `status.conditions`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConditionRules {
    /// `reason` and `message` are required and `reason` may not be empty (all kinds but
    /// NodeClaim).
    pub(crate) reason_required: bool,
    /// The list is `x-kubernetes-list-type: map` keyed by `type` (not EC2NodeClass).
    pub(crate) unique_types: bool,
}

/// Schema rules of `status.conditions`: type pattern and length, observedGeneration ≥ 0,
/// message length, reason pattern and length, and the per-kind [`ConditionRules`].
pub(crate) fn conditions(errors: &mut ValidationErrors, path: &str, conditions: &[Condition], rules: ConditionRules) {
    let reason_required = rules.reason_required;
    let mut seen = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let item = format!("{path}[{i}]");
        errors.max_length(format!("{item}.type"), &condition.type_, 316);
        errors.pattern(format!("{item}.type"), &condition.type_, &CONDITION_TYPE);
        // x-kubernetes-list-type: map keyed by `type`.
        if !seen.insert(condition.type_.as_str()) && rules.unique_types {
            errors.push(format!("{item}.type"), format!("Duplicate value: {:?}", condition.type_));
        }
        if let Some(generation) = condition.observed_generation {
            errors.range(format!("{item}.observedGeneration"), generation, Some(0), None);
        }
        if let Some(message) = &condition.message {
            errors.max_length(format!("{item}.message"), message, 32768);
        } else if reason_required {
            errors.required(format!("{item}.message"));
        }
        match &condition.reason {
            Some(reason) => {
                errors.max_length(format!("{item}.reason"), reason, 1024);
                let pattern = if reason_required { &CONDITION_REASON } else { &CONDITION_REASON_OR_EMPTY };
                errors.pattern(format!("{item}.reason"), reason, pattern);
            }
            None if reason_required => errors.required(format!("{item}.reason")),
            None => {}
        }
    }
}
