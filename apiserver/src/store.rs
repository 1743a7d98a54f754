//! The object store: what etcd plus the generic registry do in a real API server.
//!
//! One global resourceVersion counter orders every mutation; each mutation appends a
//! watch event to a bounded history (older versions are "compacted" and answer 410) and
//! fans out to live watchers. Deletion honours finalizers and pod grace periods, and
//! removal garbage-collects dependents through ownerReferences. Every mutation is
//! recorded in the run's trace.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::admission;
use super::error::{ApiError, ApiResult};
use super::resources::{Registry, ResourceKey, ResourceType};
use dovetail_world::clock::Clock;
use dovetail_world::rng::SimRng;
use dovetail_world::trace::{Trace, TraceEntry};

/// Namespaces every cluster starts with.
pub const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Options of a create or update.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Validate and default only; store nothing (`dryRun=All`).
    pub dry_run: bool,
    /// Reject unknown fields instead of dropping them (`fieldValidation=Strict`).
    pub strict: bool,
}

/// Where an object lives: resource type, namespace ("" if cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjRef {
    /// Resource type.
    pub key: ResourceKey,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.key, self.name)
        } else {
            write!(f, "{} {}/{}", self.key, self.namespace, self.name)
        }
    }
}

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

struct Watcher {
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

/// Options of a delete request (`metav1.DeleteOptions`).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// Grace period override; pods default to `spec.terminationGracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `Orphan`, `Background` (default) or `Foreground`.
    pub propagation: Propagation,
    /// Only delete if the uid matches.
    pub precondition_uid: Option<String>,
    /// Only delete if the resourceVersion matches.
    pub precondition_rv: Option<String>,
    /// Validate only; change nothing.
    pub dry_run: bool,
}

/// Dependent handling on delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the owner now, dependents in the background.
    #[default]
    Background,
    /// Delete dependents first; the owner waits on the `foregroundDeletion` finalizer.
    Foreground,
    /// Keep dependents; drop their ownerReferences.
    Orphan,
}

/// Which part of an object an update writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The main resource: spec and metadata (status is kept for types with a status
    /// subresource).
    Main,
    /// The status subresource: only status changes.
    Status,
}

/// A page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// Matching objects, in (namespace, name) order.
    pub items: Vec<Arc<Value>>,
    /// The list's resourceVersion.
    pub rv: u64,
    /// Token for the next page, if any.
    pub continue_token: Option<String>,
    /// Objects left after this page.
    pub remaining: Option<usize>,
}

#[derive(Clone, Debug)]
struct Stored {
    obj: Arc<Value>,
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
    registry: Registry,
    objects: BTreeMap<ResourceKey, BTreeMap<(String, String), Stored>>,
    rv: u64,
    history: VecDeque<Arc<Event>>,
    compacted_rv: u64,
    config: StoreConfig,
    watchers: Vec<Watcher>,
    /// owner uid -> dependents.
    dependents: BTreeMap<String, BTreeSet<ObjRef>>,
    uids: BTreeMap<String, ObjRef>,
    clock: Clock,
    rng: SimRng,
    trace: Trace,
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

