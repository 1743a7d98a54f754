//! Delivers the controller's [`Event`]s as `core/v1` Events, the way client-go's event
//! broadcaster does: the same event about the same object within [`DEDUPE_WINDOW`] bumps the
//! existing Event's `count` and `lastTimestamp` with a patch instead of creating another object,
//! so a pod that fails to schedule every 10 s yields one Event with a rising count rather than
//! hundreds of objects. Timestamps and the window come from the injected [`Clock`], so the
//! simulator's Events carry simulated time.
//!
//! [`Clock`]: super::Clock

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSource};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use super::clock::{SharedClock, elapsed};
use super::events::{Event, EventRecorder};

/// How long after an Event was last written the same event still counts as a repeat.
pub const DEDUPE_WINDOW: Duration = Duration::from_secs(5 * 60);

/// The most distinct events remembered for dedupe (client-go's `maxLruCacheEntries`); beyond
/// it the least recently seen is forgotten, so memory stays bounded under event storms.
pub const DEDUPE_ENTRIES_MAX: usize = 4096;

/// Attempts per Event write when the API server is unreachable; Events are best-effort, so
/// after these the event is dropped with a warning rather than blocking later ones for long.
pub const WRITE_ATTEMPTS_MAX: u32 = 3;

/// Pause between write attempts.
const WRITE_RETRY_DELAY: Duration = Duration::from_secs(1);

/// `source.component` and `reportingComponent` of every Event (Karpenter's).
pub const COMPONENT: &str = "karpenter";

/// What makes two events "the same": the object and everything shown to the user.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    type_: &'static str,
    reason: String,
    message: String,
}

impl Key {
    fn of(event: &Event) -> Self {
        let involved = &event.involved;
        Self {
            kind: involved.kind.clone().unwrap_or_default(),
            namespace: involved.namespace.clone().unwrap_or_default(),
            name: involved.name.clone().unwrap_or_default(),
            uid: involved.uid.clone().unwrap_or_default(),
            type_: event.type_.as_str(),
            reason: event.reason.clone(),
            message: event.message.clone(),
        }
    }
}

/// The Event object last written for a key.
#[derive(Clone, Debug)]
struct Written {
    namespace: String,
    name: String,
    count: i32,
    last: jiff::Timestamp,
}

/// What [`EventWriter::write`] did with one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A new Event object `namespace/name`.
    Created {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// An existing Event's count was raised to `count`.
    Bumped {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The new count.
        count: i32,
    },
}

/// Writes published events to the API server, deduplicating repeats.
pub struct EventWriter {
    client: kube::Client,
    clock: SharedClock,
    instance: String,
    written: BTreeMap<Key, Written>,
}

impl std::fmt::Debug for EventWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventWriter")
            .field("instance", &self.instance)
            .field("remembered", &self.written.len())
            .finish()
    }
}

impl EventWriter {
    /// A writer whose Events name `instance` (the replica's identity) as `reportingInstance`
    /// and `source.host`.
    pub fn new(client: kube::Client, clock: SharedClock, instance: impl Into<String>) -> Self {
        Self { client, clock, instance: instance.into(), written: BTreeMap::new() }
    }

    /// Drains `recorder` forever, writing each event in publication order. Failed writes are
    /// retried [`WRITE_ATTEMPTS_MAX`] times, then logged and dropped.
    pub async fn run(mut self, recorder: EventRecorder) {
        loop {
            for event in recorder.drain() {
                self.write_with_retries(&event).await;
            }
            recorder.published().await;
        }
    }

