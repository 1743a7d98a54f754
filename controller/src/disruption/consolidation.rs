//! `computeConsolidation` (karpenter-behaviour.md §5.6): simulate without the candidates, then
//! delete when every pod fits elsewhere, or replace them with ONE new NodeClaim restricted to
//! instance types whose *worst* launch price ([`worst_launch_price`]) is strictly below what the
//! candidates cost together. Spot candidates are only
//! replaced behind the `SpotToSpotConsolidation` gate, and a single spot node needs at least
//! [`SPOT_TO_SPOT_MIN_TYPES`] cheaper spot types.

use std::sync::Arc;

use super::SPOT_TO_SPOT_MIN_TYPES;
use super::candidates::Candidate;
use super::command::{Command, Method};
use super::input::DisruptionInput;
use super::simulation::{Probes, SimulationError, simulate_with};
use crate::apis::labels::{CAPACITY_TYPE_LABEL, CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT};
use crate::cloudprovider::InstanceType;
use crate::scheduling::{PlannedNodeClaim, Requirement, Requirements, truncate_instance_types};

/// The price of the cheapest offering of `it` that `requirements` allow (the order of the
/// options, core `InstanceTypes.OrderByPrice`).
pub fn option_price(it: &InstanceType, requirements: &Requirements) -> Option<f64> {
    it.cheapest_offering(requirements).map(|o| o.price)
}

/// The worst price `it` may launch at under `requirements` (core `Offerings.WorstLaunchPrice`
/// over `Offerings.Available()`, `kubernetes-sigs/karpenter` `pkg/cloudprovider/types.go`):
/// the dearest available, compatible offering of the capacity type the launch will use,
/// reserved before spot before on-demand. `None` when no offering is available.
///
/// The replacement filter must judge this price, not the cheapest one: the fleet request may
/// launch any of the allowed zones (and, for spot, at any of their prices), so a type that is
/// cheaper than the candidate only in its cheapest zone can come up as dear as the node it
/// replaced, and be replaced again on the next pass — the churn upstream's filter prevents.
pub fn worst_launch_price(it: &InstanceType, requirements: &Requirements) -> Option<f64> {
    let compatible: Vec<&crate::cloudprovider::Offering> =
        it.offerings.iter().filter(|o| o.available && o.is_compatible(requirements)).collect();
    [CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND].iter().find_map(|capacity_type| {
        compatible.iter().filter(|o| o.capacity_type == *capacity_type).map(|o| o.price).max_by(f64::total_cmp)
    })
}

/// Keeps the options whose worst launch price is strictly below `limit` under
/// `requirements` (core `NodeClaim.RemoveInstanceTypeOptionsByPriceAndMinValues`,
/// `pkg/controllers/provisioning/scheduling/nodeclaim.go`), ordered by their cheapest
/// offering (core `OrderByPrice`, applied before the filter in `computeConsolidation`).
fn cheaper_options(options: &[Arc<InstanceType>], requirements: &Requirements, limit: f64) -> Vec<Arc<InstanceType>> {
    let mut priced: Vec<(f64, &Arc<InstanceType>)> = options
        .iter()
        .filter(|it| worst_launch_price(it, requirements).is_some_and(|worst| worst < limit))
        .filter_map(|it| option_price(it, requirements).map(|p| (p, it)))
        .collect();
    priced.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    priced.into_iter().map(|(_, it)| it.clone()).collect()
}

