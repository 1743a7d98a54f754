//! Kubernetes events the controller emits (on pods, nodes, NodeClaims, NodePools), as Karpenter
//! does. Controllers call [`EventRecorder::publish`], which never blocks or fails; a writer task
//! ([`EventWriter::run`]) turns them into `core/v1` Events. kube-runtime's `Recorder` is
//! not used because it reads the wall clock and dedupes in a HashMap.
//!
//! Like Karpenter's recorder (core `pkg/events/recorder.go`), publishing drops an event whose
//! dedupe key (reason + [`Event::dedupe_values`]) was published less than its
//! [`Event::dedupe_timeout`] ago, whatever its message: a node that stays unconsolidatable
//! yields one `Unconsolidatable` event per 15 minutes, not one per disruption poll. Repeats that
//! pass this filter are then counted by the writer as client-go's correlator does.
//!
//! [`EventWriter::run`]: super::event_writer::EventWriter::run

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventType {
    /// Informational.
    Normal,
    /// Something went wrong or was blocked.
    Warning,
}

impl EventType {
    /// The API string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// One event about one object.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The object it is about.
    pub involved: ObjectReference,
    /// Normal or Warning.
    pub type_: EventType,
    /// CamelCase reason (`Nominated`, `DisruptionBlocked`, `FailedDraining`, ...).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// With the reason, what makes two events the same for dedupe (upstream's `DedupeValues`);
    /// empty means never deduped at publication.
    pub dedupe_values: Vec<String>,
    /// How long a published event suppresses the same one (upstream's `DedupeTimeout`).
    pub dedupe_timeout: Duration,
}

/// Karpenter's `defaultDedupeTimeout` (core `pkg/events/recorder.go`).
pub const DEFAULT_DEDUPE_TIMEOUT: Duration = Duration::from_secs(2 * 60);

/// How often expired dedupe entries are swept (go-cache's cleanup interval in core's recorder).
const DEDUPE_SWEEP_INTERVAL: Duration = Duration::from_secs(10);

impl Event {
    /// An event about `object`, deduped by the object's UID for [`DEFAULT_DEDUPE_TIMEOUT`],
    /// which is what almost every upstream event uses (`DedupeValues: []string{string(obj.UID)}`).
    pub fn about<K: Resource<DynamicType = ()>>(
        object: &K,
        type_: EventType,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let involved = object.object_ref(&());
        let identity = identity_of(&involved);
        Self {
            involved,
            type_,
            reason: reason.into(),
            message: message.into(),
            dedupe_values: vec![identity],
            dedupe_timeout: DEFAULT_DEDUPE_TIMEOUT,
        }
    }

    /// Dedupes by the object's name instead of its UID (upstream's termination events:
    /// `DedupeValues: []string{pod.Name}`), so a recreated object of the same name stays quiet.
    #[must_use]
    pub fn deduped_by_name(mut self) -> Self {
        self.dedupe_values = vec![self.involved.name.clone().unwrap_or_default()];
        self
    }

    /// Adds `value` to the dedupe key (e.g. the disruption reason of `DisruptionTerminating`).
    #[must_use]
    pub fn deduped_also_by(mut self, value: impl Into<String>) -> Self {
        self.dedupe_values.push(value.into());
        self
    }

    /// Suppresses repeats for `timeout` instead of [`DEFAULT_DEDUPE_TIMEOUT`].
    #[must_use]
    pub fn deduped_for(mut self, timeout: Duration) -> Self {
        self.dedupe_timeout = timeout;
        self
    }

    /// Never dropped at publication (repeats still become count bumps in the writer).
    #[must_use]
    pub fn never_deduped(mut self) -> Self {
        self.dedupe_values.clear();
        self
    }

    /// Upstream's `dedupeKey()`: the lower-cased reason and the dedupe values.
    fn dedupe_key(&self) -> String {
        format!("{}-{}", self.reason.to_lowercase(), self.dedupe_values.join("-"))
    }
}

/// The UID of `object`, or kind/namespace/name where it has none (objects built in tests), so
/// two objects never share a dedupe key by both lacking a UID.
fn identity_of(object: &ObjectReference) -> String {
    match object.uid.as_deref() {
        Some(uid) if !uid.is_empty() => uid.to_string(),
        _ => format!(
            "{}/{}/{}",
            object.kind.as_deref().unwrap_or_default(),
            object.namespace.as_deref().unwrap_or_default(),
            object.name.as_deref().unwrap_or_default()
        ),
    }
}

/// Dedupe keys published recently, with when each stops suppressing repeats.
#[derive(Debug, Default)]
struct Recent {
    until: BTreeMap<String, Instant>,
    next_sweep: Option<Instant>,
}

impl Recent {
    /// Whether an event with `key` may be published at `now`; records it if so.
    fn admit(&mut self, key: String, timeout: Duration, now: Instant) -> bool {
        if self.next_sweep.is_none_or(|at| now >= at) {
            self.until.retain(|_, until| now < *until);
            self.next_sweep = Some(now + DEDUPE_SWEEP_INTERVAL);
        }
        if self.until.get(&key).is_some_and(|until| now < *until) {
            return false;
        }
        self.until.insert(key, now + timeout);
        true
    }
}

