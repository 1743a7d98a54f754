//! One evaluation of every NodeOverlay against every NodePool's instance types (core
//! `pkg/controllers/nodeoverlay/controller.go` l. 73-141 and 163-269): overlays heaviest first,
//! each runtime-validated, checked for conflicts against every pool before any of its updates
//! is stored (so an overlay applies everywhere or nowhere), then stored.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::NodeSelectorRequirement;

use crate::apis::labels;
use crate::apis::requirements::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};
use crate::apis::{NodeOverlay, NodePool};
use crate::cloudprovider::{InstanceType, Offering};
use crate::scheduling::requirements::{Requirement, Requirements};

use super::price::{order_by_weight, runtime_validate};
use super::store::EvaluatedOverlays;

/// What an evaluation found: the store to swap in and the overlays whose
/// `ValidationSucceeded` is False, with why.
#[derive(Debug, Default)]
pub struct Evaluation {
    /// The per-(pool, instance type) updates; covers exactly the pools passed in.
    pub store: EvaluatedOverlays,
    /// Overlay name → RuntimeValidate's message.
    pub runtime_failures: BTreeMap<String, String>,
    /// Overlays in conflict with a heavier-or-equal overlay already stored.
    pub conflicts: BTreeSet<String>,
}

/// A NodePool and the instance types the (undecorated) cloud provider lists for it.
pub type PoolTypes = (Arc<NodePool>, Vec<Arc<InstanceType>>);

/// Evaluates `overlays` (reordered by weight in place) against `pools`, the NodePools whose
/// instance types could be listed.
pub fn evaluate(overlays: &mut [NodeOverlay], pools: &[PoolTypes]) -> Evaluation {
    let mut evaluation = Evaluation::default();
    order_by_weight(overlays);
    for overlay in overlays.iter() {
        let name = overlay.metadata.name.clone().unwrap_or_default();
        if let Err(message) = runtime_validate(overlay) {
            evaluation.runtime_failures.insert(name, message);
            continue;
        }
        if !validate_and_store(&mut evaluation.store, pools, overlay) {
            evaluation.conflicts.insert(name);
        }
    }
    for (pool, _) in pools {
        evaluation.store.mark_evaluated(pool.metadata.name.as_deref().unwrap_or_default());
    }
    evaluation
}

/// controller.go l. 163-181: conflicts against every pool first, then the updates.
fn validate_and_store(store: &mut EvaluatedOverlays, pools: &[PoolTypes], overlay: &NodeOverlay) -> bool {
    let requirements = overlay_requirements(&overlay.spec.requirements);
    for (pool, types) in pools {
        let pool_name = pool.metadata.name.as_deref().unwrap_or_default();
        for it in types {
            let offerings = overlaid_offerings(pool, it, &requirements);
            if offerings.is_empty() {
                continue;
            }
            if store.is_offering_update_conflicting(pool_name, &it.name, &offerings, overlay)
                || store.is_capacity_update_conflicting(pool_name, &it.name, overlay)
            {
                return false;
            }
        }
    }
    for (pool, types) in pools {
        let pool_name = pool.metadata.name.as_deref().unwrap_or_default();
        for it in types {
            let offerings = overlaid_offerings(pool, it, &requirements);
            if offerings.is_empty() {
                continue;
            }
            store.update_offerings(pool_name, &it.name, overlay, &offerings);
            store.update_capacity(pool_name, &it.name, overlay);
        }
    }
    true
}

/// The overlay's requirements as scheduling requirements (`AsNodeSelectorRequirement`).
pub fn overlay_requirements(requirements: &[NodeSelectorRequirement]) -> Requirements {
    let converted: Vec<NodeSelectorRequirementWithMinValues> = requirements
        .iter()
        .filter_map(|r| {
            let operator = NodeSelectorOperator::from_api(&r.operator)?;
            Some(NodeSelectorRequirementWithMinValues::with_values(
                r.key.clone(),
                operator,
                r.values.clone().unwrap_or_default(),
            ))
        })
        .collect();
    Requirements::from_node_selector(&converted)
}

/// The offerings of `it` an overlay selects (controller.go l. 231-245 `getOverlaidOfferings`):
/// none unless the type's labels, the pool's name and template labels are strictly compatible
/// with the overlay's requirements (no undefined well-known labels allowed); then every
/// offering (available or not) whose zone, capacity type and reservation the overlay allows.
pub fn overlaid_offerings<'a>(pool: &NodePool, it: &'a InstanceType, overlay: &Requirements) -> Vec<&'a Offering> {
    let mut requirements = Requirements::new();
    requirements.add(labels::NODE_POOL_LABEL, Requirement::in_values([pool.metadata.name.clone().unwrap_or_default()]));
    requirements.add_all(&Requirements::from_labels(&pool.spec.template_labels()));
    requirements.add_all(&it.requirements);
    if requirements.compatible_strict(overlay).is_err() {
        return Vec::new();
    }
    it.offerings.iter().filter(|o| o.is_compatible(overlay)).collect()
}
