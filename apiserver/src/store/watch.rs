//! Watches: the bounded history a watch can resume from (older versions are compacted
//! and answer 410), the fan-out to live watchers, and expiring every watch (a fault hook).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use super::events::{Event, EventType, Matcher, WatchMsg, WatchStart, WatchStream, Watcher, translate};
use super::objects::Store;
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use dovetail_world::trace::TraceEntry;

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

fn obj_rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}
