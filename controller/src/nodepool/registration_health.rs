//! `NodeRegistrationHealthy` on a NodePool (core v1.5+): whether the pool's recent NodeClaims
//! launched and registered, so a misconfigured EC2NodeClass (a wrong subnet, security group or
//! node role: instances that run and bill but never join) shows on the NodePool as it does on EKS.
//!
//! Upstream keeps, per NodePool UID, a ring buffer of the last [`BUFFER_SIZE`] outcomes
//! (`pkg/state/nodepoolhealth/tracker.go`): a registration is `true`
//! (`nodeclaim/lifecycle/registration.go` `updateNodePoolRegistrationHealth`), a launch or
//! registration timeout `false` (`nodeclaim/lifecycle/liveness.go`
//! `updateNodePoolRegistrationHealth`). The pool is unhealthy when the failures are at least
//! half of the buffer's *capacity* (`ThresholdFalse = 0.5`, divided by `BufferSize`, not by the
//! outcomes held). The condition only moves on an outcome: True when the buffer with the new
//! success added is healthy, False when the buffer with the new failure added is unhealthy; it
//! is reset to Unknown (buffer emptied) when the NodePool's generation or its node class's
//! generation changes (`nodepool/registrationhealth/controller.go` l. 91-96), and after a
//! restart an empty buffer is re-filled from the condition (l. 80-89).
//!
//! Upstream gives the condition no scheduling consequence: it is not one of the NodePool's
//! Ready dependents (`apis/v1/nodepool_status.go` `StatusConditions`), and the only other
//! reader is the pod-scheduling metric in `state/cluster.go` l. 521. Dovetail does the same.
//!
//! The buffers live in the controller's memory, shared by the lifecycle controller (which
//! records outcomes) and the NodePool status controller (which resets them).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::apis::condition::{ConditionStatus, REASON_AWAITING_RECONCILIATION, StatusConditions};
use crate::apis::nodepool::CONDITION_NODE_REGISTRATION_HEALTHY;
use crate::apis::{NodeClaim, NodePool};
use crate::lifecycle::conditions::LAUNCHED;

/// Outcomes remembered per NodePool (`nodepoolhealth.BufferSize`).
pub const BUFFER_SIZE: usize = 4;
/// Failures, as a fraction of [`BUFFER_SIZE`], that make a pool unhealthy (`ThresholdFalse`).
pub const THRESHOLD_FALSE: f64 = 0.5;

/// What a pool's buffer says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// No outcome recorded since the last reset.
    Unknown,
    /// Fewer failures than the threshold.
    Healthy,
    /// At least the threshold of failures.
    Unhealthy,
}

/// The last [`BUFFER_SIZE`] outcomes of one pool, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Outcomes(VecDeque<bool>);

impl Outcomes {
    fn insert(&mut self, success: bool) {
        if self.0.len() == BUFFER_SIZE {
            self.0.pop_front();
        }
        self.0.push_back(success);
    }

    fn health(&self) -> Health {
        if self.0.is_empty() {
            return Health::Unknown;
        }
        let failures = self.0.iter().filter(|ok| !**ok).count();
        #[allow(clippy::cast_precision_loss)] // at most BUFFER_SIZE
        let unhealthy = failures as f64 / BUFFER_SIZE as f64 >= THRESHOLD_FALSE;
        if unhealthy { Health::Unhealthy } else { Health::Healthy }
    }

    /// A buffer that reads as `health` (`Tracker.SetStatus`).
    fn hydrated(health: Health) -> Self {
        let mut outcomes = Self::default();
        match health {
            Health::Unknown => {}
            Health::Healthy => outcomes.insert(true),
            Health::Unhealthy => {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 2 of 4
                let failures = (BUFFER_SIZE as f64 * THRESHOLD_FALSE) as usize;
                for _ in 0..failures {
                    outcomes.insert(false);
                }
            }
        }
        outcomes
    }
}

/// The per-pool buffers, keyed by NodePool UID; cheap to clone (one shared map).
#[derive(Clone, Debug, Default)]
pub struct RegistrationHealth {
    pools: Arc<Mutex<BTreeMap<String, Outcomes>>>,
}