/// The sink controllers publish events to. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct EventRecorder {
    queue: Arc<Mutex<Vec<Event>>>,
    notify: Arc<tokio::sync::Notify>,
    recent: Arc<Mutex<Recent>>,
}

impl EventRecorder {
    /// A recorder with an empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues an event for the writer task, unless the same event (reason and dedupe values)
    /// was published within its dedupe timeout. Dedupe windows are timers, so they run on
    /// `tokio::time`, which the simulator controls.
    pub fn publish(&self, event: Event) {
        if !event.dedupe_values.is_empty() {
            let admitted = self.recent.lock().expect("recent events").admit(
                event.dedupe_key(),
                event.dedupe_timeout,
                Instant::now(),
            );
            if !admitted {
                return;
            }
        }
        tracing::debug!(reason = %event.reason, object = ?event.involved.name, "{}", event.message);
        self.queue.lock().expect("event queue").push(event);
        self.notify.notify_one();
    }

    /// Takes every queued event, oldest first.
    pub fn drain(&self) -> Vec<Event> {
        std::mem::take(&mut *self.queue.lock().expect("event queue"))
    }

    /// Waits until an event is published.
    pub async fn published(&self) {
        self.notify.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::ObjectMeta;

    use super::*;

    fn node(name: &str, uid: &str) -> Node {
        Node {
            metadata: ObjectMeta { name: Some(name.into()), uid: Some(uid.into()), ..ObjectMeta::default() },
            ..Node::default()
        }
    }

    fn reasons(recorder: &EventRecorder) -> Vec<(String, String)> {
        recorder.drain().into_iter().map(|e| (e.reason, e.message)).collect()
    }

    #[test]
    fn a_repeat_within_the_timeout_is_dropped_whatever_its_message() {
        let recorder = EventRecorder::new();
        let a = node("a", "uid-a");
        recorder.publish(Event::about(&a, EventType::Normal, "Unconsolidatable", "first"));
        recorder.publish(Event::about(&a, EventType::Normal, "Unconsolidatable", "second"));
        recorder.publish(Event::about(&node("b", "uid-b"), EventType::Normal, "Unconsolidatable", "first"));
        recorder.publish(Event::about(&a, EventType::Normal, "DisruptionBlocked", "first"));
        assert_eq!(
            reasons(&recorder),
            [
                ("Unconsolidatable".into(), "first".into()),
                ("Unconsolidatable".into(), "first".into()),
                ("DisruptionBlocked".into(), "first".into())
            ]
        );
    }

    #[test]
    fn never_deduped_events_all_go_out() {
        let recorder = EventRecorder::new();
        let a = node("a", "uid-a");
        for _ in 0..3 {
            recorder.publish(Event::about(&a, EventType::Normal, "Nominated", "x").never_deduped());
        }
        assert_eq!(recorder.drain().len(), 3);
    }

    #[test]
    fn extra_dedupe_values_separate_events() {
        let recorder = EventRecorder::new();
        let a = node("a", "uid-a");
        recorder.publish(Event::about(&a, EventType::Normal, "DisruptionTerminating", "x").deduped_also_by("drifted"));
        recorder.publish(Event::about(&a, EventType::Normal, "DisruptionTerminating", "x").deduped_also_by("expired"));
        recorder.publish(Event::about(&a, EventType::Normal, "DisruptionTerminating", "x").deduped_also_by("expired"));
        assert_eq!(recorder.drain().len(), 2);
    }

    #[test]
    fn the_key_is_the_lower_cased_reason_and_the_values() {
        let e =
            Event::about(&node("a", "uid-a"), EventType::Normal, "DisruptionLaunching", "m").deduped_also_by("drifted");
        assert_eq!(e.dedupe_key(), "disruptionlaunching-uid-a-drifted");
        assert_eq!(
            Event::about(&node("a", "u"), EventType::Normal, "Evicted", "m").deduped_by_name().dedupe_key(),
            "evicted-a"
        );
    }

    #[test]
    fn objects_without_uid_do_not_share_a_key() {
        let first = Event::about(&node("a", ""), EventType::Normal, "FailedDraining", "m");
        let second = Event::about(&node("b", ""), EventType::Normal, "FailedDraining", "m");
        assert_ne!(first.dedupe_key(), second.dedupe_key());
    }

    #[test]
    fn a_key_is_admitted_again_once_its_timeout_has_passed() {
        let mut recent = Recent::default();
        let start = Instant::now();
        let timeout = Duration::from_secs(15 * 60);
        assert!(recent.admit("k".into(), timeout, start));
        assert!(!recent.admit("k".into(), timeout, start + Duration::from_secs(14 * 60)));
        // A suppressed repeat does not extend the window (go-cache's Get does not refresh).
        assert!(recent.admit("k".into(), timeout, start + timeout));
        assert!(!recent.admit("k".into(), timeout, start + timeout + Duration::from_secs(1)));
    }

    #[test]
    fn expired_keys_are_swept() {
        let mut recent = Recent::default();
        let start = Instant::now();
        for i in 0..100 {
            recent.admit(format!("k{i}"), Duration::from_secs(60), start);
        }
        recent.admit("later".into(), Duration::from_secs(60), start + Duration::from_secs(61));
        assert_eq!(recent.until.len(), 1);
    }
}
