//! The shrinker's moves: every scenario one step simpler than the current one, biggest cut
//! first.
//!
//! 1. End the story just after the failure was first seen, or as soon after it as the
//!    liveness window allows ([`ending`]); switch off the invariants the failing one does
//!    not need, which shortens that window ([`unneeded_invariants`]).
//! 2. Drop halves of long lists, then single workloads, faults, steps, NodePools, rolling
//!    upgrades and spikes; run one controller replica instead of two.
//! 3. Simplify distributions to constants (`{uniform: [a, b]}` and `{choice: [a, ...]}` to
//!    `a`, then to `b` / the last choice).
//! 4. Strip pod extras (affinity, spread, selectors, do-not-disrupt, priority, ...) and Job
//!    options.
//! 5. Halve replica counts, Job counts, rates and fault durations.
//!
//! Moves are edits of the scenario's JSON form (the same fields a user writes), read back
//! through the scenario's own types; a move whose result does not load is skipped by the
//! caller. The seed is not a move: the shrinker holds it fixed.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{Signature, ending, unneeded_invariants};
use crate::scenario::{Scenario, SimDuration};

/// A candidate: what the move did, and the scenario it made.
pub type Candidate = (String, Scenario);

/// Keys whose numbers (or durations) are lowered by halving, under `workloads` and `faults`.
const LOWERED: &[&str] = &[
    "replicas",
    "count",
    "add",
    "perHour",
    "completions",
    "parallelism",
    "rate",
    "errorRate",
    "throttleRate",
    "conflictRate",
    "duplicateRate",
    "fraction",
    "for",
    "runFor",
    "delay",
    "latency",
];

/// Pod fields a simpler story does without.
const POD_EXTRAS: &[&str] = &[
    "affinity",
    "topologySpreadConstraints",
    "nodeSelector",
    "tolerations",
    "doNotDisrupt",
    "priorityClassName",
    "labels",
    "annotations",
    "terminationGracePeriodSeconds",
    "hostPort",
    "gpu",
];

/// Every move from `current`, biggest first. `failed_at` is when the failure was first seen
/// (if the run says), where the story may end; `keep` is the failure every candidate must
/// still show (the invariants it does not need may go).
pub fn all(current: &Scenario, failed_at: Option<Duration>, keep: &Signature) -> Vec<Candidate> {
    let Ok(json) = serde_json::to_value(current) else { return Vec::new() };
    let mut out: Vec<(String, Value)> = ending::moves(&json, current, failed_at);
    out.extend(unneeded_invariants::moves(&json, current, keep));
    for list in ["workloads", "faults"] {
        let len = json[list].as_array().map_or(0, Vec::len);
        if len >= 4 {
            out.push((format!("drop the first half of {list}"), without_range(&json, list, 0..len / 2)));
            out.push((format!("drop the second half of {list}"), without_range(&json, list, len / 2..len)));
        }
    }
    for list in ["faults", "workloads", "steps"] {
        for i in 0..json[list].as_array().map_or(0, Vec::len) {
            out.push((format!("drop {list}[{i}] ({})", summary(&json[list][i])), without_range(&json, list, i..i + 1)));
        }
    }
    for (i, m) in json["manifests"].as_array().into_iter().flatten().enumerate() {
        if m["kind"] == "NodePool" {
            out.push((format!("drop NodePool {}", m["metadata"]["name"]), without_range(&json, "manifests", i..i + 1)));
        }
    }
    for i in 0..json["controller"]["upgrades"].as_array().map_or(0, Vec::len) {
        let mut j = json.clone();
        remove_index(&mut j["controller"]["upgrades"], i);
        out.push((format!("drop controller.upgrades[{i}]"), j));
    }
    if json["controller"]["replicas"].as_u64() == Some(2) {
        let mut j = json.clone();
        if let Some(c) = j["controller"].as_object_mut() {
            c.remove("replicas");
        }
        out.push(("run one controller replica".into(), j));
    }
    for (i, w) in json["workloads"].as_array().into_iter().flatten().enumerate() {
        let Some((kind, body)) = w.as_object().and_then(|o| o.iter().next()) else { continue };
        if let Some(steps) = body["replicas"]["steps"].as_array()
            && let (Some(first), Some(last)) = (steps.first(), steps.last())
        {
            for (which, step) in [("first", first), ("last", last)] {
                let mut j = json.clone();
                j["workloads"][i][kind.as_str()]["replicas"] = step["replicas"].clone();
                out.push((format!("workloads[{i}]: constant replicas, the {which} step's"), j));
            }
        }
        for key in ["spikes", "completions", "parallelism"] {
            if body.get(key).is_some() {
                let mut j = json.clone();
                remove_key(&mut j["workloads"][i][kind.as_str()], key);
                out.push((format!("workloads[{i}]: drop {key}"), j));
            }
        }
    }
    for (path, value) in walk(&json, "") {
        if let Some((first, last)) = distribution_ends(value) {
            for (which, v) in [("its first value", first), ("its last value", last)] {
                let mut j = json.clone();
                if let Some(slot) = j.pointer_mut(&path) {
                    *slot = v;
                }
                out.push((format!("{path}: a constant, {which}"), j));
            }
        }
    }
    for (i, w) in json["workloads"].as_array().into_iter().flatten().enumerate() {
        let Some((kind, body)) = w.as_object().and_then(|o| o.iter().next()) else { continue };
        for key in POD_EXTRAS {
            if body["pod"].get(*key).is_some() {
                let mut j = json.clone();
                remove_key(&mut j["workloads"][i][kind.as_str()]["pod"], key);
                out.push((format!("workloads[{i}] ({}): drop pod.{key}", body["name"]), j));
            }
        }
    }
    for list in ["workloads", "faults"] {
        for (path, value) in walk(&json[list], &format!("/{list}")) {
            let key = path.rsplit('/').next().unwrap_or("");
            if !LOWERED.contains(&key) {
                continue;
            }
            if let Some(lower) = halved(value) {
                let mut j = json.clone();
                if let Some(slot) = j.pointer_mut(&path) {
                    *slot = lower.clone();
                }
                out.push((format!("{path}: {value} -> {lower}"), j));
            }
        }
    }
    out.into_iter().filter_map(|(what, j)| serde_json::from_value::<Scenario>(j).ok().map(|s| (what, s))).collect()
}

