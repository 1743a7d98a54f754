//! Where a shrunk story may end: just after its failure, but never inside the liveness
//! window the loader demands (`crate::scenario::liveness_window`).
//!
//! A story that simply stops two seconds after its failure would usually not load: the
//! liveness rule wants `duration − faultsUntil` to cover the longest liveness requirement
//! of the enabled invariants plus a margin. So the shrinker ends a story at
//! `max(failure + 2s, faultsUntil + shortest window)`, and first tries healing the faults
//! at the failure (faults after it cannot have caused it), which moves `faultsUntil` —
//! and with it the earliest allowed end — as early as it can go. Dropping the invariants
//! the failing one does not need ([`super::unneeded_invariants`]) shrinks the window
//! itself, down to nothing when no liveness invariant is left on.

use std::time::Duration;

use serde_json::Value;

use crate::scenario::dist::Dist;
use crate::scenario::liveness_window::{requirements, shortest_window};
use crate::scenario::{ControllerSpec, Scenario, SimDuration};

/// Seconds a story keeps after its failure was first seen (the checker ticks each second).
const AFTER_FAILURE: Duration = Duration::from_secs(2);

/// The shortest stories ending after `failed_at` (or half the duration when the failure
/// time is unknown) that the liveness rule allows, shortest first.
pub fn moves(json: &Value, current: &Scenario, failed_at: Option<Duration>) -> Vec<(String, Value)> {
    let duration = current.duration.0;
    let target = match failed_at {
        Some(at) => at + AFTER_FAILURE,
        None => {
            let half = Duration::from_secs(duration.as_secs() / 2);
            if half < Duration::from_secs(30) {
                return Vec::new();
            }
            half
        }
    };
    let window = window(current);
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut push = |end: Duration, heal: Option<Duration>| {
        if end >= duration || out.iter().any(|(_, j)| j["duration"] == Value::String(SimDuration(end).to_string())) {
            return;
        }
        let what = match heal {
            Some(h) => format!("end the story at {} (faults heal at {})", SimDuration(end), SimDuration(h)),
            None => format!("end the story at {}", SimDuration(end)),
        };
        out.push((what, truncated(json, end, heal)));
    };
    if current.faults.is_empty() {
        push(target.max(window), None);
    } else {
        let heal = current.phases.faults_until.map_or(duration, |d| d.0);
        let early = heal.min(target);
        push(target.max(early + window), Some(early));
        push(target.max(heal + window), Some(heal));
    }
    out
}

/// The liveness window the loader demands of `scenario` (none for an API-only story or
/// when no liveness invariant is enabled).
fn window(scenario: &Scenario) -> Duration {
    let config = scenario.invariants.clone().unwrap_or_default();
    if scenario.controller == ControllerSpec::None || requirements(&config).is_empty() {
        return Duration::ZERO;
    }
    shortest_window(&config)
}

/// The story ended at `end`, its faults healed at `heal` (when it has faults): phases
/// clamped, scheduled faults cut at the heal, and what starts too late dropped.
pub fn truncated(json: &Value, end: Duration, heal: Option<Duration>) -> Value {
    let mut j = json.clone();
    let text = |d: Duration| Value::String(SimDuration(d).to_string());
    j["duration"] = text(end);
    let phase = |j: &Value, key: &str| j["phases"][key].as_str().and_then(|s| SimDuration::parse(s).ok()).map(|d| d.0);
    let faults_until = match heal {
        Some(h) => Some(h.min(end)),
        None => phase(&j, "faultsUntil").map(|d| d.min(end)),
    };
    if let Some(until) = faults_until {
        j["phases"]["faultsUntil"] = text(until);
    }
    if let Some(from) = phase(&j, "livenessFrom") {
        j["phases"]["livenessFrom"] = text(from.min(end).max(faults_until.unwrap_or_default()));
    }
    let limit = faults_until.unwrap_or(end);
    if let Some(faults) = j.pointer_mut("/faults").and_then(Value::as_array_mut) {
        faults.retain(|f| at(f).is_none_or(|at| at < limit));
        for f in faults.iter_mut() {
            cut_at(f, limit);
        }
    }
    retain(&mut j, "/steps", |s| at(s).is_none_or(|at| at <= end));
    retain(&mut j, "/controller/upgrades", |u| at(u).is_none_or(|at| at < end));
    j
}

/// A scheduled fault that lasts past `limit` made to end there (the rule: every scheduled
/// fault ends by `faultsUntil`).
fn cut_at(fault: &mut Value, limit: Duration) {
    let Some(start) = at(fault) else { return };
    let Ok(lasts) = serde_json::from_value::<Dist<SimDuration>>(fault["for"].clone()) else { return };
    if start + lasts.max().0 > limit {
        fault["for"] = Value::String(SimDuration(limit.saturating_sub(start)).to_string());
    }
}

/// The `at` of a fault, step or upgrade, if it has one.
fn at(v: &Value) -> Option<Duration> {
    v["at"].as_str().and_then(|s| SimDuration::parse(s).ok()).map(|d| d.0)
}

/// Keeps the entries of the list at `pointer` (if there is one) that `keep` accepts.
fn retain(json: &mut Value, pointer: &str, keep: impl Fn(&Value) -> bool) {
    if let Some(items) = json.pointer_mut(pointer).and_then(Value::as_array_mut) {
        items.retain(keep);
    }
}