/// Why a candidate cannot take part in consolidation at all (§5.6 filter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConsolidationBlocker {
    /// Its NodePool is static (`replicas` set): its node count is fixed, never consolidated
    /// (core `disruption/consolidation.go` `ShouldDisrupt` l. 101-104).
    #[error("NodePool is static")]
    StaticNodePool,
    /// Its instance type or the offering it runs on is not in the catalog: no price to beat.
    #[error("instance type or offering is unknown")]
    UnknownOffering,
    /// Its node lacks the zone or capacity-type label.
    #[error("zone or capacity type label is missing")]
    MissingLabels,
    /// Its NodePool says `consolidateAfter: Never`.
    #[error("consolidation is disabled (consolidateAfter: Never)")]
    ConsolidationDisabled,
    /// Its NodePool only consolidates empty nodes.
    #[error("NodePool consolidationPolicy is WhenEmpty")]
    WhenEmptyPolicy,
    /// It is empty: Emptiness handles it.
    #[error("node is empty")]
    Empty,
    /// `consolidateAfter` has not passed since its last pod event (no `Consolidatable`).
    #[error("node is not consolidatable yet")]
    NotConsolidatable,
}

/// Why a candidate cannot take part in consolidation at all, if it cannot (§5.6 filter).
pub fn consolidation_blocker(candidate: &Candidate) -> Option<ConsolidationBlocker> {
    if candidate.static_pool {
        Some(ConsolidationBlocker::StaticNodePool)
    } else if candidate.instance_type.is_none() || candidate.price.is_none() {
        Some(ConsolidationBlocker::UnknownOffering)
    } else if candidate.zone.is_empty() || candidate.capacity_type.is_empty() {
        Some(ConsolidationBlocker::MissingLabels)
    } else if !candidate.consolidation_enabled {
        Some(ConsolidationBlocker::ConsolidationDisabled)
    } else if candidate.policy == crate::apis::nodepool::ConsolidationPolicy::WhenEmpty {
        Some(ConsolidationBlocker::WhenEmptyPolicy)
    } else if candidate.is_empty() {
        Some(ConsolidationBlocker::Empty)
    } else if !candidate.is_consolidatable() {
        Some(ConsolidationBlocker::NotConsolidatable)
    } else {
        None
    }
}

/// Why consolidating some candidates is not possible or not worth it (the `Unconsolidatable`
/// event message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unconsolidatable {
    /// Their pods would not all fit elsewhere.
    #[error(transparent)]
    PodsFitNowhereElse(#[from] SimulationError),
    /// Their pods would need more than one new node.
    #[error("Can't remove without creating {0} candidates")]
    TooManyReplacements(usize),
    /// No instance type that fits is cheaper than the candidates together.
    #[error("Can't replace with a cheaper node")]
    NoCheaperReplacement,
    /// The cheaper types do not satisfy the replacement's minValues.
    #[error("Can't replace with a cheaper node, {0}")]
    MinValues(String),
    /// Spot would replace spot, and the `SpotToSpotConsolidation` gate is off.
    #[error("SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node")]
    SpotToSpotDisabled,
    /// No spot type that fits is cheaper than the spot candidates.
    #[error("Can't replace spot node with a cheaper spot node")]
    NoCheaperSpot,
    /// A single spot node needs at least [`SPOT_TO_SPOT_MIN_TYPES`] cheaper spot types.
    #[error(
        "SpotToSpotConsolidation requires {SPOT_TO_SPOT_MIN_TYPES} cheaper instance type options than the current candidate to consolidate, got {0}"
    )]
    TooFewCheaperSpotTypes(usize),
}

/// Simulates without `candidates` and returns the delete or replace command, or why neither is
/// possible (the `Unconsolidatable` message).
///
/// # Errors
/// The reason consolidating these candidates is not possible or not worth it.
pub fn compute(input: &DisruptionInput, method: Method, candidates: &[Candidate]) -> Result<Command, Unconsolidatable> {
    compute_with(input, &Probes::new(input), method, candidates)
}

