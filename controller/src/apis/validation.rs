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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::LazyLock;

use k8s_openapi::api::core::v1::Taint;
use regex::Regex;

use super::condition::Condition;
use super::labels;
use super::quantity::{IntOrQuantity, ResourceList};
use super::requirements::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};

/// One violated rule: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// JSON path of the offending field, e.g. `spec.template.spec.requirements[2].operator`.
    pub path: String,
    /// What is wrong, in the API server's words where it has any.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every rule an object violates, in field order. Empty means valid.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors {
    /// The violations.
    pub errors: Vec<FieldError>,
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        f.write_str(&lines.join("; "))
    }
}

impl ValidationErrors {
    /// Records a violation at `path`.
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError { path: path.into(), message: message.into() });
    }

    /// Whether nothing was violated.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// Whether some violation at exactly `path` has a message containing `needle` (for tests and
    /// for callers that map specific rules to events).
    pub fn has(&self, path: &str, needle: &str) -> bool {
        self.errors.iter().any(|error| error.path == path && error.message.contains(needle))
    }

    /// `Ok(())` when empty, else `Err(self)`.
    pub fn into_result(self) -> Result<(), ValidationErrors> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }

    /// Adds a "Required value" error.
    pub(crate) fn required(&mut self, path: impl Into<String>) {
        self.push(path, "Required value");
    }

    /// Adds a pattern error unless `value` matches.
    pub(crate) fn pattern(&mut self, path: impl Into<String>, value: &str, pattern: &Pattern) {
        if !pattern.regex.is_match(value) {
            self.push(path, format!("Invalid value: {value:?}: should match '{}'", pattern.source));
        }
    }

    /// Adds an error unless `min <= value <= max` (either bound optional).
    pub(crate) fn range(&mut self, path: impl Into<String> + Clone, value: i64, min: Option<i64>, max: Option<i64>) {
        if let Some(min) = min.filter(|min| value < *min) {
            self.push(path.clone(), format!("Invalid value: {value}: should be greater than or equal to {min}"));
        }
        if let Some(max) = max.filter(|max| value > *max) {
            self.push(path, format!("Invalid value: {value}: should be less than or equal to {max}"));
        }
    }

    /// Adds an error when a list has more than `max` items.
    pub(crate) fn max_items(&mut self, path: impl Into<String>, len: usize, max: usize) {
        if len > max {
            self.push(path, format!("Too many: {len}: must have at most {max} items"));
        }
    }

    /// Adds an error when a string is longer than `max` bytes.
    pub(crate) fn max_length(&mut self, path: impl Into<String>, value: &str, max: usize) {
        if value.len() > max {
            self.push(path, format!("Too long: may not be more than {max} bytes"));
        }
    }

    /// Adds the CEL rule's message at `path` unless `holds`.
    pub(crate) fn rule(&mut self, holds: bool, path: impl Into<String>, message: &str) {
        if !holds {
            self.push(path, message);
        }
    }
}

/// A compiled OpenAPI `pattern`, with its source text for messages.
pub(crate) struct Pattern {
    source: &'static str,
    regex: Regex,
}

impl Pattern {
    /// Whether `value` matches (unanchored search, like OpenAPI; anchors come from the source).
    pub(crate) fn is_match(&self, value: &str) -> bool {
        self.regex.is_match(value)
    }
}

fn pattern(source: &'static str) -> Pattern {
    // The sources are the CRDs' literal patterns; unit tests compile every one of them.
    #[allow(clippy::unwrap_used)]
    let regex = Regex::new(source).unwrap();
    Pattern { source, regex }
}

