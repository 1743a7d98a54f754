//! `noOpWrites`: the controller does not send writes that change nothing. An update or
//! patch (main resource or status) from a controller host that the API server accepts
//! (2xx) but that leaves the object's `resourceVersion` where it was is a no-op write:
//! the server, like kube-apiserver, stores nothing and notifies no watcher
//! (`apiserver/src/store/update.rs`), so the request was wasted load.
//!
//! Upstream patches only on change: core `pkg/controllers/nodeclaim/disruption/controller.go:96-104`
//! copies the claim (`stored := nodeClaim.DeepCopy()`), runs the drift and consolidation
//! reconcilers, and patches status only `if !equality.Semantic.DeepEqual(stored, nodeClaim)`;
//! the lifecycle, termination and pod-events controllers follow the same
//! compare-before-patch pattern (e.g. `pkg/controllers/nodeclaim/podevents/controller.go`
//! patches only when `LastPodEventTime` moves).
//!
//! Judged from the audit hook: before the request, the object's `resourceVersion` is read
//! from the store it will act on; after a 2xx answer, again. Equal means no commit
//! happened in between, so the accepted write was a no-op (another write in between only
//! hides one: never a false report). While faults are live the check waits: a write
//! retried after a lost response is a no-op the client could not avoid.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::controller_writes::{ControllerWrites, WriteJudge};
use super::{Ctx, Invariant, Phase, Violation};
use crate::apiserver::ApiServer;
use crate::apiserver::audit::AuditRequest;
use crate::apiserver::store::{ObjRef, Store};
use crate::oracle::view::key;
use crate::scenario::invariants::InvariantConfig;

/// One accepted write that changed nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoOp {
    /// When the request arrived.
    pub at: Duration,
    /// The requesting host.
    pub host: String,
    /// `update` or `patch`.
    pub verb: &'static str,
    /// `Kind`-ish object name: `resource[.group] namespace/name`.
    pub object: String,
    /// The trace position after the answer.
    pub trace_position: u64,
}

/// The judge: each controller write's resourceVersion before, compared after.
pub struct SameVersion;

fn object_ref(r: &AuditRequest) -> ObjRef {
    ObjRef { key: key(&r.group, &r.resource), namespace: r.namespace.clone(), name: r.name.clone() }
}

fn resource_version(store: &Store, r: &AuditRequest) -> Option<String> {
    store.get_ref(&object_ref(r)).and_then(|o| o["metadata"]["resourceVersion"].as_str().map(String::from))
}

impl WriteJudge for SameVersion {
    type Before = String;
    type Finding = NoOp;

    fn before(&self, store: &Store, r: &AuditRequest) -> Option<String> {
        if !matches!(r.verb, "update" | "patch") || r.name.is_empty() {
            return None;
        }
        resource_version(store, r)
    }

    fn after(&self, store: &Mutex<Store>, r: &AuditRequest, rv: String, trace_position: u64) -> Vec<NoOp> {
        let now = resource_version(&store.lock().unwrap_or_else(|e| e.into_inner()), r);
        if now.as_deref() != Some(rv.as_str()) {
            return Vec::new();
        }
        let resource = if r.group.is_empty() { r.resource.clone() } else { format!("{}.{}", r.resource, r.group) };
        let name = if r.namespace.is_empty() { r.name.clone() } else { format!("{}/{}", r.namespace, r.name) };
        vec![NoOp {
            at: r.at,
            host: r.host.clone(),
            verb: r.verb,
            object: format!("{resource} {name}"),
            trace_position,
        }]
    }
}

/// The recorder of controller writes that changed nothing.
pub type WriteRecorder = ControllerWrites<SameVersion>;

/// The invariant.
pub struct NoOpWrites {
    recorder: Arc<WriteRecorder>,
}

impl NoOpWrites {
    /// Installs its observer on `server`'s audit hook.
    pub fn new(config: &InvariantConfig, server: &ApiServer) -> Self {
        Self { recorder: ControllerWrites::install(server, config, SameVersion) }
    }
}

/// Whether a write at `at` is judged: not while faults are live, nor in a window the
/// controller was cut off from the API server or the cloud.
pub fn judged(phase: Phase, cut_off: &[(Duration, Duration)], at: Duration) -> bool {
    phase != Phase::Faults && !cut_off.iter().any(|(start, heal)| (*start..=*heal).contains(&at))
}

impl Invariant for NoOpWrites {
    fn name(&self) -> &'static str {
        "noOpWrites"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        for w in self.recorder.drain() {
            if !judged(ctx.phase, ctx.controller_cut_off, w.at) {
                continue;
            }
            out.push(Violation {
                invariant: self.name().into(),
                at: w.at,
                objects: vec![w.object.clone()],
                message: format!(
                    "{} sent a {} of {} that the API server accepted but that changed nothing (resourceVersion unchanged)",
                    w.host, w.verb, w.object
                ),
                trace_position: w.trace_position,
            });
        }
    }
}

#[cfg(test)]
#[path = "no_op_writes_tests.rs"]
mod tests;
