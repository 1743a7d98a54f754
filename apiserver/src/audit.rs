//! The audit hook: who asked for each mutation, and when.
//!
//! Invariant checkers must tell a controller's voluntary disruption (an eviction or a pod
//! delete sent by the controller host) from the kubelet, pod GC or a test driver. Cluster
//! actors write the store directly; every remote client reaches the server over the
//! (simulated) network, so the server knows the requesting host's name. Observers see each
//! mutating request twice: before it is applied, with the store as it was (to judge what
//! the request is about to do), and after, with the HTTP status and the trace position.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::store::Store;

/// One mutating request as the server received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRequest {
    /// Sequence number, unique per server.
    pub seq: u64,
    /// Simulated time the request arrived.
    pub at: Duration,
    /// The requesting host (turmoil host name, e.g. `controller`), or the peer address.
    pub host: String,
    /// The client's `User-Agent`, if it sent one.
    pub user_agent: String,
    /// `create`, `update`, `patch`, `delete`, `deletecollection`, `evict` or `bind`.
    pub verb: &'static str,
    /// API group; empty for core.
    pub group: String,
    /// Plural resource, e.g. `pods`.
    pub resource: String,
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Object name; empty for collections.
    pub name: String,
}

impl AuditRequest {
    /// `verb resource[.group]`, the key of the server's call counts.
    pub fn call_key(&self) -> String {
        if self.group.is_empty() {
            format!("{} {}", self.verb, self.resource)
        } else {
            format!("{} {}.{}", self.verb, self.resource, self.group)
        }
    }
}

/// Watches mutating requests. Called with the server's audit lock held; must not call
/// back into the server's audit.
pub trait AuditObserver: Send + Sync {
    /// Before the request is applied; `store` is the state it will act on.
    fn before(&self, store: &Store, request: &AuditRequest);
    /// After it was answered with `status`; `trace_position` is the trace length then.
    fn after(&self, request: &AuditRequest, status: u16, trace_position: u64);
}

/// The server's audit state: observers and per-call counts.
#[derive(Default)]
pub struct Audit {
    observers: Vec<Arc<dyn AuditObserver>>,
    next_seq: u64,
    calls: BTreeMap<String, u64>,
}

impl Audit {
    /// Adds an observer for every later mutating request.
    pub fn observe(&mut self, observer: Arc<dyn AuditObserver>) {
        self.observers.push(observer);
    }

    /// Mutating requests answered so far, by `verb resource`, from remote clients.
    pub fn calls(&self) -> &BTreeMap<String, u64> {
        &self.calls
    }

    /// Numbers a new request.
    pub(crate) fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    pub(crate) fn has_observers(&self) -> bool {
        !self.observers.is_empty()
    }

    pub(crate) fn before(&self, store: &Store, request: &AuditRequest) {
        for o in &self.observers {
            o.before(store, request);
        }
    }

    pub(crate) fn after(&mut self, request: &AuditRequest, status: u16, trace_position: u64) {
        *self.calls.entry(request.call_key()).or_default() += 1;
        for o in &self.observers {
            o.after(request, status, trace_position);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_keys_name_the_group() {
        let mut r = AuditRequest {
            seq: 1,
            at: Duration::ZERO,
            host: "controller".into(),
            user_agent: String::new(),
            verb: "evict",
            group: String::new(),
            resource: "pods".into(),
            namespace: "default".into(),
            name: "web-1".into(),
        };
        assert_eq!(r.call_key(), "evict pods");
        r.group = "karpenter.sh".into();
        r.resource = "nodeclaims".into();
        r.verb = "delete";
        assert_eq!(r.call_key(), "delete nodeclaims.karpenter.sh");
    }
}
