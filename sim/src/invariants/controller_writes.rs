//! One audit recorder for the invariants that judge a controller's requests as the API
//! server sees them: what the store held just before a request (its `before` hook, on the
//! state the request will act on) and what it holds once the request was answered with a
//! 2xx. Each such invariant supplies a [`WriteJudge`]; the recorder does the bookkeeping
//! they used to copy: only controller hosts' requests, the per-request state keyed by the
//! audit sequence number, only accepted requests judged, findings kept until the invariant's
//! next tick drains them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::apiserver::ApiServer;
use crate::apiserver::audit::{AuditObserver, AuditRequest};
use crate::apiserver::store::Store;
use crate::scenario::invariants::InvariantConfig;

/// How one invariant judges a controller request.
pub trait WriteJudge: Send + Sync + 'static {
    /// What is kept of the store before the request.
    type Before: Send;
    /// What an accepted request found.
    type Finding: Send;

    /// What to keep of `store` before `request` (already known to be a controller host's);
    /// `None` when the request is not one to judge.
    fn before(&self, store: &Store, request: &AuditRequest) -> Option<Self::Before>;

    /// The findings of `request`, accepted with a 2xx and `trace_position` the trace length
    /// then. `store` gives the state after it (locked on demand: the server holds the audit
    /// lock, not the store's, while reporting).
    fn after(
        &self,
        store: &Mutex<Store>,
        request: &AuditRequest,
        before: Self::Before,
        trace_position: u64,
    ) -> Vec<Self::Finding>;
}

/// The audit observer around a [`WriteJudge`].
pub struct ControllerWrites<J: WriteJudge> {
    judge: J,
    store: Arc<Mutex<Store>>,
    config: InvariantConfig,
    before: Mutex<BTreeMap<u64, J::Before>>,
    found: Mutex<Vec<J::Finding>>,
}

impl<J: WriteJudge> ControllerWrites<J> {
    /// A recorder judging with `judge`, installed on `server`'s audit hook.
    pub fn install(server: &ApiServer, config: &InvariantConfig, judge: J) -> Arc<Self> {
        let recorder = Arc::new(Self::new(server.store.clone(), config, judge));
        server.audit.lock().unwrap_or_else(|e| e.into_inner()).observe(recorder.clone());
        recorder
    }

    /// A recorder not installed anywhere (tests drive its hooks by hand).
    pub fn new(store: Arc<Mutex<Store>>, config: &InvariantConfig, judge: J) -> Self {
        Self { judge, store, config: config.clone(), before: Mutex::default(), found: Mutex::default() }
    }

    /// Takes the findings so far.
    pub fn drain(&self) -> Vec<J::Finding> {
        std::mem::take(&mut *self.found.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<J: WriteJudge> AuditObserver for ControllerWrites<J> {
    fn before(&self, store: &Store, r: &AuditRequest) {
        if !self.config.is_controller(&r.host) {
            return;
        }
        if let Some(kept) = self.judge.before(store, r) {
            self.before.lock().unwrap_or_else(|e| e.into_inner()).insert(r.seq, kept);
        }
    }

    fn after(&self, r: &AuditRequest, status: u16, trace_position: u64) {
        let Some(kept) = self.before.lock().unwrap_or_else(|e| e.into_inner()).remove(&r.seq) else { return };
        if !(200..300).contains(&status) {
            return;
        }
        let found = self.judge.after(&self.store, r, kept, trace_position);
        if !found.is_empty() {
            self.found.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
        }
    }
}
