//! Delete: preconditions, finalizers and pod grace periods decide whether an object is
//! marked with a deletionTimestamp or removed at once; removal starts garbage collection.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::events::{Event, EventType};
use super::metadata::{set_finalizers, string_set, strip_rv};
use super::namespaces::ns_key;
use super::object_ref::ObjRef;
use super::objects::Store;
use super::options::{DeleteOptions, Propagation};
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;

impl Store {
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
        check_preconditions(rt, name, &old, opts)?;
        if opts.dry_run {
            return Ok(old);
        }
        let r = ObjRef { key: rt.key(), namespace: namespace.to_string(), name: name.to_string() };
        let mut finalizers = string_set(old.pointer("/metadata/finalizers"));
        if opts.propagation == Propagation::Foreground && self.has_dependents(&old) {
            finalizers.insert("foregroundDeletion".into());
        }
        if r.key == ns_key() {
            return Ok(self.delete_namespace(&r, old));
        }
        // Pods: graceful deletion, finished by the kubelet (a delete with grace 0).
        let grace = pod_grace_seconds(rt, &old, opts.grace_period_seconds);
        if grace > 0 {
            return Ok(self.start_pod_grace(r, old, grace, &finalizers));
        }
        if !finalizers.is_empty() {
            return Ok(self.mark_deleting(r, old, &finalizers));
        }
        Ok(self.remove(&r, opts.propagation).unwrap_or(old))
    }

    /// The namespace controller empties a terminating namespace, then removes it.
    fn delete_namespace(&mut self, r: &ObjRef, old: Arc<Value>) -> Arc<Value> {
        if old.pointer("/metadata/deletionTimestamp").is_none() {
            let mut new = (*old).clone();
            new["metadata"]["deletionTimestamp"] = json!(self.clock.now_rfc3339());
            new["status"] = json!({"phase": "Terminating"});
            self.commit(r.clone(), new, Some(old.clone()), "delete");
        }
        self.drain_namespace(&r.name);
        self.get_ref(r).unwrap_or(old)
    }

    /// A pod on a node gets a deletionTimestamp `grace` seconds ahead; a shorter period
    /// already running is kept.
    fn start_pod_grace(&mut self, r: ObjRef, old: Arc<Value>, grace: i64, finalizers: &BTreeSet<String>) -> Arc<Value> {
        let current = old.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
        if current.is_some_and(|c| c <= grace) {
            return old;
        }
        let mut new = (*old).clone();
        let at = self.clock.now() + Duration::from_secs(grace as u64);
        new["metadata"]["deletionTimestamp"] = json!(dovetail_world::clock::rfc3339(at));
        new["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        set_finalizers(&mut new, finalizers);
        self.commit(r, new, Some(old), "delete")
    }

    /// Finalizers hold the object: mark it deleted now and wait for them to be removed;
    /// `foregroundDeletion` alone starts deleting its dependents.
    fn mark_deleting(&mut self, r: ObjRef, old: Arc<Value>, finalizers: &BTreeSet<String>) -> Arc<Value> {
        let mut new = (*old).clone();
        if old.pointer("/metadata/deletionTimestamp").is_none() {
            let now = self.clock.elapsed();
            new["metadata"]["deletionTimestamp"] =
                json!(dovetail_world::clock::rfc3339(dovetail_world::clock::sim_epoch() + now));
            new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        } else if new.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) > 0 {
            new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        }
        set_finalizers(&mut new, finalizers);
        if strip_rv(&new) == strip_rv(&old) {
            return old;
        }
        let stored = self.commit(r, new, Some(old), "delete");
        if finalizers.len() == 1 && finalizers.contains("foregroundDeletion") {
            self.delete_dependents(&stored);
        }
        stored
    }

    /// Removes an object for good and garbage-collects what depended on it.
    pub(super) fn remove(&mut self, r: &ObjRef, propagation: Propagation) -> Option<Arc<Value>> {
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
}

/// Whether a delete with a uid and resourceVersion precondition may go ahead.
fn check_preconditions(rt: &ResourceType, name: &str, old: &Value, opts: &DeleteOptions) -> ApiResult<()> {
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
    Ok(())
}

/// Whether a pod is in its grace period (its kubelet finishes the delete).
pub(super) fn is_pod_in_grace(rt: &ResourceType, obj: &Value) -> bool {
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
