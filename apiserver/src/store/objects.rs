//! The [`Store`] itself: its state, reads, and the one commit path every mutation goes
//! through (resourceVersion, ownership index, trace, watch fan-out).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};

use super::events::{Event, EventType, Watcher};
use super::object_ref::ObjRef;
use super::options::{Propagation, WriteOptions};
use crate::error::{ApiError, ApiResult};
use crate::resources::{Registry, ResourceKey, ResourceType};
use dovetail_world::clock::Clock;
use dovetail_world::rng::SimRng;
use dovetail_world::trace::{Trace, TraceEntry};

/// Namespaces every cluster starts with.
pub const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

#[derive(Clone, Debug)]
pub(super) struct Stored {
    pub(super) obj: Arc<Value>,
}

/// Tunables of the store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// How many events the watch history keeps before older resourceVersions answer
    /// 410 Gone. A real API server keeps roughly the last few minutes.
    pub history_limit: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self { history_limit: 10_000 }
    }
}

/// The state of the simulated cluster.
pub struct Store {
    pub(super) registry: Registry,
    pub(super) objects: BTreeMap<ResourceKey, BTreeMap<(String, String), Stored>>,
    pub(super) rv: u64,
    pub(super) history: VecDeque<Arc<Event>>,
    pub(super) compacted_rv: u64,
    pub(super) config: StoreConfig,
    pub(super) watchers: Vec<Watcher>,
    /// owner uid -> dependents.
    pub(super) dependents: BTreeMap<String, BTreeSet<ObjRef>>,
    /// owner uid -> the resourceVersion of the last write that added, changed or removed one
    /// of its dependents (kept while it has any): [`Store::dependents_version`].
    pub(super) dependents_rv: BTreeMap<String, u64>,
    pub(super) uids: BTreeMap<String, ObjRef>,
    pub(super) clock: Clock,
    pub(super) rng: SimRng,
    pub(super) trace: Trace,
}

impl Store {
    /// An empty cluster with the initial namespaces.
    pub fn new(clock: Clock, rng: SimRng, trace: Trace, config: StoreConfig) -> Self {
        let mut s = Self {
            registry: Registry::with_builtins(),
            objects: BTreeMap::new(),
            rv: 0,
            history: VecDeque::new(),
            compacted_rv: 0,
            config,
            watchers: Vec::new(),
            dependents: BTreeMap::new(),
            dependents_rv: BTreeMap::new(),
            uids: BTreeMap::new(),
            clock,
            rng,
            trace,
        };
        let ns_type = s.registry.get("", "namespaces").expect("namespaces is built in");
        for ns in INITIAL_NAMESPACES {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            s.create(&ns_type, "", obj, WriteOptions::default()).expect("initial namespaces are valid");
        }
        s
    }

    /// The served types.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The clock timestamps come from.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// The trace mutations are recorded in.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Number of stored objects of a type.
    pub fn count(&self, key: &ResourceKey) -> usize {
        self.objects.get(key).map_or(0, BTreeMap::len)
    }

    /// Reads one object.
    pub fn get(&self, rt: &ResourceType, namespace: &str, name: &str) -> ApiResult<Arc<Value>> {
        self.objects
            .get(&rt.key())
            .and_then(|m| m.get(&(namespace.to_string(), name.to_string())))
            .map(|s| s.obj.clone())
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))
    }

    /// Reads one object by reference, if present.
    pub fn get_ref(&self, r: &ObjRef) -> Option<Arc<Value>> {
        self.objects.get(&r.key)?.get(&(r.namespace.clone(), r.name.clone())).map(|s| s.obj.clone())
    }

    /// Every object of a type (in a namespace, or all), in (namespace, name) order.
    pub fn iter<'a>(
        &'a self,
        key: &ResourceKey,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        self.objects
            .get(key)
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(move |((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, s)| &s.obj)
    }

    /// Registers a type defined by a CRD (admission calls this).
    pub(crate) fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Deletes every object of a type (its CRD is going away).
    pub(crate) fn purge_type(&mut self, key: &ResourceKey) {
        let refs: Vec<ObjRef> = self
            .objects
            .get(key)
            .map(|m| {
                m.keys().map(|(ns, n)| ObjRef { key: key.clone(), namespace: ns.clone(), name: n.clone() }).collect()
            })
            .unwrap_or_default();
        for r in refs {
            self.remove(&r, Propagation::Background);
        }
    }

    /// Writes an object, bumps the resourceVersion, and notifies watchers.
    pub(super) fn commit(&mut self, r: ObjRef, mut obj: Value, prev: Option<Arc<Value>>, verb: &str) -> Arc<Value> {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let obj = Arc::new(obj);
        if let Some(p) = &prev {
            self.unindex(&r, p);
        }
        self.index(&r, &obj);
        self.objects
            .entry(r.key.clone())
            .or_default()
            .insert((r.namespace.clone(), r.name.clone()), Stored { obj: obj.clone() });
        self.record(verb, &r);
        let kind = if prev.is_some() { EventType::Modified } else { EventType::Added };
        self.publish(Event { rv: self.rv, obj: r, kind, object: obj.clone(), prev });
        obj
    }

    pub(super) fn record(&self, verb: &str, r: &ObjRef) {
        self.trace.record(TraceEntry {
            at: self.clock.elapsed(),
            source: "apiserver",
            verb: verb.to_string(),
            subject: format!("{r} rv={}", self.rv),
        });
    }

    /// The current clock's elapsed time since the epoch.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// A uniformly random number from the store's stream (generateName, uids).
    pub fn random_u64(&mut self) -> u64 {
        self.rng.random()
    }
}
