//! How long a generated story lasts, when its faults end, and the liveness thresholds it
//! declares — THE LIVENESS RULE: a story with faults declares `phases.faultsUntil` (T), every
//! scheduled fault ends by T, and `duration − T` is at least the longest enabled liveness
//! requirement plus one minute, so every liveness check gets its whole window.
//!
//! To keep stories minutes long, a story with faults writes its thresholds under
//! `invariants:`, lowered only where that is honest for what the story contains:
//! - `strandedPods.boundWithin` stays at its 5-minute default, except with a missing access
//!   entry (below).
//! - `stuckNodeClaim.deleteWithin`: the longest NodePool `terminationGracePeriod` plus 3
//!   minutes. Karpenter's termination finalizer stops waiting for a drain at the claim's
//!   terminationGracePeriod (core `pkg/controllers/node/termination/controller.go`), then the
//!   instance is terminated, so a deletion after the heal is bounded by the grace period.
//! - `stuckNodeClaim.initializeWithin`: 6 minutes, or 16 when a zone goes dark. After the heal
//!   nothing stops a launched instance from joining, and nodes join in about a minute; an
//!   instance stopped by a zone outage never joins, and Karpenter deletes its claim only at
//!   the 15-minute registration TTL (core `pkg/controllers/nodeclaim/lifecycle/liveness.go`,
//!   `registrationTTL`), so then the default bound (less its slack) applies.
//! - With `accessEntryMissing`, an instance launched while the node role has no access entry
//!   never registers, and Karpenter keeps its NodeClaim (and the pods nominated to it) until
//!   the same 15-minute registration TTL deletes it and the provisioner launches again
//!   (core `pkg/controllers/nodeclaim/lifecycle/liveness.go`, `registrationTTL`). So such a
//!   story gets `initializeWithin` 16 minutes and `boundWithin` 20 minutes (a claim made
//!   just before the heal expires 15 minutes later; then its instance is terminated, the
//!   provisioner batches and launches again, and the new node boots). With 5 minutes a pod
//!   waiting for such a claim would be reported stranded for Karpenter's own behaviour.
//!   (Story 4243 still strands pods for all 20 minutes: that is not this wait; see issue 19.)
//! - `churn` is off: it judges only after `settleAfter` (10 min) and with a node-hour of
//!   steady state, which a story of minutes never reaches, so it could never fire here.

use super::draw::{Dice, mins, secs};
use crate::scenario::Phases;
use crate::scenario::invariants::{Churn, InvariantConfig, StrandedPods, StuckNodeClaim};
use crate::scenario::liveness_window::shortest_window;
use dovetail_world::SimDuration;

/// When a story's faults end and how long it lasts.
pub struct Timeline {
    /// The story's duration.
    pub duration: SimDuration,
    /// End of the fault phase; `None` for a story without faults.
    pub faults_until: Option<SimDuration>,
}

/// A story without faults: 6 to 9 minutes.
pub fn calm(dice: &mut Dice) -> Timeline {
    Timeline { duration: mins(u64::from(dice.int(6, 9))), faults_until: None }
}

/// The end of the fault phase of a story with faults: 3 to 6 minutes in.
pub fn faults_until(dice: &mut Dice) -> SimDuration {
    mins(u64::from(dice.int(3, 6)))
}

/// The thresholds of a story with faults (see the module doc for why each is honest).
pub fn thresholds(has_zone_outage: bool, missing_access_entry: bool, longest_grace_seconds: u64) -> InvariantConfig {
    let defaults = InvariantConfig::default();
    InvariantConfig {
        stranded_pods: StrandedPods {
            bound_within: if missing_access_entry { mins(20) } else { defaults.stranded_pods.bound_within },
            ..defaults.stranded_pods.clone()
        },
        stuck_node_claim: StuckNodeClaim {
            initialize_within: mins(if has_zone_outage || missing_access_entry { 16 } else { 6 }),
            delete_within: secs(longest_grace_seconds + 180),
            ..defaults.stuck_node_claim.clone()
        },
        churn: Churn { enabled: false, ..defaults.churn.clone() },
        ..defaults
    }
}

/// A story with faults until `faults_until` under `config`: it lasts the loader's shortest
/// liveness window beyond (the longest enabled requirement plus its margin, see
/// `crate::scenario::liveness_window`), and its liveness phase is the last minute.
pub fn with_faults(faults_until: SimDuration, config: &InvariantConfig) -> (Timeline, Phases) {
    let duration = SimDuration(faults_until.0 + shortest_window(config));
    let phases = Phases { faults_until: Some(faults_until), liveness_from: Some(SimDuration(duration.0 - mins(1).0)) };
    (Timeline { duration, faults_until: Some(faults_until) }, phases)
}