macro_rules! patterns {
    ($($(#[$doc:meta])* $name:ident = $source:expr;)*) => {
        $( $(#[$doc])* pub(crate) static $name: LazyLock<Pattern> = LazyLock::new(|| pattern($source)); )*
        #[cfg(test)]
        pub(crate) fn all_patterns() -> Vec<&'static LazyLock<Pattern>> { vec![$(&$name),*] }
    };
}

patterns! {
    /// Label and taint keys in requirements, taints (`key` of NodeSelectorRequirement and Taint).
    LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
    /// Label values (template labels, requirement values).
    LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";
    /// `expireAfter` and `consolidateAfter`.
    NILLABLE_DURATION = r"^(([0-9]+(s|m|h))+|Never)$";
    /// `terminationGracePeriod`.
    DURATION = r"^([0-9]+(s|m|h))+$";
    /// Budget `duration`: hours and minutes only (cron has minute resolution).
    BUDGET_DURATION = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$";
    /// Budget `nodes`: a percentage up to 100% or a count.
    BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$";
    /// Budget `schedule`: a cron macro or five fields.
    BUDGET_SCHEDULE = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$";
    /// `nodeClassRef.group`.
    NODE_CLASS_GROUP = r"^[^/]*$";
    /// Resource quantities written as strings.
    QUANTITY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
    /// Condition `type`.
    CONDITION_TYPE = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
    /// Condition `reason` (NodePool, EC2NodeClass, NodeOverlay).
    CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
    /// Condition `reason` (NodeClaim, where it may be empty).
    CONDITION_REASON_OR_EMPTY = r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$";
    /// Kubelet eviction thresholds: a percentage or a quantity.
    EVICTION_THRESHOLD = r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$";
    /// EBS `volumeSize` (1Gi..59000Gi, 1G..64000G, 1Ti..58Ti, 1T..64T).
    VOLUME_SIZE = r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$";
    /// AMI selector `id` (unanchored, as upstream).
    AMI_ID = r"ami-[0-9a-z]+";
    /// Security group selector `id` (unanchored, as upstream).
    SECURITY_GROUP_ID = r"sg-[0-9a-z]+";
    /// Subnet selector `id` (unanchored, as upstream).
    SUBNET_ID = r"subnet-[0-9a-z]+";
    /// Capacity reservation `id`.
    CAPACITY_RESERVATION_ID = r"^cr-[0-9a-z]+$";
    /// AWS account ID.
    OWNER_ID = r"^[0-9]{12}$";
    /// Placement group `id`.
    PLACEMENT_GROUP_ID = r"^pg-[0-9a-z]+$";
    /// AMI alias `family@version`.
    AMI_ALIAS = r"^[a-zA-Z0-9]+@.+$";
    /// NodeOverlay `price`.
    OVERLAY_PRICE = r"^\d+(\.\d+)?$";
    /// NodeOverlay `priceAdjustment`.
    OVERLAY_PRICE_ADJUSTMENT = r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$";
    /// DNS-1123 subdomain (prefix of a qualified name).
    DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
    /// Name part of a qualified name.
    QUALIFIED_NAME_PART = r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
}

/// Formats the supported values of an enum like the API server (`"a", "b"`).
pub(crate) fn supported(values: &[&str]) -> String {
    values.iter().map(|value| format!("{value:?}")).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------------------------------------
// Kubernetes name rules (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------------------------

/// Problems with `key` as a qualified name (`[prefix/]name`), empty when valid
/// (apimachinery `IsQualifiedName`).
pub fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 characters".to_owned());
                }
                if !DNS1123_SUBDOMAIN.is_match(prefix) {
                    errors.push(
                        "prefix part a lowercase RFC 1123 subdomain must consist of lower case \
                         alphanumeric characters, '-' or '.', and must start and end with an \
                         alphanumeric character"
                            .to_owned(),
                    );
                }
            }
            *name
        }
        _ => {
            errors.push(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and \
                 must start and end with an alphanumeric character with an optional DNS subdomain \
                 prefix and '/'"
                    .to_owned(),
            );
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else {
        if name.len() > 63 {
            errors.push("name part must be no more than 63 characters".to_owned());
        }
        if !QUALIFIED_NAME_PART.is_match(name) {
            errors.push(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
                 start and end with an alphanumeric character"
                    .to_owned(),
            );
        }
    }
    errors
}

/// Problems with `value` as a label value, empty when valid (apimachinery `IsValidLabelValue`).
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    if !LABEL_VALUE.is_match(value) {
        errors.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character"
                .to_owned(),
        );
    }
    errors
}

// ---------------------------------------------------------------------------------------------
// CRD rules shared by NodePool, NodeClaim and NodeOverlay
// ---------------------------------------------------------------------------------------------

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
pub(crate) fn requirement_cel_rules(
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

// ---------------------------------------------------------------------------------------------
// Karpenter RuntimeValidate (core pkg/apis/v1/nodepool_validation.go, nodeclaim_validation.go)
// ---------------------------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_pattern_compiles() {
        for pattern in all_patterns() {
            assert!(!pattern.source.is_empty());
        }
    }

    #[test]
    fn qualified_names_follow_apimachinery() {
        assert!(qualified_name_errors("example.com/team").is_empty());
        assert!(qualified_name_errors("team").is_empty());
        assert!(!qualified_name_errors("Example.com/team").is_empty());
        assert!(!qualified_name_errors("a/b/c").is_empty());
        assert!(!qualified_name_errors("/team").is_empty());
        assert!(!qualified_name_errors("example.com/").is_empty());
        assert!(!qualified_name_errors(&"x".repeat(64)).is_empty());
    }

    #[test]
    fn label_values_follow_apimachinery() {
        assert!(label_value_errors("").is_empty());
        assert!(label_value_errors("m5.large").is_empty());
        assert!(!label_value_errors("-bad").is_empty());
        assert!(!label_value_errors(&"v".repeat(64)).is_empty());
    }
}
