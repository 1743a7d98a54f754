//! `initializationConformance`: a NodeClaim turns `Initialized=True` only when its Node is
//! initialized by Karpenter's rules, judged on the store at the instant the controller's
//! write that sets the condition is accepted.
//!
//! Upstream: core `pkg/controllers/nodeclaim/lifecycle/initialization.go` `Reconcile`
//! (l. 56-101) sets `Initialized` True (l. 100) only after it found the claim's Node
//! (`NodeForNodeClaim`, l. 65: the Node whose `spec.providerID` is the claim's), and that
//! Node
//! - is `Ready=True` (l. 70),
//! - carries none of the claim's `startupTaints` (`StartupTaintsRemoved`, l. 116-128,
//!   matching by `MatchTaint`: key and effect),
//! - carries none of the known ephemeral taints (`KnownEphemeralTaintsRemoved`, l. 105-112,
//!   with `pkg/scheduling/taints.go:38-70` `KnownEphemeralTaints`:
//!   `node.kubernetes.io/not-ready` NoSchedule and NoExecute, `node.kubernetes.io/unreachable`
//!   NoSchedule, `node.cloudprovider.kubernetes.io/uninitialized` NoSchedule,
//!   `karpenter.sh/unregistered` NoExecute (`pkg/apis/v1/taints.go:38`), each matched by
//!   key and effect, and any key under `readiness.k8s.io/`),
//! - and has every resource the claim requests with a non-zero quantity non-zero in its
//!   allocatable (`RequestedResourcesRegistered`, l. 132-146).
//!
//! The DRA check (l. 86-91) needs the `requested-dra-drivers` annotation, which no story
//! sets; it is not judged.
//!
//! Taints of initialization only go away, so a Node the controller read initializable is
//! still so when its write lands, with one exception: a Node lost meanwhile (its kubelet
//! stopped reporting: `Ready` Unknown, `node.kubernetes.io/unreachable` added by the node
//! lifecycle controller). Such a Node is not judged, nor a claim whose Node is gone or that
//! is already deleting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::controller_writes::{ControllerWrites, WriteJudge};
use super::{Ctx, Invariant, Violation};
use crate::actors::quantity::parse_milli;
use crate::apiserver::ApiServer;
use crate::apiserver::audit::AuditRequest;
use crate::apiserver::store::{ObjRef, Store};
use crate::oracle::view::{condition, condition_true, key};
use crate::scenario::invariants::InvariantConfig;

const NAME: &str = "initializationConformance";

