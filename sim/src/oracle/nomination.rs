//! Karpenter's pod nominations, read from the Events it writes: after each scheduling pass
//! the provisioner records, for every pod it placed, a `Nominated` Event "Pod should
//! schedule on: nodeclaim/<claim>" (or `node/<node>`, or both, comma-separated) — core
//! `pkg/controllers/provisioning/scheduling/events.go` `NominatePodEvent`. These Events are
//! the only outside trace of which pods a NodeClaim was launched for.
//!
//! A repeated nomination (the same pod to the same target in a later pass) does not create
//! a second Event: the controller's event writer, like client-go's event correlator, bumps
//! the existing Event's `count` and `lastTimestamp`. So one Event can record two moments,
//! its first and its latest nomination, and both are read: a pass that nominates a pod to
//! an in-flight claim again shows that claim is still wanted at that time.

use std::time::Duration;

use serde_json::Value;

use super::timestamp::sim_time;

/// The Event reason Karpenter uses for a nomination.
pub const NOMINATED_REASON: &str = "Nominated";

/// One nomination: a pod told to expect a node or an in-flight NodeClaim.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Nomination {
    /// When the nomination was made: the Event's `firstTimestamp` (else `eventTime`), or
    /// for a repeat its `lastTimestamp`.
    pub at: Duration,
    /// The pod, `namespace/name`.
    pub pod: String,
    /// The NodeClaim named, if any.
    pub node_claim: Option<String>,
    /// The Node named, if any.
    pub node: Option<String>,
}

/// Parses a nomination Event's message (`Pod should schedule on: nodeclaim/a, node/b`) into
/// the NodeClaim and Node it names.
pub fn parse_targets(message: &str) -> (Option<String>, Option<String>) {
    let Some((_, targets)) = message.split_once("should schedule on:") else { return (None, None) };
    let (mut claim, mut node) = (None, None);
    for target in targets.split(',').map(str::trim) {
        if let Some(name) = target.strip_prefix("nodeclaim/") {
            claim = Some(name.to_string());
        } else if let Some(name) = target.strip_prefix("node/") {
            node = Some(name.to_string());
        }
    }
    (claim, node)
}

/// The nominations an Event records: none if it is not a nomination, its first one, and
/// its latest one too when it was repeated later (`lastTimestamp` after the first).
pub fn of_event_all(event: &Value) -> Vec<Nomination> {
    let Some(first) = of_event(event) else { return Vec::new() };
    let latest = sim_time(&event["lastTimestamp"]).filter(|last| *last > first.at);
    let repeat = latest.map(|at| Nomination { at, ..first.clone() });
    std::iter::once(first).chain(repeat).collect()
}

/// The first nomination an Event records, if it is one.
pub fn of_event(event: &Value) -> Option<Nomination> {
    if event["reason"] != NOMINATED_REASON
        || event.pointer("/involvedObject/kind").and_then(Value::as_str) != Some("Pod")
    {
        return None;
    }
    let (node_claim, node) = parse_targets(event["message"].as_str()?);
    if node_claim.is_none() && node.is_none() {
        return None;
    }
    let involved = &event["involvedObject"];
    Some(Nomination {
        at: sim_time(&event["firstTimestamp"]).or_else(|| sim_time(&event["eventTime"]))?,
        pod: format!("{}/{}", involved["namespace"].as_str()?, involved["name"].as_str()?),
        node_claim,
        node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_from_karpenters_message() {
        assert_eq!(parse_targets("Pod should schedule on: nodeclaim/default-abc"), (Some("default-abc".into()), None));
        assert_eq!(
            parse_targets("Pod should schedule on: nodeclaim/default-abc, node/ip-10-0-0-1"),
            (Some("default-abc".into()), Some("ip-10-0-0-1".into()))
        );
        assert_eq!(parse_targets("Pod should schedule on: node/ip-1"), (None, Some("ip-1".into())));
        assert_eq!(parse_targets("Failed to schedule pod"), (None, None));
    }

    #[test]
    fn only_pod_nomination_events_count() {
        let event = |reason: &str, kind: &str| {
            serde_json::json!({
                "reason": reason, "message": "Pod should schedule on: nodeclaim/c1",
                "involvedObject": {"kind": kind, "namespace": "default", "name": "web-1"},
                "firstTimestamp": "2026-01-01T00:00:05Z"
            })
        };
        assert!(of_event(&event("FailedScheduling", "Pod")).is_none());
        assert!(of_event(&event("Nominated", "Node")).is_none());
        let n = of_event(&event("Nominated", "Pod"));
        assert_eq!(n.map(|n| (n.pod, n.node_claim)), Some(("default/web-1".into(), Some("c1".into()))));
    }

    #[test]
    fn a_repeated_nomination_is_read_at_its_first_and_latest_time() {
        let mut event = serde_json::json!({
            "reason": "Nominated", "message": "Pod should schedule on: nodeclaim/c1",
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-1"},
            "firstTimestamp": "2026-01-01T00:00:05Z", "lastTimestamp": "2026-01-01T00:00:05Z", "count": 1
        });
        let once = of_event_all(&event);
        assert_eq!(once.len(), 1, "lastTimestamp equal to the first: one nomination");
        event["lastTimestamp"] = "2026-01-01T00:00:41Z".into();
        event["count"] = 2.into();
        let twice = of_event_all(&event);
        assert_eq!(twice.len(), 2);
        assert_eq!(twice[1].at - twice[0].at, Duration::from_secs(36));
        assert_eq!(twice[1].node_claim.as_deref(), Some("c1"));
    }
}