    async fn write_with_retries(&mut self, event: &Event) {
        for attempt in 1..=WRITE_ATTEMPTS_MAX {
            match self.write(event).await {
                Ok(_) => return,
                // The API server rejected it: retrying the same request cannot help.
                Err(kube::Error::Api(status)) => {
                    tracing::warn!(reason = %event.reason, code = status.code, "dropping event: {}", status.message);
                    return;
                }
                Err(e) if attempt == WRITE_ATTEMPTS_MAX => {
                    tracing::warn!(reason = %event.reason, "dropping event after {attempt} attempts: {e}");
                }
                Err(e) => {
                    tracing::debug!(reason = %event.reason, "event write failed, retrying: {e}");
                    tokio::time::sleep(WRITE_RETRY_DELAY).await;
                }
            }
        }
    }

    /// Writes one event: patches the Event written for the same object, type, reason and
    /// message within [`DEDUPE_WINDOW`], and creates a new Event otherwise (also when that
    /// Event has meanwhile expired from the API server).
    ///
    /// # Errors
    /// The API server's error for the patch or create.
    pub async fn write(&mut self, event: &Event) -> Result<Outcome, kube::Error> {
        let now = self.clock.now();
        self.forget_older_than(now);
        let key = Key::of(event);
        if let Some(seen) = self.written.get(&key).cloned() {
            let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), &seen.namespace);
            let count = seen.count.saturating_add(1);
            let patch = serde_json::json!({"count": count, "lastTimestamp": Time(now)});
            match api.patch(&seen.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {
                    self.written.insert(key, Written { count, last: now, ..seen.clone() });
                    return Ok(Outcome::Bumped { namespace: seen.namespace, name: seen.name, count });
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    self.written.remove(&key);
                }
                Err(e) => return Err(e),
            }
        }
        self.create(key, event, now).await
    }

    async fn create(&mut self, key: Key, event: &Event, now: jiff::Timestamp) -> Result<Outcome, kube::Error> {
        // Cluster-scoped objects' Events live in `default`, as client-go puts them.
        let namespace =
            event.involved.namespace.clone().filter(|ns| !ns.is_empty()).unwrap_or_else(|| "default".into());
        let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), &namespace);
        let object_name = event.involved.name.clone().unwrap_or_else(|| "unknown".into());
        // client-go names Events `<object>.<unix nanos in hex>`; two events in the same
        // nanosecond collide, so a bounded suffix resolves the 409.
        let base = format!("{object_name}.{:x}", now.as_nanosecond());
        for suffix in 0..8u32 {
            let name = if suffix == 0 { base.clone() } else { format!("{base}{suffix}") };
            let object = CoreEvent {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.clone()),
                    ..ObjectMeta::default()
                },
                involved_object: event.involved.clone(),
                type_: Some(event.type_.as_str().into()),
                reason: Some(event.reason.clone()),
                message: Some(event.message.clone()),
                source: Some(EventSource { component: Some(COMPONENT.into()), host: Some(self.instance.clone()) }),
                reporting_component: Some(COMPONENT.into()),
                reporting_instance: Some(self.instance.clone()),
                first_timestamp: Some(Time(now)),
                last_timestamp: Some(Time(now)),
                count: Some(1),
                ..CoreEvent::default()
            };
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => {
                    self.written
                        .insert(key, Written { namespace: namespace.clone(), name: name.clone(), count: 1, last: now });
                    return Ok(Outcome::Created { namespace, name });
                }
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(e) => return Err(e),
            }
        }
        Err(kube::Error::Api(
            kube::core::Status::failure(&format!("event names {base}..{base}7 all exist"), "AlreadyExists")
                .with_code(409)
                .boxed(),
        ))
    }

    /// Forgets events not repeated within the window, and the least recently seen beyond
    /// [`DEDUPE_ENTRIES_MAX`].
    fn forget_older_than(&mut self, now: jiff::Timestamp) {
        self.written.retain(|_, seen| elapsed(seen.last, now) < DEDUPE_WINDOW);
        while self.written.len() >= DEDUPE_ENTRIES_MAX {
            let oldest = self.written.iter().min_by_key(|(_, seen)| seen.last).map(|(key, _)| key.clone());
            match oldest {
                Some(key) => self.written.remove(&key),
                None => break,
            };
        }
    }
}
