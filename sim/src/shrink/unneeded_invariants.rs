//! Invariants the failing one does not need, switched off.
//!
//! The invariants only watch a run (the checker reads the world; it never changes it), so
//! switching one off changes no event of the run — but every enabled liveness invariant
//! asks the loader for its window after the heal (`crate::scenario::liveness_window`),
//! which is what keeps a shrunk story from ending soon after its failure. A minimal story
//! checks only the invariant that fails; the trial still insists that one fails.

use serde_json::Value;

use super::Signature;
use crate::scenario::Scenario;

/// Moves that switch off invariants other than `keep`'s: all of them at once first, then
/// each one alone (a failure of another kind — a step, a crash — keeps none).
pub fn moves(json: &Value, current: &Scenario, keep: &Signature) -> Vec<(String, Value)> {
    let config = current.invariants.clone().unwrap_or_default();
    let Ok(Value::Object(config)) = serde_json::to_value(&config) else { return Vec::new() };
    let keep = match keep {
        Signature::Invariant(name) => Some(name.as_str()),
        Signature::StepFailed | Signature::Crashed => None,
    };
    let enabled: Vec<&String> = config
        .iter()
        .filter(|(name, v)| Some(name.as_str()) != keep && v.get("enabled") == Some(&Value::Bool(true)))
        .map(|(name, _)| name)
        .collect();
    let switched_off = |names: &[&String]| {
        let mut c = Value::Object(config.clone());
        for name in names {
            c[name.as_str()]["enabled"] = Value::Bool(false);
        }
        let mut j = json.clone();
        j["invariants"] = c;
        j
    };
    let mut out = Vec::new();
    if enabled.len() > 1 {
        let what = match keep {
            Some(name) => format!("switch off every invariant but {name}"),
            None => "switch off every invariant".to_string(),
        };
        out.push((what, switched_off(&enabled)));
    }
    for name in &enabled {
        out.push((format!("switch off invariants.{name}"), switched_off(&[name])));
    }
    out
}
