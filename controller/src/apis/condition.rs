//! Status conditions as Karpenter writes them (`awslabs/operatorpkg` `status.Condition`).
//!
//! Every Karpenter object reports health through `status.conditions`, and a root `Ready`
//! condition rolls up a per-kind list of dependents (NodeClaim: Launched, Registered,
//! Initialized). Controllers set conditions through [`StatusConditions`], which keeps
//! `lastTransitionTime` stable while a status does not change and recomputes `Ready`, as
//! operatorpkg does. The clock is passed in, never read here.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Type of the root condition every Karpenter object rolls its dependents up into.
pub const CONDITION_READY: &str = "Ready";
/// Reason of a root condition that is not True because a dependent is not.
pub const REASON_UNHEALTHY_DEPENDENTS: &str = "UnhealthyDependents";
/// Reason of a condition nobody has reconciled yet.
pub const REASON_AWAITING_RECONCILIATION: &str = "AwaitingReconciliation";

/// The status of a condition: `"True"`, `"False"` or `"Unknown"`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not yet known, or in progress.
    Unknown,
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        })
    }
}

/// One entry of `status.conditions`.
///
/// `reason` and `message` are optional because the NodeClaim CRD does not require them; Karpenter
/// itself always writes both (possibly `""` for the message), and [`StatusConditions`] does too.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type in CamelCase, e.g. `Launched`.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: ConditionStatus,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed.
    pub last_transition_time: Time,
    /// Programmatic CamelCase reason for the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Condition {
    /// Whether the status is True.
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }

    /// Whether the status is False.
    pub fn is_false(&self) -> bool {
        self.status == ConditionStatus::False
    }

    /// The reason, or `""`.
    pub fn reason(&self) -> &str {
        self.reason.as_deref().unwrap_or_default()
    }

    /// The message, or `""`.
    pub fn message(&self) -> &str {
        self.message.as_deref().unwrap_or_default()
    }
}

/// Finds the condition of the given type.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|condition| condition.type_ == type_)
}

/// Access to an object's conditions, with operatorpkg's `ConditionSet` behaviour on top.
pub trait StatusConditions {
    /// Condition types that must all be True for `Ready` to be True.
    const READY_DEPENDENTS: &'static [&'static str];

    /// The conditions, empty when there is no status yet.
    fn conditions(&self) -> &[Condition];

    /// The conditions, creating the status when missing.
    fn conditions_mut(&mut self) -> &mut Vec<Condition>;

    /// `metadata.generation`, recorded as each condition's `observedGeneration`.
    fn generation(&self) -> Option<i64>;

    /// The condition of the given type.
    fn condition(&self, type_: &str) -> Option<&Condition> {
        find(self.conditions(), type_)
    }

    /// Whether the condition exists and is True.
    fn is_condition_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(Condition::is_true)
    }

    /// Whether the root `Ready` condition is True.
    fn is_ready(&self) -> bool {
        self.is_condition_true(CONDITION_READY)
    }

    /// Sets a condition; returns whether anything changed.
    ///
    /// `lastTransitionTime` moves to `now` only when the status changes. Setting a dependent
    /// recomputes `Ready`.
    fn set_condition(&mut self, type_: &str, status: ConditionStatus, reason: &str, message: &str, now: &Time) -> bool {
        let generation = self.generation();
        let changed = upsert(self.conditions_mut(), type_, status, reason, message, generation, now);
        if type_ != CONDITION_READY && Self::READY_DEPENDENTS.contains(&type_) {
            let root = ready_from_dependents(self.conditions(), Self::READY_DEPENDENTS);
            let (root_status, root_reason, root_message) = root;
            let root_changed = upsert(
                self.conditions_mut(),
                CONDITION_READY,
                root_status,
                &root_reason,
                &root_message,
                generation,
                now,
            );
            return changed || root_changed;
        }
        changed
    }

    /// Sets a condition True with the type as reason, as operatorpkg's `SetTrue` does.
    fn set_true(&mut self, type_: &str, now: &Time) -> bool {
        self.set_condition(type_, ConditionStatus::True, type_, "", now)
    }

    /// Removes a condition (e.g. `Drifted` once no longer drifted); returns whether it existed.
    fn clear_condition(&mut self, type_: &str) -> bool {
        let conditions = self.conditions_mut();
        let before = conditions.len();
        conditions.retain(|condition| condition.type_ != type_);
        before != conditions.len()
    }

    /// Adds every missing dependent and `Ready` as Unknown (operatorpkg initialization).
    fn initialize_conditions(&mut self, now: &Time) {
        let generation = self.generation();
        for type_ in Self::READY_DEPENDENTS.iter().chain([&CONDITION_READY]) {
            if self.condition(type_).is_none() {
                upsert(
                    self.conditions_mut(),
                    type_,
                    ConditionStatus::Unknown,
                    REASON_AWAITING_RECONCILIATION,
                    "object is awaiting reconciliation",
                    generation,
                    now,
                );
            }
        }
    }
}

/// The root status implied by the dependents: True when all are True, False when any is False,
/// Unknown otherwise; with a reason and a message naming the unhealthy dependents.
pub fn ready_from_dependents(conditions: &[Condition], dependents: &[&str]) -> (ConditionStatus, String, String) {
    let mut unhealthy = Vec::new();
    let mut any_false = false;
    for dependent in dependents {
        match find(conditions, dependent).map(|condition| condition.status) {
            Some(ConditionStatus::True) => {}
            Some(ConditionStatus::False) => {
                any_false = true;
                unhealthy.push(*dependent);
            }
            _ => unhealthy.push(*dependent),
        }
    }
    if unhealthy.is_empty() {
        return (ConditionStatus::True, CONDITION_READY.to_owned(), String::new());
    }
    let status = if any_false { ConditionStatus::False } else { ConditionStatus::Unknown };
    (status, REASON_UNHEALTHY_DEPENDENTS.to_owned(), format!("{} not True", unhealthy.join(", ")))
}

fn upsert(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) -> bool {
    let reason = Some(reason.to_owned());
    let message = Some(message.to_owned());
    if let Some(existing) = conditions.iter_mut().find(|condition| condition.type_ == type_) {
        let unchanged = existing.status == status
            && existing.reason == reason
            && existing.message == message
            && existing.observed_generation == generation;
        if unchanged {
            return false;
        }
        if existing.status != status {
            existing.last_transition_time = now.clone();
        }
        existing.status = status;
        existing.reason = reason;
        existing.message = message;
        existing.observed_generation = generation;
        return true;
    }
    conditions.push(Condition {
        type_: type_.to_owned(),
        status,
        observed_generation: generation,
        last_transition_time: now.clone(),
        reason,
        message,
    });
    true
}
