//! The audit observer that records voluntary disruptions as they happen: each pod
//! eviction or delete sent by a controller host, judged against the cluster as it was just
//! before the request (PodDisruptionBudgets, do-not-disrupt), and each NodeClaim or Node
//! delete with the host that sent it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::apiserver::audit::{AuditObserver, AuditRequest};
use crate::apiserver::labels_of;
use crate::apiserver::selector::LabelSelector;
use crate::apiserver::store::Store;
use crate::oracle::protection::{desired_healthy, do_not_disrupt_active, forced_off, termination_deadline};
use crate::oracle::view::{condition_true, key, sim_time};
use crate::scenario::invariants::InvariantConfig;

/// A PodDisruptionBudget a disruption took below its budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PdbBreach {
    /// `namespace/name` of the PDB.
    pub pdb: String,
    /// Healthy pods before the request.
    pub healthy: i64,
    /// Healthy pods the budget requires.
    pub desired: i64,
}

/// A pod eviction or delete a controller host made, judged before it was applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDisruption {
    /// When.
    pub at: Duration,
    /// Which host sent it.
    pub host: String,
    /// `evict` or `delete`.
    pub verb: &'static str,
    /// `namespace/name`.
    pub pod: String,
    /// The pod's node.
    pub node: Option<String>,
    /// That node's `spec.providerID` when the request came, to look its instance up in the
    /// cloud ([`crate::oracle::protection::failed_check_forces`]).
    pub provider_id: Option<String>,
    /// Budgets the request took below their minimum (empty when none).
    pub pdb_breaches: Vec<PdbBreach>,
    /// The pod had an active `karpenter.sh/do-not-disrupt` and its node's
    /// terminationGracePeriod had not yet forced it.
    pub do_not_disrupt: bool,
    /// Trace length after the request.
    pub trace_position: u64,
}

/// A NodeClaim or Node delete, with who sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectDelete {
    /// When.
    pub at: Duration,
    /// Which host sent it.
    pub host: String,
    /// Whether that host is a controller.
    pub by_controller: bool,
    /// `nodeclaims` or `nodes`.
    pub resource: String,
    /// Object name.
    pub name: String,
    /// Trace length after the request.
    pub trace_position: u64,
}

/// What the recorder saw since it was last drained.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// Successful controller pod disruptions.
    pub pods: Vec<PodDisruption>,
    /// Successful NodeClaim and Node deletes (any host).
    pub deletes: Vec<ObjectDelete>,
}

/// The observer. Install it on the API server's audit; drain it every tick.
pub struct Recorder {
    config: InvariantConfig,
    in_flight: Mutex<BTreeMap<u64, PodDisruption>>,
    done: Mutex<Recorded>,
}

impl Recorder {
    /// A recorder for the hosts `config` calls controllers.
    pub fn new(config: &InvariantConfig) -> Self {
        Self { config: config.clone(), in_flight: Mutex::default(), done: Mutex::default() }
    }