fn without_range(json: &Value, list: &str, range: std::ops::Range<usize>) -> Value {
    let mut j = json.clone();
    if let Some(items) = j[list].as_array_mut() {
        items.drain(range);
    }
    j
}

fn remove_index(list: &mut Value, i: usize) {
    if let Some(items) = list.as_array_mut()
        && i < items.len()
    {
        items.remove(i);
    }
}

fn remove_key(object: &mut Value, key: &str) {
    if let Some(o) = object.as_object_mut() {
        o.remove(key);
    }
}

/// A one-line description of a list entry: its kind key and name, if any.
fn summary(entry: &Value) -> String {
    let Some(o) = entry.as_object() else { return entry.to_string() };
    let timing = ["at", "for", "perHour", "live", "from", "jitter", "count", "expectCode"];
    let kind = o.iter().find(|(k, v)| !v.is_null() && v != &&Value::Bool(false) && !timing.contains(&k.as_str()));
    let kind = kind.map(|(k, _)| k.clone());
    let name = o.values().find_map(|v| v.get("name").and_then(Value::as_str)).map(str::to_string);
    match (kind, name) {
        (Some(k), Some(n)) => format!("{k} {n}"),
        (Some(k), None) => k,
        _ => entry.to_string(),
    }
}

/// Every (JSON pointer, value) under `value`, skipping manifests, steps and invariant
/// settings (pasted Kubernetes objects and thresholds are not the story's moving parts).
fn walk<'a>(value: &'a Value, path: &str) -> Vec<(String, &'a Value)> {
    let mut out = vec![(path.to_string(), value)];
    match value {
        Value::Object(o) => {
            for (k, v) in o {
                if path.is_empty() && matches!(k.as_str(), "manifests" | "steps" | "invariants" | "phases") {
                    continue;
                }
                out.extend(walk(v, &format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"))));
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                out.extend(walk(v, &format!("{path}/{i}")));
            }
        }
        _ => {}
    }
    out
}

/// `{uniform: [a, b]}` or `{choice: [a, ..., z]}`: its two ends.
fn distribution_ends(value: &Value) -> Option<(Value, Value)> {
    let o: &Map<String, Value> = value.as_object()?;
    if o.len() != 1 {
        return None;
    }
    let (k, v) = o.iter().next()?;
    let items = v.as_array()?;
    if !matches!(k.as_str(), "uniform" | "choice") || items.is_empty() {
        return None;
    }
    Some((items[0].clone(), items[items.len() - 1].clone()))
}

/// Half of a count, rate or duration, if it is worth lowering.
fn halved(value: &Value) -> Option<Value> {
    match value {
        Value::Number(n) if n.is_u64() => n.as_u64().filter(|&n| n > 1).map(|n| Value::from(n / 2)),
        Value::Number(n) => n.as_f64().filter(|&x| x > 0.01).map(|x| Value::from((x * 500.0).round() / 1000.0)),
        Value::String(s) => {
            let d = SimDuration::parse(s).ok()?;
            let half = Duration::from_millis(u64::try_from(d.0.as_millis() / 2).ok()?);
            (half >= Duration::from_secs(1)).then(|| Value::String(SimDuration(half).to_string()))
        }
        _ => None,
    }
}