/// `KnownEphemeralTaints` (core `pkg/scheduling/taints.go:38-44`), as (key, effect).
pub const EPHEMERAL_TAINTS: [(&str, &str); 5] = [
    ("node.kubernetes.io/not-ready", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
    ("karpenter.sh/unregistered", "NoExecute"),
];

/// `KnownEphemeralTaintKeyPrefixes` (core `pkg/scheduling/taints.go:49-52`).
pub const EPHEMERAL_PREFIXES: [&str; 1] = ["readiness.k8s.io/"];

fn taints(obj: &Value, pointer: &str) -> Vec<(String, String)> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    (
                        t["key"].as_str().unwrap_or_default().to_string(),
                        t["effect"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a taint is one of upstream's known ephemeral taints (`IsKnownEphemeralTaint`).
pub fn is_known_ephemeral(key: &str, effect: &str) -> bool {
    EPHEMERAL_TAINTS.iter().any(|(k, e)| *k == key && *e == effect)
        || EPHEMERAL_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Whether the Node was lost after it may have been read (kubelet heartbeats stopped).
pub fn lost(node: &Value) -> bool {
    taints(node, "/spec/taints").iter().any(|(k, _)| k == "node.kubernetes.io/unreachable")
        || condition(node, "Ready").is_some_and(|c| c["status"] == "Unknown")
}

fn is_zero(q: &Value) -> bool {
    q.as_str().map(parse_milli).is_some_and(|v| v == Ok(0)) || q.as_i64() == Some(0)
}

/// Why `node` does not make `claim` initialized by upstream's rules, or `None` when it does.
pub fn not_initialized(claim: &Value, node: &Value) -> Option<String> {
    if !condition_true(node, "Ready") {
        return Some("its Node is not Ready".into());
    }
    let on_node = taints(node, "/spec/taints");
    for (k, e) in taints(claim, "/spec/startupTaints") {
        if on_node.iter().any(|(nk, ne)| *nk == k && *ne == e) {
            return Some(format!("its Node still carries the startup taint {k}:{e}"));
        }
    }
    if let Some((k, e)) = on_node.iter().find(|(k, e)| is_known_ephemeral(k, e)) {
        return Some(format!("its Node still carries the ephemeral taint {k}:{e}"));
    }
    let requests = claim.pointer("/spec/resources/requests").and_then(Value::as_object);
    for (name, q) in requests.into_iter().flatten() {
        if is_zero(q) {
            continue;
        }
        let allocatable = node.pointer("/status/allocatable").and_then(|a| a.get(name));
        if allocatable.is_none_or(is_zero) {
            return Some(format!("its Node has no allocatable {name} yet (requested {q})"));
        }
    }
    None
}

/// One claim initialized against the rules.
#[derive(Clone, Debug, PartialEq)]
struct Breach {
    at: Duration,
    claim: String,
    node: String,
    message: String,
    trace_position: u64,
}

/// The judge: each controller write to a NodeClaim, Initialized before and after.
struct TurnsInitialized;

fn claim_ref(name: &str) -> ObjRef {
    ObjRef { key: key("karpenter.sh", "nodeclaims"), namespace: String::new(), name: name.into() }
}

fn initialized(store: &Store, name: &str) -> bool {
    store.get_ref(&claim_ref(name)).is_some_and(|c| condition_true(&c, "Initialized"))
}

impl WriteJudge for TurnsInitialized {
    /// Whether the claim was Initialized before.
    type Before = bool;
    type Finding = Breach;

    fn before(&self, store: &Store, r: &AuditRequest) -> Option<bool> {
        let judged = matches!(r.verb, "update" | "patch")
            && r.group == "karpenter.sh"
            && r.resource == "nodeclaims"
            && !r.name.is_empty();
        judged.then(|| initialized(store, &r.name))
    }

    fn after(&self, store: &Mutex<Store>, r: &AuditRequest, was: bool, trace_position: u64) -> Vec<Breach> {
        if was {
            return Vec::new();
        }
        let store = store.lock().unwrap_or_else(|e| e.into_inner());
        let Some(claim) = store.get_ref(&claim_ref(&r.name)) else { return Vec::new() };
        if !condition_true(&claim, "Initialized")
            || claim["metadata"].get("deletionTimestamp").is_some_and(|d| !d.is_null())
        {
            return Vec::new();
        }
        let Some(provider_id) = claim.pointer("/status/providerID").and_then(Value::as_str).filter(|p| !p.is_empty())
        else {
            return Vec::new();
        };
        let Some(node) = store.iter(&key("", "nodes"), None).find(|n| n["spec"]["providerID"] == provider_id) else {
            return Vec::new();
        };
        if lost(node) {
            return Vec::new();
        }
        let Some(why) = not_initialized(&claim, node) else { return Vec::new() };
        let node_name = node["metadata"]["name"].as_str().unwrap_or_default().to_string();
        vec![Breach {
            at: r.at,
            claim: r.name.clone(),
            message: format!("{} set NodeClaim {} Initialized=True but {why} (Node {node_name})", r.host, r.name),
            node: node_name,
            trace_position,
        }]
    }
}

/// The invariant: reports what its recorder saw.
pub struct InitializationConformance {
    recorder: Arc<ControllerWrites<TurnsInitialized>>,
}

impl InitializationConformance {
    /// The invariant, with its recorder installed on `server`'s audit hook.
    pub fn new(config: &InvariantConfig, server: &ApiServer) -> Self {
        Self { recorder: ControllerWrites::install(server, config, TurnsInitialized) }
    }
}

impl Invariant for InitializationConformance {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, _ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        for b in self.recorder.drain() {
            out.push(Violation {
                invariant: NAME.into(),
                at: b.at,
                objects: vec![format!("NodeClaim {}", b.claim), format!("Node {}", b.node)],
                message: b.message,
                trace_position: b.trace_position,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claim() -> Value {
        json!({"metadata": {"name": "c"},
               "spec": {"startupTaints": [{"key": "example.com/startup", "effect": "NoSchedule"}],
                        "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1", "example.com/none": "0"}}},
               "status": {"providerID": "aws:///us-west-2a/i-1"}})
    }

    fn node(taints: Value, ready: &str, gpu: &str) -> Value {
        json!({"metadata": {"name": "n"}, "spec": {"providerID": "aws:///us-west-2a/i-1", "taints": taints},
               "status": {"conditions": [{"type": "Ready", "status": ready}],
                          "allocatable": {"cpu": "3920m", "nvidia.com/gpu": gpu}}})
    }

    #[test]
    fn an_initialized_node_passes() {
        assert_eq!(not_initialized(&claim(), &node(json!([]), "True", "1")), None);
        // A taint of the pool that is neither a startup nor an ephemeral taint stays.
        let pool = json!([{"key": "dedicated", "effect": "NoSchedule"}]);
        assert_eq!(not_initialized(&claim(), &node(pool, "True", "1")), None);
        // Startup taints match by key and effect: the same key with another effect is not one.
        let other = json!([{"key": "example.com/startup", "effect": "NoExecute"}]);
        assert_eq!(not_initialized(&claim(), &node(other, "True", "1")), None);
    }

    #[test]
    fn each_rule_of_upstream_fails_it() {
        let c = claim();
        assert!(not_initialized(&c, &node(json!([]), "False", "1")).unwrap().contains("not Ready"));
        let uninit =
            json!([{"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}]);
        assert!(not_initialized(&c, &node(uninit, "True", "1")).unwrap().contains("ephemeral taint"));
        let unregistered = json!([{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]);
        assert!(not_initialized(&c, &node(unregistered, "True", "1")).unwrap().contains("karpenter.sh/unregistered"));
        let readiness = json!([{"key": "readiness.k8s.io/cni", "effect": "NoSchedule"}]);
        assert!(not_initialized(&c, &node(readiness, "True", "1")).unwrap().contains("readiness.k8s.io/cni"));
        let startup = json!([{"key": "example.com/startup", "effect": "NoSchedule"}]);
        assert!(not_initialized(&c, &node(startup, "True", "1")).unwrap().contains("startup taint"));
        assert!(not_initialized(&c, &node(json!([]), "True", "0")).unwrap().contains("nvidia.com/gpu"));
    }

    #[test]
    fn a_lost_node_is_recognised() {
        let unreachable = json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]);
        assert!(lost(&node(unreachable, "Unknown", "1")));
        assert!(!lost(&node(json!([]), "True", "1")));
        assert!(!lost(&node(json!([]), "False", "1")));
    }
}