    /// Takes everything recorded so far.
    pub fn drain(&self) -> Recorded {
        std::mem::take(&mut *self.done.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl AuditObserver for Recorder {
    fn before(&self, store: &Store, r: &AuditRequest) {
        if r.resource != "pods" || !r.group.is_empty() || !matches!(r.verb, "evict" | "delete") {
            return;
        }
        if !self.config.is_controller(&r.host) {
            return;
        }
        let Some(pod) = store.get_ref(&crate::apiserver::store::ObjRef {
            key: key("", "pods"),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        }) else {
            return;
        };
        let node = pod["spec"]["nodeName"].as_str().filter(|s| !s.is_empty()).map(String::from);
        let running = !matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed" | "Pending") | None);
        let terminating = pod["metadata"].get("deletionTimestamp").is_some_and(|v| !v.is_null());
        if !running || terminating {
            return;
        }
        // A NodeClaim's terminationGracePeriod overrides PDBs and do-not-disrupt alike: at its
        // deadline minus the pod's grace, Karpenter deletes it.
        let forced = forced(store, &pod, node.as_deref(), r.at);
        let provider_id = node.as_ref().and_then(|n| {
            let node = store.get_ref(&crate::apiserver::store::ObjRef {
                key: key("", "nodes"),
                namespace: String::new(),
                name: n.clone(),
            })?;
            node["spec"]["providerID"].as_str().map(String::from)
        });
        let pdb_breaches = if ready(&pod) && !forced { breaches(store, &pod, &r.namespace) } else { Vec::new() };
        let do_not_disrupt = do_not_disrupt_active(&pod, r.at) && !forced;
        let d = PodDisruption {
            at: r.at,
            host: r.host.clone(),
            verb: r.verb,
            pod: format!("{}/{}", r.namespace, r.name),
            node,
            provider_id,
            pdb_breaches,
            do_not_disrupt,
            trace_position: 0,
        };
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).insert(r.seq, d);
    }

    fn after(&self, r: &AuditRequest, status: u16, trace_position: u64) {
        let ok = (200..300).contains(&status);
        if let Some(mut d) = self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&r.seq)
            && ok
        {
            d.trace_position = trace_position;
            self.done.lock().unwrap_or_else(|e| e.into_inner()).pods.push(d);
        }
        if ok && r.verb == "delete" && matches!(r.resource.as_str(), "nodeclaims" | "nodes") {
            self.done.lock().unwrap_or_else(|e| e.into_inner()).deletes.push(ObjectDelete {
                at: r.at,
                host: r.host.clone(),
                by_controller: self.config.is_controller(&r.host),
                resource: r.resource.clone(),
                name: r.name.clone(),
                trace_position,
            });
        }
    }
}

fn ready(pod: &Value) -> bool {
    condition_true(pod, "Ready")
}

/// Budgets of the PDBs covering `pod` that losing it would break, computed from the
/// pods as they are: expected = active matching pods, healthy = the Ready ones.
fn breaches(store: &Store, pod: &Value, namespace: &str) -> Vec<PdbBreach> {
    let labels = labels_of(pod);
    let mut out = Vec::new();
    for pdb in store.iter(&key("policy", "poddisruptionbudgets"), Some(namespace)) {
        let Some(selector) = pdb
            .pointer("/spec/selector")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .and_then(|s| LabelSelector::from_api(&s).ok())
        else {
            continue;
        };
        if !selector.matches(&labels) {
            continue;
        }
        let (mut expected, mut healthy) = (0i64, 0i64);
        for p in store.iter(&key("", "pods"), Some(namespace)) {
            let terminal = matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
            let terminating = p["metadata"].get("deletionTimestamp").is_some_and(|v| !v.is_null());
            if terminal || terminating || !selector.matches(&labels_of(p)) {
                continue;
            }
            expected += 1;
            healthy += i64::from(ready(p));
        }
        let Some(desired) = desired_healthy(&pdb["spec"], expected) else { continue };
        if healthy - 1 < desired {
            out.push(PdbBreach {
                pdb: format!("{namespace}/{}", pdb["metadata"]["name"].as_str().unwrap_or_default()),
                healthy,
                desired,
            });
        }
    }
    out
}

/// Whether the pod's node is past the point where its NodeClaim's terminationGracePeriod
/// forces pods off: the claim's own deletionTimestamp plus its pool's
/// `terminationGracePeriod`, minus the pod's grace (see [`forced_off`]). The
/// `nodeclaim-termination-timestamp` annotation is the controller's own record and is not
/// trusted.
fn forced(store: &Store, pod: &Value, node: Option<&str>, now: Duration) -> bool {
    let Some(node) = node else { return false };
    store.iter(&key("karpenter.sh", "nodeclaims"), None).filter(|c| c["status"]["nodeName"] == node).any(|c| {
        let pool = c.pointer("/metadata/labels/karpenter.sh~1nodepool").and_then(Value::as_str).and_then(|p| {
            store.get_ref(&crate::apiserver::store::ObjRef {
                key: key("karpenter.sh", "nodepools"),
                namespace: String::new(),
                name: p.to_string(),
            })
        });
        let deadline = termination_deadline(sim_time(&c["metadata"]["deletionTimestamp"]), pool.as_deref());
        forced_off(pod, deadline, now)
    })
}
