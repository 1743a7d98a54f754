//! What the observation pass's [`super::view::View`] was last read from, kept between
//! readings so a store write re-decodes only the objects it replaced (issue 21: every write
//! re-read the whole store). Every store write replaces the object's `Arc` and each reading
//! is a pure function of the object, so an object whose `Arc` is unchanged reads the same.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// What one Event says to the view, with the Event it was read from.
#[derive(Debug)]
pub(super) struct EventReading {
    /// Held so that its address, the key, is not reused while the reading is kept.
    _event: Arc<Value>,
    pub(super) nominations: Vec<super::nomination::Nomination>,
    pub(super) disruption: Option<super::disruption_events::DisruptionEvent>,
}

impl EventReading {
    pub(super) fn of(event: &Arc<Value>) -> Self {
        Self {
            _event: event.clone(),
            nominations: super::nomination::of_event_all(event),
            disruption: super::disruption_events::of_event(event),
        }
    }
}

/// The store objects a view was last read from. Events are kept by the address of the
/// store's object, each reading holding its `Arc` until the next reading has been built, so
/// an address cannot name another Event; NodeClaims and Nodes by name, with the `Arc` the
/// view's entry was decoded from (compared by identity, [`Arc::ptr_eq`]).
#[derive(Debug, Default)]
pub struct StoreReadings {
    pub(super) events: BTreeMap<usize, EventReading>,
    pub(super) claims: BTreeMap<String, Arc<Value>>,
    pub(super) nodes: BTreeMap<String, Arc<Value>>,
}