/// [`compute`] with the pass's [`Probes`] (`Probes::new(input)`) built already, so a pass's
/// probes share them.
///
/// # Errors
/// The reason consolidating these candidates is not possible or not worth it.
pub fn compute_with(
    input: &DisruptionInput,
    probes: &Probes<'_>,
    method: Method,
    candidates: &[Candidate],
) -> Result<Command, Unconsolidatable> {
    let refs: Vec<&Candidate> = candidates.iter().collect();
    let results = simulate_with(input, probes, &refs)?;
    let command = |replacements| Command { method, candidates: candidates.to_vec(), replacements };
    match results.new_node_claims.len() {
        0 => return Ok(command(Vec::new())),
        1 => {}
        n => return Err(Unconsolidatable::TooManyReplacements(n)),
    }
    let mut replacement = results.new_node_claims.into_iter().next().expect("one new claim");
    let candidate_price: f64 = candidates.iter().map(|c| c.price.unwrap_or(f64::INFINITY)).sum();
    let allows_spot = replacement.requirements.allows(CAPACITY_TYPE_LABEL, CAPACITY_TYPE_SPOT);
    if candidates.iter().all(Candidate::is_spot) && allows_spot {
        return spot_to_spot(input, candidates.len(), replacement, candidate_price).map(|r| command(vec![r]));
    }
    let options = cheaper_options(&replacement.instance_type_options, &replacement.requirements, candidate_price);
    if options.is_empty() {
        return Err(Unconsolidatable::NoCheaperReplacement);
    }
    let policy = input.options.scheduler.min_values_policy;
    if let Err(error) = truncate_instance_types(&options, &replacement.requirements, options.len(), policy) {
        return Err(Unconsolidatable::MinValues(error.to_string()));
    }
    // Prices were compared assuming the spot offering launches; never fall back to a pricier
    // on-demand node on a spot ICE.
    if allows_spot && replacement.requirements.allows(CAPACITY_TYPE_LABEL, CAPACITY_TYPE_ON_DEMAND) {
        replacement.requirements.add(CAPACITY_TYPE_LABEL, Requirement::in_values([CAPACITY_TYPE_SPOT]));
    }
    replacement.instance_type_options = options;
    Ok(command(vec![replacement]))
}

fn spot_to_spot(
    input: &DisruptionInput,
    candidate_count: usize,
    mut replacement: PlannedNodeClaim,
    candidate_price: f64,
) -> Result<PlannedNodeClaim, Unconsolidatable> {
    if !input.options.spot_to_spot {
        return Err(Unconsolidatable::SpotToSpotDisabled);
    }
    replacement.requirements.add(CAPACITY_TYPE_LABEL, Requirement::in_values([CAPACITY_TYPE_SPOT]));
    let mut options = cheaper_options(&replacement.instance_type_options, &replacement.requirements, candidate_price);
    if options.is_empty() {
        return Err(Unconsolidatable::NoCheaperSpot);
    }
    if candidate_count == 1 {
        if options.len() < SPOT_TO_SPOT_MIN_TYPES {
            return Err(Unconsolidatable::TooFewCheaperSpotTypes(options.len()));
        }
        options.truncate(SPOT_TO_SPOT_MIN_TYPES);
    }
    replacement.instance_type_options = options;
    Ok(replacement)
}

/// `filterOutSameInstanceType`: when an option is the type of one of the candidates, drop every
/// option whose worst launch price is not below the cheapest such candidate (core filters with
/// `RemoveInstanceTypeOptionsByPriceAndMinValues` here too), so "replace three nodes with one
/// of a type you already run" (which is really a delete) is not chosen.
pub fn filter_out_same_instance_type(replacement: &mut PlannedNodeClaim, candidates: &[Candidate]) {
    let limit = candidates
        .iter()
        .filter(|c| {
            c.instance_type.as_ref().is_some_and(|t| replacement.instance_type_options.iter().any(|o| o.name == t.name))
        })
        .filter_map(|c| c.price)
        .min_by(f64::total_cmp);
    if let Some(limit) = limit {
        let requirements = replacement.requirements.clone();
        replacement
            .instance_type_options
            .retain(|it| worst_launch_price(it, &requirements).is_some_and(|worst| worst < limit));
    }
}
