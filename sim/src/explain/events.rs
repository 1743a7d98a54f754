//! The Karpenter Events `explain` reads, indexed by the object they are about.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::apiserver::store::Store;
use crate::oracle::timestamp::sim_time;
use crate::oracle::view::key;

/// One Event, reduced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenEvent {
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
    /// When it last happened (`lastTimestamp`, else `firstTimestamp`/`eventTime`).
    pub last: Duration,
    /// When it first happened.
    pub first: Duration,
}

/// Events by (involved kind, namespace/name), oldest first.
#[derive(Clone, Debug, Default)]
pub struct EventIndex {
    by_object: BTreeMap<(String, String), Vec<SeenEvent>>,
}

impl EventIndex {
    /// Every Event in `store`.
    pub fn read(store: &Store) -> Self {
        let mut index = Self::default();
        for event in store.iter(&key("", "events"), None) {
            let involved = &event["involvedObject"];
            let kind = involved["kind"].as_str().unwrap_or_default().to_string();
            let object = object_key(involved["namespace"].as_str(), involved["name"].as_str().unwrap_or_default());
            let first = sim_time(&event["firstTimestamp"]).or_else(|| sim_time(&event["eventTime"]));
            let Some(first) = first else { continue };
            let last = sim_time(&event["lastTimestamp"]).unwrap_or(first).max(first);
            index.by_object.entry((kind, object)).or_default().push(SeenEvent {
                reason: text(event, "reason"),
                message: text(event, "message"),
                last,
                first,
            });
        }
        for events in index.by_object.values_mut() {
            events.sort_by(|a, b| (a.last, &a.reason, &a.message).cmp(&(b.last, &b.reason, &b.message)));
        }
        index
    }

    /// The events about one object, oldest first.
    pub fn about(&self, kind: &str, object: &str) -> &[SeenEvent] {
        self.by_object.get(&(kind.to_string(), object.to_string())).map(Vec::as_slice).unwrap_or_default()
    }

    /// The latest event with one of `reasons` about one object that happened at or before
    /// `now` and no longer ago than `within`.
    pub fn latest(
        &self,
        kind: &str,
        object: &str,
        reasons: &[&str],
        now: Duration,
        within: Duration,
    ) -> Option<&SeenEvent> {
        self.about(kind, object)
            .iter()
            .rev()
            .filter(|e| e.last <= now)
            .find(|e| reasons.contains(&e.reason.as_str()))
            .filter(|e| now.saturating_sub(e.last) <= within)
    }

    /// Every event with `reason`, about objects of `kind`, at or before `now`: (object, event).
    pub fn all(&self, kind: &str, reason: &str, now: Duration) -> Vec<(&str, &SeenEvent)> {
        let mut found: Vec<(&str, &SeenEvent)> = self
            .by_object
            .iter()
            .filter(|((k, _), _)| k == kind)
            .flat_map(|((_, object), events)| events.iter().map(move |e| (object.as_str(), e)))
            .filter(|(_, e)| e.reason == reason && e.first <= now)
            .collect();
        found.sort_by(|a, b| (a.1.first, a.0).cmp(&(b.1.first, b.0)));
        found
    }
}

/// `namespace/name` for namespaced objects, `name` for cluster-scoped ones.
pub fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace.filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

fn text(event: &Value, field: &str) -> String {
    event[field].as_str().unwrap_or_default().to_string()
}
