//! Preference relaxation (core `preferences.go`): preferences are enforced as if required, and
//! when a pod fits nowhere the scheduler drops one of them at a time, in core's order, and tries
//! again.

use super::pod::PodShape;
use super::taints::{TaintEffect, Toleration};

/// Removes one preference from `shape`, in core's order: a required node-affinity OR-term (while
/// more than one remains), the heaviest preferred pod affinity, the heaviest preferred pod
/// anti-affinity, the heaviest preferred node affinity, a ScheduleAnyway spread, and finally
/// (only if some NodePool has such taints) a toleration for every `PreferNoSchedule` taint.
/// Returns what was relaxed, or `None` when nothing is left.
pub fn relax(shape: &mut PodShape, tolerate_prefer_no_schedule: bool) -> Option<&'static str> {
    if shape.required_node_terms.len() > 1 {
        shape.required_node_terms.remove(0);
        return Some("removed a required node affinity term");
    }
    if !shape.preferred_affinity.is_empty() {
        shape.preferred_affinity.remove(0);
        return Some("removed a preferred pod affinity term");
    }
    if !shape.preferred_anti_affinity.is_empty() {
        shape.preferred_anti_affinity.remove(0);
        return Some("removed a preferred pod anti-affinity term");
    }
    if !shape.preferred_node_terms.is_empty() {
        shape.preferred_node_terms.remove(0);
        return Some("removed a preferred node affinity term");
    }
    if let Some(index) = shape.spreads.iter().position(|s| s.schedule_anyway) {
        shape.spreads.remove(index);
        return Some("removed a ScheduleAnyway topology spread constraint");
    }
    let toleration = Toleration::all_with_effect(TaintEffect::PreferNoSchedule);
    if tolerate_prefer_no_schedule && !shape.tolerations.contains(&toleration) {
        shape.tolerations.push(toleration);
        return Some("tolerated PreferNoSchedule taints");
    }
    None
}

/// Drops every preference up front (`--preference-policy=Ignore`).
pub fn ignore_preferences(shape: &mut PodShape) {
    shape.preferred_affinity.clear();
    shape.preferred_anti_affinity.clear();
    shape.preferred_node_terms.clear();
    shape.spreads.retain(|s| !s.schedule_anyway);
}