impl RegistrationHealth {
    fn with<T>(&self, uid: &str, f: impl FnOnce(&mut Outcomes) -> T) -> T {
        let mut pools = self.pools.lock().expect("registration health");
        f(pools.entry(uid.to_owned()).or_default())
    }

    /// The pool's health now.
    pub fn health(&self, uid: &str) -> Health {
        self.with(uid, |o| o.health())
    }

    /// The pool's health if `success` were recorded (`State.DryRun`).
    pub fn dry_run(&self, uid: &str, success: bool) -> Health {
        self.with(uid, |o| {
            let mut copy = o.clone();
            copy.insert(success);
            copy.health()
        })
    }

    /// Records one launch/registration outcome.
    pub fn record(&self, uid: &str, success: bool) {
        self.with(uid, |o| o.insert(success));
    }

    /// Replaces the pool's buffer with one that reads as `health` (Unknown empties it).
    pub fn set(&self, uid: &str, health: Health) {
        self.with(uid, |o| *o = Outcomes::hydrated(health));
    }
}

/// The condition a claim's outcome moves its pool to, if any: `(status, reason, message)`.
///
/// A success sets True when the buffer with it added is healthy and the condition is not
/// already True; a failure sets False when the buffer with it added is unhealthy and the
/// condition is not already False, with `RegistrationFailed` for a claim that launched and the
/// claim's own `Launched` reason and message for one that did not.
pub fn condition_for_outcome(
    health: &RegistrationHealth,
    pool: &NodePool,
    claim: &NodeClaim,
    success: bool,
) -> Option<(ConditionStatus, String, String)> {
    let uid = pool.metadata.uid.as_deref().unwrap_or_default();
    let current = pool.condition(CONDITION_NODE_REGISTRATION_HEALTHY).map(|c| c.status);
    if success {
        let moves = health.dry_run(uid, true) == Health::Healthy && current != Some(ConditionStatus::True);
        return moves.then(|| (ConditionStatus::True, CONDITION_NODE_REGISTRATION_HEALTHY.to_owned(), String::new()));
    }
    if health.dry_run(uid, false) != Health::Unhealthy || current == Some(ConditionStatus::False) {
        return None;
    }
    if claim.is_condition_true(LAUNCHED) {
        return Some((ConditionStatus::False, "RegistrationFailed".into(), "Failed to register node".into()));
    }
    let launched = claim.condition(LAUNCHED);
    let reason = launched.and_then(|c| c.reason.clone()).unwrap_or_default();
    let message = launched.and_then(|c| c.message.clone()).unwrap_or_default();
    Some((ConditionStatus::False, reason, message))
}

/// Sets the pool's condition as the registration-health controller would at `now`: re-fills
/// an empty buffer from a True/False condition (a restarted controller), then resets condition
/// and buffer to Unknown when the condition is missing or was computed for another generation
/// of the pool or of its node class. Records the node class's generation in the status.
pub fn reconcile_condition(health: &RegistrationHealth, pool: &mut NodePool, class_generation: i64, now: &Time) {
    let uid = pool.metadata.uid.clone().unwrap_or_default();
    let condition = pool.condition(CONDITION_NODE_REGISTRATION_HEALTHY).cloned();
    if health.health(&uid) == Health::Unknown {
        match condition.as_ref().map(|c| c.status) {
            Some(ConditionStatus::True) => health.set(&uid, Health::Healthy),
            Some(ConditionStatus::False) => health.set(&uid, Health::Unhealthy),
            _ => {}
        }
    }
    let observed_class = pool.status.as_ref().and_then(|s| s.node_class_observed_generation).unwrap_or_default();
    let stale = condition.as_ref().is_none_or(|c| c.observed_generation != pool.metadata.generation)
        || observed_class != class_generation;
    if stale {
        pool.set_condition(
            CONDITION_NODE_REGISTRATION_HEALTHY,
            ConditionStatus::Unknown,
            REASON_AWAITING_RECONCILIATION,
            "object is awaiting reconciliation",
            now,
        );
        health.set(&uid, Health::Unknown);
    }
    pool.status.get_or_insert_with(Default::default).node_class_observed_generation = Some(class_generation);
}

#[cfg(test)]
#[path = "registration_health_tests.rs"]
mod tests;
