//! What a watcher receives: committed events, their translation for a watcher's
//! selector, and where a watch starts.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use super::object_ref::ObjRef;
use crate::resources::ResourceKey;

/// Watch event type, as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Object created (or entered the watcher's selector).
    Added,
    /// Object changed.
    Modified,
    /// Object removed (or left the watcher's selector).
    Deleted,
}

impl EventType {
    /// Wire name: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed mutation.
#[derive(Clone, Debug)]
pub struct Event {
    /// resourceVersion of the mutation.
    pub rv: u64,
    /// Which object.
    pub obj: ObjRef,
    /// What happened.
    pub kind: EventType,
    /// The object after the mutation (the last state for deletions).
    pub object: Arc<Value>,
    /// The object before the mutation, for selector transitions.
    pub prev: Option<Arc<Value>>,
}

/// Decides whether a watcher or list wants an object (label and field selectors).
pub type Matcher = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// What a watcher receives.
#[derive(Clone, Debug)]
pub enum WatchMsg {
    /// A change to deliver (already translated for the watcher's selector).
    Event(EventType, Arc<Value>, u64),
    /// The server dropped this watch; the client must relist (410).
    Expired(String),
}

pub(super) struct Watcher {
    pub(super) key: ResourceKey,
    pub(super) namespace: Option<String>,
    pub(super) matcher: Matcher,
    pub(super) tx: mpsc::UnboundedSender<WatchMsg>,
}

/// Where a watch starts.
#[derive(Clone, Copy, Debug)]
pub enum WatchStart {
    /// Synthetic ADDED events for the current state, then changes (resourceVersion
    /// unset or "0", or sendInitialEvents=true).
    Current,
    /// Every change after this resourceVersion.
    After(u64),
}

/// A started watch: events to send first, then the live stream.
pub struct WatchStream {
    /// Initial or replayed events, in order.
    pub initial: Vec<WatchMsg>,
    /// Live events.
    pub rx: mpsc::UnboundedReceiver<WatchMsg>,
    /// The resourceVersion the initial part is consistent with.
    pub rv: u64,
}

/// Translates a committed event for one watcher's selector: objects entering the
/// selection appear as ADDED, leaving as DELETED, as the real watch cache does.
pub(super) fn translate(ev: &Event, matcher: &Matcher) -> Option<WatchMsg> {
    let now = ev.kind != EventType::Deleted && matcher(&ev.object);
    let before = ev.prev.as_ref().is_some_and(|p| matcher(p));
    let kind = match (ev.kind, before, now) {
        (EventType::Deleted, true, _) => EventType::Deleted,
        (EventType::Deleted, false, _) => return None,
        (_, false, true) => EventType::Added,
        (_, true, true) => EventType::Modified,
        (_, true, false) => EventType::Deleted,
        (_, false, false) => return None,
    };
    Some(WatchMsg::Event(kind, ev.object.clone(), ev.rv))
}
