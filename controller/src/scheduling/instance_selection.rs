//! Choosing among a NodeClaim's feasible instance types: minValues (§2.3 item 13) and the
//! cheapest-first ordering and truncation (600 on the claim, 60 to CreateFleet; §0, §2.5).

use std::collections::BTreeSet;
use std::sync::Arc;

use super::requirements::Requirements;
use crate::cloudprovider::InstanceType;

/// Core `MaxInstanceTypes`: instance types kept on a NodeClaim (v1.7+, PR #2430).
pub const MAX_INSTANCE_TYPES_ON_CLAIM: usize = 600;
/// AWS provider: instance types sent to CreateFleet.
pub const MAX_INSTANCE_TYPES_TO_FLEET: usize = 60;
const _: () = assert!(MAX_INSTANCE_TYPES_TO_FLEET <= MAX_INSTANCE_TYPES_ON_CLAIM);

/// What to do when the feasible instance types span fewer values than a `minValues` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MinValuesPolicy {
    /// Fail this NodePool for the pod (the default): fall back to the next NodePool.
    #[default]
    Strict,
    /// Accept what is achievable and mark the claim `nodeclaim-min-values-relaxed=true`.
    BestEffort,
}

/// The first requirement whose `minValues` the types do not reach: (key, wanted, found).
pub fn min_values_shortfall<'a, I>(requirements: &Requirements, types: I) -> Option<(String, usize, usize)>
where
    I: IntoIterator<Item = &'a InstanceType> + Clone,
{
    for (key, requirement) in requirements.iter() {
        let Some(wanted) = requirement.min_values else { continue };
        let mut seen = BTreeSet::new();
        for instance_type in types.clone() {
            if let Some(values) = instance_type.requirements.get(key)
                && !values.is_complement()
            {
                seen.extend(values.values().iter().filter(|v| requirement.has(v)));
            }
        }
        if seen.len() < wanted {
            return Some((key.clone(), wanted, seen.len()));
        }
    }
    None
}

/// The cheapest available offering price of `instance_type` under `requirements`, or +∞.
pub fn cheapest_price(instance_type: &InstanceType, requirements: &Requirements) -> f64 {
    instance_type.cheapest_offering(requirements).map_or(f64::INFINITY, |o| o.price)
}

/// Sorts `types` by cheapest compatible available offering (ties by name, so the order is
/// stable), keeps the first `max`, and re-checks minValues on what is kept.
///
/// # Errors
/// Under [`MinValuesPolicy::Strict`], when the kept types no longer satisfy a `minValues`.
/// Returns whether minValues had to be relaxed (BestEffort).
pub fn truncate_instance_types(
    types: &[Arc<InstanceType>],
    requirements: &Requirements,
    max: usize,
    policy: MinValuesPolicy,
) -> Result<(Vec<Arc<InstanceType>>, bool), String> {
    let mut priced: Vec<(f64, &Arc<InstanceType>)> =
        types.iter().map(|it| (cheapest_price(it, requirements), it)).collect();
    priced.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    priced.truncate(max);
    let kept: Vec<Arc<InstanceType>> = priced.into_iter().map(|(_, it)| Arc::clone(it)).collect();
    match min_values_shortfall(requirements, kept.iter().map(Arc::as_ref)) {
        None => Ok((kept, false)),
        Some(_) if policy == MinValuesPolicy::BestEffort => Ok((kept, true)),
        Some((key, wanted, found)) => Err(format!(
            "minValues requirement is not met for label {key}: wanted {wanted}, {found} after truncating to {max} \
             instance types"
        )),
    }
}
