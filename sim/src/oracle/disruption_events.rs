//! What Karpenter's disruption Events on NodeClaims say: which NodeClaims it launched as
//! replacements, and which it started terminating for which reason.
//!
//! After tainting a command's candidates the orchestration queue creates each replacement
//! and records a `DisruptionLaunching` Event "Launching NodeClaim: <Reason>" on it (core
//! `pkg/controllers/disruption/queue.go:217`, `pkg/controllers/disruption/events/events.go:31`
//! `Launching`): the only outside trace telling a replace command from a delete. A
//! `DisruptionTerminating` Event "Disrupting NodeClaim: <Reason>" (`events.go:51`
//! `Terminating`) names the reason a NodeClaim is being disrupted for.

use std::time::Duration;

use serde_json::Value;

use super::timestamp::sim_time;

/// The Event reason of a replacement launch.
pub const LAUNCHING_REASON: &str = "DisruptionLaunching";
/// The Event reason of a disruption that deletes a NodeClaim.
pub const TERMINATING_REASON: &str = "DisruptionTerminating";

/// One disruption Event on a NodeClaim.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DisruptionEvent {
    /// When the Event was first written.
    pub at: Duration,
    /// The NodeClaim.
    pub node_claim: String,
    /// [`LAUNCHING_REASON`] or [`TERMINATING_REASON`].
    pub reason: String,
    /// The message (`Launching NodeClaim: Underutilized`, `Disrupting NodeClaim: Expired`).
    pub message: String,
    /// The Event's `metadata.resourceVersion` as last written: the API server's order of
    /// writes, finer than `at` (Event timestamps have one-second resolution), so two
    /// disruptions started within one second can be told apart.
    pub resource_version: u64,
}

impl DisruptionEvent {
    /// A replacement launch.
    pub fn is_launch(&self) -> bool {
        self.reason == LAUNCHING_REASON
    }

    /// The disruption reason after the message's colon (`Expired`), up to a `/` or a space.
    pub fn disruption_reason(&self) -> Option<&str> {
        self.message.split_once(':')?.1.trim_start().split(['/', ' ']).next().filter(|w| !w.is_empty())
    }
}

/// The disruption Event an Event is, if it is one on a NodeClaim.
pub fn of_event(event: &Value) -> Option<DisruptionEvent> {
    let reason = event["reason"].as_str()?;
    if (reason != LAUNCHING_REASON && reason != TERMINATING_REASON)
        || event.pointer("/involvedObject/kind").and_then(Value::as_str) != Some("NodeClaim")
    {
        return None;
    }
    Some(DisruptionEvent {
        at: sim_time(&event["firstTimestamp"]).or_else(|| sim_time(&event["eventTime"]))?,
        node_claim: event["involvedObject"]["name"].as_str()?.to_string(),
        reason: reason.to_string(),
        message: event["message"].as_str().unwrap_or_default().to_string(),
        resource_version: event
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_disruption_events_on_nodeclaims_count() {
        let event = |reason: &str, kind: &str, message: &str| {
            serde_json::json!({
                "reason": reason, "message": message,
                "involvedObject": {"kind": kind, "name": "default-x"},
                "metadata": {"resourceVersion": "42"},
                "firstTimestamp": "2026-01-01T00:00:05Z"
            })
        };
        assert!(of_event(&event("Nominated", "NodeClaim", "x")).is_none());
        assert!(of_event(&event("DisruptionLaunching", "Node", "x")).is_none());
        let l = of_event(&event("DisruptionLaunching", "NodeClaim", "Launching NodeClaim: Underutilized/delete"))
            .expect("a launch");
        assert!(l.is_launch());
        assert_eq!((l.node_claim.as_str(), l.disruption_reason()), ("default-x", Some("Underutilized")));
        let t = of_event(&event("DisruptionTerminating", "NodeClaim", "Disrupting NodeClaim: Expired")).expect("one");
        assert!(!t.is_launch());
        assert_eq!(t.disruption_reason(), Some("Expired"));
        assert_eq!(t.resource_version, 42);
    }
}
