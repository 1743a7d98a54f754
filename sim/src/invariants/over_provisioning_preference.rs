//! NodeClaims a preference move left behind: a pod Karpenter nominated to an in-flight
//! claim its preferred node affinity rejects, then to a new claim the preference accepts
//! (see [`crate::oracle::node_preference`] for why core does that, with its source lines).
//!
//! Such a re-nomination is not a duplicate launch of the kind `overProvisioning` judges, and
//! the claim it launched is allowed on top of the wave's packing (one per move) — but the
//! claim it leaves behind is not excused for good: once no pod is nominated or bound to it
//! since the move, it is judged as unused capacity from the move on (Karpenter removes an empty node after the pool's
//! `consolidateAfter`). A re-nomination between two claims the pod's preferences rank
//! equally is not such a move, and stays a duplicate.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::invariants::Ctx;
use crate::oracle::node_preference::prefers;
use crate::oracle::offering_labels::offering_labels;
use crate::oracle::resources::pool_node_labels;

/// Claims left behind by preference moves, with the time of the earliest such move away
/// from each (the new claim's creation).
#[derive(Default)]
pub struct LeftBehind {
    moves: BTreeMap<String, Duration>,
    /// The claims preference moves went to.
    targets: BTreeSet<String>,
}

impl LeftBehind {
    /// Records the re-nomination of `pod` (its key) from `earlier` to `new` (created at
    /// `created`) when it is a preference move; says whether it is. `false` while either
    /// claim has no instance yet, so an unknown is never excused.
    pub fn classify(&mut self, ctx: &Ctx<'_>, pod: &str, earlier: &str, new: &str, created: Duration) -> bool {
        let Some(object) = ctx.pods.iter().find(|p| p.key == pod).map(|p| &p.object) else { return false };
        let (Some(better), Some(worse)) = (claim_labels(ctx, new), claim_labels(ctx, earlier)) else { return false };
        if !prefers(object, &better, &worse) {
            return false;
        }
        let at = self.moves.entry(earlier.to_string()).or_insert(created);
        *at = (*at).min(created);
        self.targets.insert(new.to_string());
        true
    }

    /// Records a move away from `earlier` at `created` that the pod's zone spread forced
    /// (`super::spread`): the claim it leaves behind is judged as unused capacity from then
    /// on, but the claim it went to is no allowance on top of the wave's packing.
    pub fn forced_move(&mut self, earlier: &str, created: Duration) {
        let at = self.moves.entry(earlier.to_string()).or_insert(created);
        *at = (*at).min(created);
    }

    /// The claims preference moves went to.
    pub fn targets(&self) -> &BTreeSet<String> {
        &self.targets
    }

    /// When a preference move left `claim` behind, if one did.
    pub fn since(&self, claim: &str) -> Option<Duration> {
        self.moves.get(claim).copied()
    }
}

/// The labels of the node a NodeClaim launched: its instance's offering labels and the
/// labels its NodePool puts on its nodes. `None` before the instance exists.
pub fn claim_labels(ctx: &Ctx<'_>, claim: &str) -> Option<BTreeMap<String, String>> {
    let claim = ctx.view.claims.get(claim)?;
    let instance = ctx.view.instance_of(claim)?;
    let catalog = ctx.cloud.catalog();
    let info = catalog.get(&instance.instance_type)?;
    let zone_id = catalog.zone(&instance.zone).map(|z| z.id.clone()).unwrap_or_default();
    let mut labels = offering_labels(info, &instance.zone, &zone_id, instance.capacity_type);
    if let Some(pool) = ctx.view.pools.get(&claim.nodepool) {
        labels.extend(pool_node_labels(&pool.object));
    }
    Some(labels)
}
