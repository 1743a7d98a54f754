//! NodePool validation: the CRD's schema and CEL rules (what admission enforces), the
//! update-only transition rules, and Karpenter's `RuntimeValidate`.

use super::NodePool;
use super::disruption::Disruption;
use super::template::NodeClaimTemplateSpec;
use crate::apis::labels::NODE_POOL_LABEL;
use crate::apis::node_class_reference::validate_node_class_ref;
use crate::apis::validation::{self, RequirementsOf, ValidationErrors};

impl NodePool {
    /// Checks the CRD's schema constraints and CEL rules, i.e. what the API server enforces when
    /// the object is created. Update-only rules are in [`NodePool::validate_update`].
    pub fn validate(&self) -> Result<(), ValidationErrors> {
        let mut errors = ValidationErrors::default();
        let spec = &self.spec;
        if let Some(metadata) = &spec.template.metadata
            && let Some(labels) = &metadata.labels
        {
            validation::template_labels(&mut errors, "spec.template.metadata.labels", labels);
        }
        validate_template_spec(&mut errors, "spec.template.spec", &spec.template.spec);
        if let Some(disruption) = &spec.disruption {
            validate_disruption(&mut errors, "spec.disruption", disruption);
        }
        if let Some(limits) = &spec.limits {
            validation::resource_list(&mut errors, "spec.limits", limits);
        }
        if let Some(weight) = spec.weight {
            errors.range("spec.weight", i64::from(weight), Some(1), Some(100));
        }
        if let Some(replicas) = spec.replicas {
            errors.range("spec.replicas", replicas, Some(0), None);
            // CEL: !has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 ||
            //      (size(self.limits) == 1 && 'nodes' in self.limits))
            let limits_ok = spec
                .limits
                .as_ref()
                .is_none_or(|limits| limits.is_empty() || (limits.len() == 1 && limits.contains_key("nodes")));
            errors.rule(limits_ok, "spec", "only 'limits.nodes' is supported on static NodePools");
            // CEL: !has(self.replicas) || !has(self.weight)
            errors.rule(spec.weight.is_none(), "spec", "'weight' is not supported on static NodePools");
        }
        if let Some(status) = &self.status
            && let Some(conditions) = &status.conditions
        {
            validation::conditions(
                &mut errors,
                "status.conditions",
                conditions,
                validation::ConditionRules { reason_required: true, unique_types: true },
            );
        }
        errors.into_result()
    }

    /// Checks [`NodePool::validate`] plus the CEL transition rules against the stored `old`
    /// object: `nodeClassRef.group` and `.kind` are immutable, and a NodePool cannot switch
    /// between static and dynamic (`has(self.replicas) == has(oldSelf.replicas)`).
    pub fn validate_update(&self, old: &NodePool) -> Result<(), ValidationErrors> {
        let mut errors = self.validate().err().unwrap_or_default();
        let new_ref = &self.spec.template.spec.node_class_ref;
        let old_ref = &old.spec.template.spec.node_class_ref;
        let ref_path = "spec.template.spec.nodeClassRef";
        errors.rule(new_ref.group == old_ref.group, ref_path, "nodeClassRef.group is immutable");
        errors.rule(new_ref.kind == old_ref.kind, ref_path, "nodeClassRef.kind is immutable");
        errors.rule(
            self.spec.replicas.is_some() == old.spec.replicas.is_some(),
            "spec",
            "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes",
        );
        errors.into_result()
    }

    /// Karpenter's `RuntimeValidate`: restricted and malformed template labels, malformed or
    /// duplicate taints, requirements failing `ValidateRequirement`, and the
    /// `karpenter.sh/nodepool` requirement key. A failure sets `ValidationSucceeded=False`
    /// instead of rejecting the object.
    pub fn runtime_validate(&self) -> Result<(), ValidationErrors> {
        let mut errors = ValidationErrors::default();
        let template_labels = self.spec.template_labels();
        validation::runtime_labels(&mut errors, "spec.template.metadata.labels", &template_labels);
        let spec = &self.spec.template.spec;
        validation::runtime_taints(&mut errors, "spec.template.spec", spec.taints(), spec.startup_taints());
        for (i, requirement) in spec.requirements.iter().enumerate() {
            let path = format!("spec.template.spec.requirements[{i}]");
            for message in validation::runtime_requirement_errors(requirement) {
                errors.push(path.clone(), message);
            }
            if requirement.key == NODE_POOL_LABEL {
                errors.push(path, format!("{} is restricted", requirement.key));
            }
        }
        errors.into_result()
    }
}

/// Rules of a NodeClaim template spec (shared with NodeClaim's spec where the schemas agree).
fn validate_template_spec(errors: &mut ValidationErrors, path: &str, spec: &NodeClaimTemplateSpec) {
    validation::requirements(errors, &format!("{path}.requirements"), &spec.requirements, RequirementsOf::NodePool);
    validate_node_class_ref(errors, &format!("{path}.nodeClassRef"), &spec.node_class_ref);
    validation::taints(errors, &format!("{path}.taints"), spec.taints());
    validation::taints(errors, &format!("{path}.startupTaints"), spec.startup_taints());
    if let Some(expire_after) = &spec.expire_after {
        errors.pattern(format!("{path}.expireAfter"), expire_after.as_str(), &validation::NILLABLE_DURATION);
    }
    if let Some(grace) = &spec.termination_grace_period {
        errors.pattern(format!("{path}.terminationGracePeriod"), grace.as_str(), &validation::DURATION);
    }
}

/// `spec.disruption` rules: consolidateAfter pattern, budgets maxItems 50, each budget's
/// patterns, reasons as a set (no duplicates, at most 50), and the CEL rule
/// `self.all(x, has(x.schedule) == has(x.duration))`.
fn validate_disruption(errors: &mut ValidationErrors, path: &str, disruption: &Disruption) {
    errors.pattern(
        format!("{path}.consolidateAfter"),
        disruption.consolidate_after.as_str(),
        &validation::NILLABLE_DURATION,
    );
    let Some(budgets) = &disruption.budgets else {
        return;
    };
    let budgets_path = format!("{path}.budgets");
    errors.max_items(budgets_path.clone(), budgets.len(), 50);
    for (i, budget) in budgets.iter().enumerate() {
        let item = format!("{budgets_path}[{i}]");
        if let Some(nodes) = &budget.nodes {
            errors.pattern(format!("{item}.nodes"), nodes.as_str(), &validation::BUDGET_NODES);
        }
        if let Some(schedule) = &budget.schedule {
            errors.pattern(format!("{item}.schedule"), schedule, &validation::BUDGET_SCHEDULE);
        }
        if let Some(duration) = &budget.duration {
            errors.pattern(format!("{item}.duration"), duration.as_str(), &validation::BUDGET_DURATION);
        }
        if let Some(reasons) = &budget.reasons {
            errors.max_items(format!("{item}.reasons"), reasons.len(), 50);
            for (j, reason) in reasons.iter().enumerate() {
                if reasons[..j].contains(reason) {
                    errors.push(format!("{item}.reasons[{j}]"), format!("Duplicate value: {:?}", reason.as_str()));
                }
            }
        }
        errors.rule(
            budget.schedule.is_some() == budget.duration.is_some(),
            item,
            "'schedule' must be set with 'duration'",
        );
    }
}
