//! Price and ordering rules of NodeOverlays: core `cloudprovider/types.go` `AdjustedPrice`
//! (l. 493-525), v1alpha1 `nodeoverlay.go` `OrderByWeight` (l. 123-137) and
//! `nodeoverlay_validation.go` `RuntimeValidate` (l. 28-57).

use crate::apis::NodeOverlay;
use crate::apis::requirements::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};
use crate::apis::validation::runtime_requirement_errors;

/// The offering price after an overlay's `price` or `priceAdjustment` (types.go l. 493-525):
/// no sign means an absolute price; `+x`/`-x` adds; `+x%`/`-x%` scales; never below zero.
/// The CRD pattern guarantees a number, so an unparseable change leaves the price unchanged.
pub fn adjusted_price(price: f64, change: &str) -> f64 {
    if change.is_empty() {
        return price;
    }
    if !change.starts_with('+') && !change.starts_with('-') {
        return change.parse().unwrap_or(price);
    }
    let adjusted = match change.strip_suffix('%') {
        Some(percent) => percent.parse::<f64>().map_or(price, |p| price * (1.0 + p / 100.0)),
        None => change.parse::<f64>().map_or(price, |delta| price + delta),
    };
    if adjusted >= 0.0 { adjusted } else { 0.0 }
}

/// Orders overlays heaviest first; equal weights by name, later in the alphabet first
/// (nodeoverlay.go l. 123-137). An unset weight counts as 0.
pub fn order_by_weight(overlays: &mut [NodeOverlay]) {
    overlays.sort_by(|a, b| {
        b.spec.weight.unwrap_or(0).cmp(&a.spec.weight.unwrap_or(0)).then_with(|| b.metadata.name.cmp(&a.metadata.name))
    });
}

/// What the CRD cannot check (nodeoverlay_validation.go l. 28-57): each requirement passes
/// `ValidateRequirement` (restricted domains, label syntax), `NotIn` has values, and capacity
/// names none of cpu, memory, ephemeral-storage, pods (`v1.WellKnownResources`).
///
/// # Errors
/// The messages, joined with "; ".
pub fn runtime_validate(overlay: &NodeOverlay) -> Result<(), String> {
    let mut errors = Vec::new();
    for requirement in &overlay.spec.requirements {
        let values = requirement.values.clone().unwrap_or_default();
        let Some(operator) = NodeSelectorOperator::from_api(&requirement.operator) else {
            errors.push(format!("invalid value: operator {:?} in requirements, restricted", requirement.operator));
            continue;
        };
        let with_min =
            NodeSelectorRequirementWithMinValues::with_values(requirement.key.clone(), operator, values.clone());
        for message in runtime_requirement_errors(&with_min) {
            errors.push(format!("invalid value: {message} in requirements, restricted"));
        }
        if operator == NodeSelectorOperator::NotIn && values.is_empty() {
            errors.push(format!("key {} with operator NotIn must have a value defined", requirement.key));
        }
    }
    for name in overlay.spec.capacity.iter().flat_map(|c| c.keys()) {
        if crate::apis::nodeoverlay::OVERLAY_RESTRICTED_RESOURCES.contains(&name.as_str()) {
            errors.push(format!("invalid capacity: {name} in resource, restricted"));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_adjustments_follow_adjusted_price() {
        assert_eq!(adjusted_price(1.0, ""), 1.0);
        assert_eq!(adjusted_price(1.0, "0.25"), 0.25);
        assert!((adjusted_price(1.0, "+0.5") - 1.5).abs() < 1e-12);
        assert!((adjusted_price(1.0, "-0.25") - 0.75).abs() < 1e-12);
        assert!((adjusted_price(2.0, "-10%") - 1.8).abs() < 1e-12);
        assert!((adjusted_price(2.0, "+50%") - 3.0).abs() < 1e-12);
        assert_eq!(adjusted_price(1.0, "-100%"), 0.0);
        assert_eq!(adjusted_price(1.0, "-5"), 0.0, "never negative");
    }
}