    /// Lists objects with optional pagination.
    pub fn list(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        matcher: Option<&Matcher>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> ApiResult<ListPage> {
        let (list_rv, start_after) = match continue_token {
            Some(tok) => {
                let (rv, ns, name) = decode_continue(tok)?;
                if rv < self.compacted_rv {
                    return Err(ApiError::gone(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    ));
                }
                (rv, Some((ns, name)))
            }
            None => (self.rv, None),
        };
        let mut items = Vec::new();
        let mut continue_out = None;
        let mut remaining = None;
        if let Some(objs) = self.objects.get(&rt.key()) {
            use std::ops::Bound;
            let lower = match &start_after {
                Some(k) => Bound::Excluded(k.clone()),
                None => Bound::Unbounded,
            };
            let mut it = objs
                .range((lower, Bound::Unbounded))
                .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
                .filter(|(_, s)| matcher.is_none_or(|m| m(&s.obj)));
            for ((ns, name), s) in it.by_ref() {
                items.push(s.obj.clone());
                if limit.is_some_and(|l| items.len() >= l) {
                    continue_out = Some(encode_continue(list_rv, ns, name));
                    break;
                }
            }
            if continue_out.is_some() {
                let left = it.count();
                if left == 0 {
                    continue_out = None;
                } else {
                    remaining = Some(left);
                }
            }
        }
        Ok(ListPage { items, rv: list_rv, continue_token: continue_out, remaining })
    }

    /// Creates an object. The server sets uid, creationTimestamp, resourceVersion and
    /// generation, and fills generateName.
    pub fn create(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        mut obj: Value,
        opts: WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the body of the request was not a JSON object"));
        }
        set_type_meta(&mut obj, rt);
        let meta = metadata_mut(&mut obj);
        if rt.namespaced {
            match meta.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() && ns != namespace => {
                    return Err(ApiError::bad_request(format!(
                        "the namespace of the provided object does not match the namespace sent on the request ({ns} != {namespace})"
                    )));
                }
                _ => {
                    meta.insert("namespace".into(), json!(namespace));
                }
            }
        } else {
            meta.remove("namespace");
        }
        let mut name = meta.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        if name.is_empty() {
            match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    name = format!("{prefix}{}", random_suffix(&mut self.rng));
                    meta.insert("name".into(), json!(name));
                }
                _ => {
                    return Err(ApiError::invalid(
                        &rt.kind,
                        &rt.group,
                        "",
                        &[(
                            "FieldValueRequired".into(),
                            "metadata.name".into(),
                            "Required value: name or generateName is required".into(),
                        )],
                    ));
                }
            }
        }
        if rt.namespaced && !self.namespace_exists(namespace) {
            return Err(ApiError::not_found("namespaces", "", namespace));
        }
        if rt.namespaced && self.namespace_terminating(namespace) {
            return Err(ApiError::forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                rt.group_resource()
            )));
        }
        if self.get(rt, namespace, &name).is_ok() {
            return Err(ApiError::already_exists(&rt.plural, &rt.group, &name));
        }
        for k in ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
            meta.remove(k);
        }
        meta.insert("uid".into(), json!(random_uid(&mut self.rng)));
        meta.insert("creationTimestamp".into(), json!(self.clock.now_rfc3339()));
        if rt.has_spec {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        admission::admit_create(self, rt, &mut obj, opts.strict)?;
        if opts.dry_run {
            return Ok(Arc::new(obj));
        }
        if rt.custom && rt.status_subresource {
            // A create through the main resource cannot set status (it is reset).
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
        let r = ObjRef { key: rt.key(), namespace: namespace.to_string(), name: name.clone() };
        let stored = self.commit(r.clone(), obj, None, "create");
        admission::after_commit(self, rt, &stored, None);
        // A dependent whose owners are all gone is garbage (as the GC controller decides).
        if owners_all_missing(self, &stored) {
            let _ = self.delete(rt, &r.namespace, &r.name, &DeleteOptions::default());
        }
        Ok(stored)
    }

    /// Replaces an object (PUT), honouring optimistic concurrency when the body carries a
    /// resourceVersion.
    pub fn update(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        mut obj: Value,
        part: Part,
        opts: WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the body of the request was not a JSON object"));
        }
        let old = self.get(rt, namespace, name)?;
        set_type_meta(&mut obj, rt);
        let body_name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if let Some(rv) = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str)
            && !rv.is_empty()
            && old["metadata"]["resourceVersion"].as_str() != Some(rv)
        {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        let mut new = match part {
            Part::Status => {
                // Only status changes through the status subresource.
                let mut n = (*old).clone();
                n["status"] = obj.get("status").cloned().unwrap_or(Value::Null);
                if n["status"].is_null() {
                    n.as_object_mut().map(|m| m.remove("status"));
                }
                n
            }
            Part::Main => {
                if rt.status_subresource {
                    match old.get("status") {
                        Some(s) => obj["status"] = s.clone(),
                        None => {
                            obj.as_object_mut().map(|m| m.remove("status"));
                        }
                    }
                }
                obj
            }
        };
        // Fields the server owns.
        {
            let old_meta = old["metadata"].as_object().cloned().unwrap_or_default();
            let meta = metadata_mut(&mut new);
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
            ] {
                match old_meta.get(k) {
                    Some(v) => meta.insert(k.into(), v.clone()),
                    None => meta.remove(k),
                };
            }
            meta.insert("name".into(), json!(name));
            if old_meta.contains_key("deletionTimestamp") {
                let old_f = string_set(old_meta.get("finalizers"));
                let new_f = string_set(meta.get("finalizers"));
                if let Some(added) = new_f.difference(&old_f).next() {
                    return Err(ApiError::invalid(
                        &rt.kind,
                        &rt.group,
                        name,
                        &[(
                            "FieldValueForbidden".into(),
                            "metadata.finalizers".into(),
                            format!(
                                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{\"{added}\"}}"
                            ),
                        )],
                    ));
                }
            }
        }
        if rt.has_spec && part == Part::Main && spec_changed(&old, &new) {
            let g = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            new["metadata"]["generation"] = json!(g);
        }
        admission::admit_update(self, rt, &mut new, &old, part, opts.strict)?;
        if opts.dry_run {
            return Ok(Arc::new(new));
        }
        if strip_rv(&new) == strip_rv(&old) {
            // A no-op write does not bump the resourceVersion or notify watchers.
            return Ok(old);
        }
        let r = ObjRef { key: rt.key(), namespace: namespace.to_string(), name: name.to_string() };
        let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
        let no_finalizers = string_set(new.pointer("/metadata/finalizers")).is_empty();
        let pod_waiting = is_pod_in_grace(rt, &new);
        let stored =
            self.commit(r.clone(), new, Some(old.clone()), if part == Part::Status { "status" } else { "update" });
        admission::after_commit(self, rt, &stored, Some(&old));
        if deleting && no_finalizers && !pod_waiting {
            self.remove(&r, Propagation::Background);
        }
        Ok(stored)
    }

    /// Deletes an object: removes it at once, or marks it with a deletionTimestamp while
    /// finalizers or a pod's grace period hold it. Returns the object's last state.
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<Arc<Value>> {
        let old = self.get(rt, namespace, name)?;
        if let Some(uid) = &opts.precondition_uid
            && old["metadata"]["uid"].as_str() != Some(uid.as_str())
        {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    old["metadata"]["uid"].as_str().unwrap_or("")
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && old["metadata"]["resourceVersion"].as_str() != Some(rv.as_str())
        {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    old["metadata"]["resourceVersion"].as_str().unwrap_or("")
                ),
            ));
        }
        if opts.dry_run {
            return Ok(old);
        }
        let r = ObjRef { key: rt.key(), namespace: namespace.to_string(), name: name.to_string() };
        let now = self.clock.elapsed();
        let mut new = (*old).clone();
        let mut finalizers = string_set(new.pointer("/metadata/finalizers"));
        if opts.propagation == Propagation::Foreground && self.has_dependents(&old) {
            finalizers.insert("foregroundDeletion".into());
        }
        let already_deleting = old.pointer("/metadata/deletionTimestamp").is_some();
        if r.key == ns_key() {
            // The namespace controller empties a terminating namespace, then removes it.
            if !already_deleting {
                new["metadata"]["deletionTimestamp"] = json!(self.clock.now_rfc3339());
                new["status"] = json!({"phase": "Terminating"});
                self.commit(r.clone(), new, Some(old.clone()), "delete");
            }
            self.drain_namespace(name);
            return Ok(self.get_ref(&r).unwrap_or(old));
        }
        // Pods: graceful deletion, finished by the kubelet (a delete with grace 0).
        let grace = pod_grace_seconds(rt, &old, opts.grace_period_seconds);
        if grace > 0 {
            let current = old.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
            if current.is_some_and(|c| c <= grace) {
                return Ok(old);
            }
            let at = self.clock.now() + Duration::from_secs(grace as u64);
            new["metadata"]["deletionTimestamp"] = json!(dovetail_world::clock::rfc3339(at));
            new["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
            set_finalizers(&mut new, &finalizers);
            let stored = self.commit(r, new, Some(old), "delete");
            return Ok(stored);
        }
        if !finalizers.is_empty() {
            if !already_deleting {
                new["metadata"]["deletionTimestamp"] =
                    json!(dovetail_world::clock::rfc3339(dovetail_world::clock::sim_epoch() + now));
                new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            } else if new.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) > 0 {
                new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            }
            set_finalizers(&mut new, &finalizers);
            if strip_rv(&new) == strip_rv(&old) {
                return Ok(old);
            }
            let stored = self.commit(r.clone(), new, Some(old), "delete");
            if finalizers.len() == 1 && finalizers.contains("foregroundDeletion") {
                self.delete_dependents(&stored);
            }
            return Ok(stored);
        }
        Ok(self.remove(&r, opts.propagation).unwrap_or(old))
    }

    /// Removes an object for good and garbage-collects what depended on it.
    fn remove(&mut self, r: &ObjRef, propagation: Propagation) -> Option<Arc<Value>> {
        let old = self.objects.get_mut(&r.key)?.remove(&(r.namespace.clone(), r.name.clone()))?;
        self.rv += 1;
        let mut last = (*old.obj).clone();
        last["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let last = Arc::new(last);
        self.unindex(r, &old.obj);
        self.record("delete", r);
        self.publish(Event {
            rv: self.rv,
            obj: r.clone(),
            kind: EventType::Deleted,
            object: last.clone(),
            prev: Some(old.obj.clone()),
        });
        if let Some(rt) = self.registry.by_key(&r.key) {
            admission::after_remove(self, &rt, &last);
        }
        let uid = last["metadata"]["uid"].as_str().unwrap_or("").to_string();
        match propagation {
            Propagation::Orphan => self.orphan_dependents(&uid),
            _ => {
                let deps: Vec<ObjRef> =
                    self.dependents.get(&uid).map(|d| d.iter().cloned().collect()).unwrap_or_default();
                for d in deps {
                    self.collect_dependent(&d);
                }
            }
        }
        self.release_foreground_owners(&last);
        self.finish_namespace(&r.namespace);
        Some(last)
    }

    /// A dependent of a removed owner: delete it when none of its owners remain.
    fn collect_dependent(&mut self, d: &ObjRef) {
        let Some(obj) = self.get_ref(d) else { return };
        if owners_all_missing(self, &obj)
            && let Some(rt) = self.registry.by_key(&d.key)
        {
            let _ = self.delete(&rt, &d.namespace, &d.name, &DeleteOptions::default());
        }
    }

    fn delete_dependents(&mut self, owner: &Value) {
        let uid = owner["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let deps: Vec<ObjRef> = self.dependents.get(&uid).map(|d| d.iter().cloned().collect()).unwrap_or_default();
        for d in deps {
            if let Some(rt) = self.registry.by_key(&d.key) {
                let opts = DeleteOptions { propagation: Propagation::Foreground, ..Default::default() };
                let _ = self.delete(&rt, &d.namespace, &d.name, &opts);
            }
        }
        self.release_foreground_owners(owner);
    }

    /// Owners waiting on `foregroundDeletion` finish once no blocking dependent remains.
    fn release_foreground_owners(&mut self, removed_or_owner: &Value) {
        let mut candidates: Vec<String> = owner_uids(removed_or_owner);
        if let Some(uid) = removed_or_owner["metadata"]["uid"].as_str() {
            candidates.push(uid.to_string());
        }
        for owner_uid in candidates {
            let Some(owner_ref) = self.uids.get(&owner_uid).cloned() else { continue };
            let Some(owner) = self.get_ref(&owner_ref) else { continue };
            let mut f = string_set(owner.pointer("/metadata/finalizers"));
            if owner.pointer("/metadata/deletionTimestamp").is_none() || !f.contains("foregroundDeletion") {
                continue;
            }
            let blocking = self.dependents.get(&owner_uid).is_some_and(|d| !d.is_empty());
            if blocking {
                continue;
            }
            f.remove("foregroundDeletion");
            let mut new = (*owner).clone();
            set_finalizers(&mut new, &f);
            let done = f.is_empty();
            self.commit(owner_ref.clone(), new, Some(owner), "update");
            if done {
                self.remove(&owner_ref, Propagation::Background);
            }
        }
    }

    fn orphan_dependents(&mut self, owner_uid: &str) {
        let deps: Vec<ObjRef> = self.dependents.get(owner_uid).map(|d| d.iter().cloned().collect()).unwrap_or_default();
        for d in deps {
            let Some(obj) = self.get_ref(&d) else { continue };
            let mut new = (*obj).clone();
            if let Some(refs) = new.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
                refs.retain(|o| o["uid"].as_str() != Some(owner_uid));
                if refs.is_empty() {
                    new["metadata"].as_object_mut().map(|m| m.remove("ownerReferences"));
                }
            }
            self.commit(d, new, Some(obj), "orphan");
        }
    }

    fn has_dependents(&self, obj: &Value) -> bool {
        obj["metadata"]["uid"].as_str().and_then(|u| self.dependents.get(u)).is_some_and(|d| !d.is_empty())
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.objects.get(&ns_key()).is_some_and(|m| m.contains_key(&(String::new(), ns.to_string())))
    }

    fn namespace_terminating(&self, ns: &str) -> bool {
        self.objects
            .get(&ns_key())
            .and_then(|m| m.get(&(String::new(), ns.to_string())))
            .is_some_and(|s| s.obj.pointer("/metadata/deletionTimestamp").is_some())
    }

    /// The namespace controller: delete a terminating namespace's content, and the
    /// namespace itself once empty.
    pub(crate) fn drain_namespace(&mut self, ns: &str) {
        let keys: Vec<ResourceKey> = self.registry.iter().filter(|t| t.namespaced).map(|t| t.key()).collect();
        for key in keys {
            let names: Vec<String> = self
                .objects
                .get(&key)
                .map(|m| m.keys().filter(|(n, _)| n == ns).map(|(_, name)| name.clone()).collect())
                .unwrap_or_default();
            let Some(rt) = self.registry.by_key(&key) else { continue };
            for name in names {
                let opts = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
                let _ = self.delete(&rt, ns, &name, &opts);
            }
        }
        self.finish_namespace(ns);
    }

    fn finish_namespace(&mut self, ns: &str) {
        if ns.is_empty() || !self.namespace_terminating(ns) {
            return;
        }
        let empty = self.objects.iter().all(|(_, m)| m.keys().all(|(n, _)| n != ns));
        if empty {
            let r = ObjRef { key: ns_key(), namespace: String::new(), name: ns.to_string() };
            self.remove(&r, Propagation::Background);
        }
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
    fn commit(&mut self, r: ObjRef, mut obj: Value, prev: Option<Arc<Value>>, verb: &str) -> Arc<Value> {
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

    fn record(&self, verb: &str, r: &ObjRef) {
        self.trace.record(TraceEntry {
            at: self.clock.elapsed(),
            source: "apiserver",
            verb: verb.to_string(),
            subject: format!("{r} rv={}", self.rv),
        });
    }

    fn index(&mut self, r: &ObjRef, obj: &Value) {
        if let Some(uid) = obj["metadata"]["uid"].as_str() {
            self.uids.insert(uid.to_string(), r.clone());
        }
        for owner in owner_uids(obj) {
            self.dependents.entry(owner).or_default().insert(r.clone());
        }
    }

    /// Drops `obj` (stored at `r`) from the uid and dependents indexes.
    fn unindex(&mut self, r: &ObjRef, obj: &Value) {
        if let Some(uid) = obj["metadata"]["uid"].as_str() {
            self.uids.remove(uid);
        }
        for owner in owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(r);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }

    fn publish(&mut self, event: Event) {
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

    /// The current clock's elapsed time since the epoch.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// A uniformly random number from the store's stream (generateName, uids).
    pub fn random_u64(&mut self) -> u64 {
        self.rng.random()
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

fn ns_key() -> ResourceKey {
    ResourceKey { group: String::new(), plural: "namespaces".into() }
}

fn obj_rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|o| o["uid"].as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn owners_all_missing(store: &Store, obj: &Value) -> bool {
    let owners = owner_uids(obj);
    !owners.is_empty() && owners.iter().all(|u| !store.uids.contains_key(u))
}

fn set_type_meta(obj: &mut Value, rt: &ResourceType) {
    obj["apiVersion"] = json!(rt.api_version());
    obj["kind"] = json!(rt.kind);
}

fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"].as_object_mut().expect("metadata was just made an object")
}

fn string_set(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn set_finalizers(obj: &mut Value, f: &BTreeSet<String>) {
    // Keep the client's order for finalizers that remain, append new ones.
    let mut list: Vec<String> = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).filter(|s| f.contains(s)).collect())
        .unwrap_or_default();
    for x in f {
        if !list.contains(x) {
            list.push(x.clone());
        }
    }
    if list.is_empty() {
        obj["metadata"].as_object_mut().map(|m| m.remove("finalizers"));
    } else {
        obj["metadata"]["finalizers"] = json!(list);
    }
}

fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("status");
        m
    };
    strip(old) != strip(new)
}

fn strip_rv(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v["metadata"].as_object_mut() {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    v
}

fn is_pod_in_grace(rt: &ResourceType, obj: &Value) -> bool {
    rt.group.is_empty()
        && rt.plural == "pods"
        && obj.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) > 0
}

/// The grace period a pod delete gets, as the pod registry decides: unscheduled or
/// finished pods go at once; otherwise the request's or the pod's own period.
fn pod_grace_seconds(rt: &ResourceType, pod: &Value, requested: Option<i64>) -> i64 {
    if !(rt.group.is_empty() && rt.plural == "pods") {
        return 0;
    }
    let unscheduled = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_none_or(str::is_empty);
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
    if unscheduled || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    requested
        .or_else(|| pod.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64))
        .unwrap_or(30)
        .max(0)
}

fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    hex::encode(serde_json::to_vec(&json!({"rv": rv, "ns": ns, "name": name})).unwrap_or_default())
}

fn decode_continue(tok: &str) -> ApiResult<(u64, String, String)> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let bytes = hex::decode(tok).map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok((
        v["rv"].as_u64().ok_or_else(bad)?,
        v["ns"].as_str().ok_or_else(bad)?.to_string(),
        v["name"].as_str().ok_or_else(bad)?.to_string(),
    ))
}

/// Five lowercase alphanumerics, like apiserver's generateName suffix (no vowels, to
/// avoid words).
fn random_suffix(rng: &mut SimRng) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// A version-4-shaped UUID from the seeded stream.
fn random_uid(rng: &mut SimRng) -> String {
    let a: u128 = rng.random();
    let a = (a & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let h = format!("{a:032x}");
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}
