//! Watches: the events a commit produces, the bounded history a watch can resume from,
//! and the fan-out to live watchers, translated for each watcher's selector.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{ObjRef, Store};
use crate::error::{ApiError, ApiResult};
use crate::resources::{ResourceKey, ResourceType};
use dovetail_world::trace::TraceEntry;

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
    key: ResourceKey,
    namespace: Option<String>,
    matcher: Matcher,
    tx: mpsc::UnboundedSender<WatchMsg>,
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

impl Store {
    pub(super) fn publish(&mut self, event: Event) {
        let event = Arc::new(event);
        self.watchers.retain(|w| {
            if w.key != event.obj.key || w.namespace.as_deref().is_some_and(|n| n != event.obj.namespace) {
                return !w.tx.is_closed();
            }
            match translate(&event, &w.matcher) {
                Some(msg) => w.tx.send(msg).is_ok(),
                None => !w.tx.is_closed(),
            }
        });
        self.history.push_back(event);
        while self.history.len() > self.config.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
    }

    /// Starts a watch. Fails with 410 when `After(rv)` is older than the history.
    pub fn watch(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        matcher: Matcher,
        start: WatchStart,
    ) -> ApiResult<WatchStream> {
        let key = rt.key();
        let mut initial = Vec::new();
        match start {
            WatchStart::Current => {
                for obj in self.iter(&key, namespace) {
                    if matcher(obj) {
                        let rv = obj_rv(obj);
                        initial.push(WatchMsg::Event(EventType::Added, obj.clone(), rv));
                    }
                }
            }
            WatchStart::After(rv) => {
                if rv < self.compacted_rv {
                    return Err(ApiError::gone(format!("too old resource version: {rv} ({})", self.compacted_rv + 1)));
                }
                for ev in self.history.iter().filter(|e| e.rv > rv && e.obj.key == key) {
                    if namespace.is_some_and(|n| n != ev.obj.namespace) {
                        continue;
                    }
                    if let Some(msg) = translate(ev, &matcher) {
                        initial.push(msg);
                    }
                }
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.watchers.push(Watcher { key, namespace: namespace.map(String::from), matcher, tx });
        Ok(WatchStream { initial, rx, rv: self.rv })
    }

    /// Number of open watches (closed ones are reaped on the next event).
    pub fn watch_count(&self) -> usize {
        self.watchers.iter().filter(|w| !w.tx.is_closed()).count()
    }

    /// Fault hook: forget all history up to now and end every watch with 410 Gone, as
    /// after an etcd compaction and watch-cache reset. Clients must relist.
    pub fn expire_watches(&mut self) {
        self.compacted_rv = self.rv;
        self.history.clear();
        for w in self.watchers.drain(..) {
            let _ = w.tx.send(WatchMsg::Expired(format!("too old resource version: {0} ({0})", self.rv)));
        }
        self.trace.record(TraceEntry {
            at: self.clock.elapsed(),
            source: "fault",
            verb: "expire".into(),
            subject: format!("watches rv={}", self.rv),
        });
    }
}

/// Translates a committed event for one watcher's selector: objects entering the
/// selection appear as ADDED, leaving as DELETED, as the real watch cache does.
fn translate(ev: &Event, matcher: &Matcher) -> Option<WatchMsg> {
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

fn obj_rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}
