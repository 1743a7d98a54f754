//! Kubernetes events the controller emits (on pods, nodes, NodeClaims, NodePools), as Karpenter
//! does. Controllers call [`EventRecorder::publish`], which never blocks or fails; a writer task
//! ([`EventWriter::run`]) turns them into `core/v1` Events. kube-runtime's `Recorder` is
//! not used because it reads the wall clock and dedupes in a HashMap.

use std::sync::{Arc, Mutex};

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
}

impl Event {
    /// An event about `object`.
    pub fn about<K: Resource<DynamicType = ()>>(
        object: &K,
        type_: EventType,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self { involved: object.object_ref(&()), type_, reason: reason.into(), message: message.into() }
    }
}

/// The sink controllers publish events to. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct EventRecorder {
    queue: Arc<Mutex<Vec<Event>>>,
    notify: Arc<tokio::sync::Notify>,
}

impl EventRecorder {
    /// A recorder with an empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues an event; the writer task delivers it.
    pub fn publish(&self, event: Event) {
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
