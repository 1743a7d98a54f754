//! Garbage collection through ownerReferences, as the GC controller does it: the
//! uid and dependents indexes, background and foreground deletion of dependents, and
//! orphaning.

use std::sync::Arc;

use serde_json::Value;

use super::metadata::{set_finalizers, string_set};
use super::object_ref::ObjRef;
use super::objects::Store;
use super::options::{DeleteOptions, Propagation};
use crate::resources::ResourceKey;

impl Store {
    /// A dependent of a removed owner: delete it when none of its owners remain.
    pub(super) fn collect_dependent(&mut self, d: &ObjRef) {
        let Some(obj) = self.get_ref(d) else { return };
        if owners_all_missing(self, &obj)
            && let Some(rt) = self.registry.by_key(&d.key)
        {
            let _ = self.delete(&rt, &d.namespace, &d.name, &DeleteOptions::default());
        }
    }

    pub(super) fn delete_dependents(&mut self, owner: &Value) {
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
    pub(super) fn release_foreground_owners(&mut self, removed_or_owner: &Value) {
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

    pub(super) fn orphan_dependents(&mut self, owner_uid: &str) {
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

    /// Objects of type `key` (in `namespace`, or in all) that name `owner_uid` in an
    /// ownerReference, in (namespace, name) order: the same objects, in the same order, as
    /// filtering [`Store::iter`] by owner, read from the dependents index the garbage
    /// collector keeps anyway, so a workload controller finds its pods without scanning
    /// every pod.
    pub fn dependents_of<'a>(
        &'a self,
        owner_uid: &str,
        key: &'a ResourceKey,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        // The type's objects are looked up once, and each dependent through one reused
        // (namespace, name) key rather than two fresh strings per dependent: controllers
        // call this for every owner on every pass.
        let objects = self.objects.get(key);
        let mut probe = (String::new(), String::new());
        self.dependents
            .get(owner_uid)
            .into_iter()
            .flatten()
            .filter(move |r| &r.key == key && namespace.is_none_or(|n| n == r.namespace))
            .filter_map(move |r| {
                probe.0.clear();
                probe.0.push_str(&r.namespace);
                probe.1.clear();
                probe.1.push_str(&r.name);
                objects?.get(&probe)
            })
            .map(|s| &s.obj)
    }

    /// Which state the dependents of `owner_uid` are in: the resourceVersion of the last
    /// write that added, changed or removed an object with an ownerReference to it, or
    /// `None` while it has no dependents. Every mutation takes a new resourceVersion, so
    /// while this answer is unchanged every object [`Store::dependents_of`] yields for the
    /// owner is unchanged too: a controller may keep what it computed from them (the
    /// ReplicaSet's pod counts) instead of walking them again on every pass.
    pub fn dependents_version(&self, owner_uid: &str) -> Option<u64> {
        self.dependents_rv.get(owner_uid).copied()
    }

    pub(super) fn has_dependents(&self, obj: &Value) -> bool {
        obj["metadata"]["uid"].as_str().and_then(|u| self.dependents.get(u)).is_some_and(|d| !d.is_empty())
    }

    pub(super) fn index(&mut self, r: &ObjRef, obj: &Value) {
        if let Some(uid) = obj["metadata"]["uid"].as_str() {
            self.uids.insert(uid.to_string(), r.clone());
        }
        for owner in owner_uids(obj) {
            self.dependents_rv.insert(owner.clone(), self.rv);
            self.dependents.entry(owner).or_default().insert(r.clone());
        }
    }

    /// Drops `obj` (stored at `r`) from the uid and dependents indexes.
    pub(super) fn unindex(&mut self, r: &ObjRef, obj: &Value) {
        if let Some(uid) = obj["metadata"]["uid"].as_str() {
            self.uids.remove(uid);
        }
        for owner in owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(r);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                    self.dependents_rv.remove(&owner);
                } else {
                    self.dependents_rv.insert(owner, self.rv);
                }
            }
        }
    }
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|o| o["uid"].as_str().map(String::from)).collect())
        .unwrap_or_default()
}

pub(super) fn owners_all_missing(store: &Store, obj: &Value) -> bool {
    let owners = owner_uids(obj);
    !owners.is_empty() && owners.iter().all(|u| !store.uids.contains_key(u))
}
