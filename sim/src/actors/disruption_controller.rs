//! The PodDisruptionBudget status controller: keeps `disruptionsAllowed` current as pods
//! come and go, so the API server's eviction check answers as on a real cluster.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde::Deserialize;
use serde_json::Value;

use super::pdb_status::{ControllerScale, compute_status};
use super::runtime::Reconciler;
use crate::apiserver::store::{Part, Store, WriteOptions};
use crate::world::clock::{sim_epoch, timestamp};

/// kube-controller-manager's disruption controller (PDB status part).
#[derive(Default)]
pub struct DisruptionController {
    /// The pods of each namespace with a budget, decoded at the last pass, by name, beside
    /// the stored object each was decoded from. It runs on every pod change and decoding
    /// every pod of the namespace each time was most of a Deployment-shaped run's CPU; a
    /// pod is decoded again only when the store holds a different object for it (every
    /// write replaces the stored `Arc`, so pointer equality means the same version).
    decoded: BTreeMap<String, DecodedPods>,
}

/// One namespace's pods in the store's (name) order: each one's name, the stored object and
/// its decoding.
type DecodedPods = Vec<(String, Arc<Value>, Arc<Pod>)>;

/// Decoded pods of one namespace, in the store's (name) order: the cached decoding of
/// every pod whose stored object is unchanged since `prev` was filled, a fresh one for the
/// rest. `fresh` receives what the next pass can reuse. A pod that does not decode is left
/// out, as before. Both lists are in name order, so the previous entry of a pod is found by
/// walking `prev` alongside the store (a merge) rather than by a map lookup per pod: this
/// runs on every pod change, over every pod of the namespace (docs/benchmarks-measured.md,
/// Session 20).
fn decode_namespace(
    store: &Store,
    pods_t: &crate::apiserver::resources::ResourceType,
    ns: &str,
    prev: DecodedPods,
    fresh: &mut DecodedPods,
) -> Vec<Arc<Pod>> {
    let mut out = Vec::new();
    let mut prev = prev.into_iter().peekable();
    for obj in store.iter(&pods_t.key(), Some(ns)) {
        let name = obj["metadata"]["name"].as_str().unwrap_or("");
        while prev.next_if(|(n, _, _)| n.as_str() < name).is_some() {}
        let cached = match prev.next_if(|(n, _, _)| n == name) {
            Some((k, o, pod)) if Arc::ptr_eq(&o, obj) => Some((k, pod)),
            _ => None,
        };
        let (key, pod) = match cached {
            Some(hit) => hit,
            None => match Pod::deserialize(&**obj) {
                Ok(pod) => (name.to_string(), Arc::new(pod)),
                Err(_) => continue,
            },
        };
        out.push(pod.clone());
        fresh.push((key, obj.clone(), pod));
    }
    out
}

impl Reconciler for DisruptionController {
    fn name(&self) -> &'static str {
        "disruption-controller"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("policy", "poddisruptionbudgets"), ("", "pods"), ("apps", "replicasets"), ("apps", "deployments")]
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let pdb_t = store.registry().get("policy", "poddisruptionbudgets").expect("built in");
        let pods_t = store.registry().get("", "pods").expect("built in");
        let pdbs: Vec<Arc<Value>> = store.iter(&pdb_t.key(), None).cloned().collect();
        let now = timestamp(store.clock().now());
        let mut next: Option<Duration> = None;
        // Decode each namespace's pods once, however many budgets it has (status writes
        // below change budgets, not pods), reusing the last pass's decoding of unchanged pods.
        let mut pods_by_ns: BTreeMap<String, Vec<Arc<Pod>>> = BTreeMap::new();
        let mut prev = std::mem::take(&mut self.decoded);
        // The pass writes budgets only, so a controller's scale holds for the whole pass.
        let scales = ScaleMemo::default();
        for obj in pdbs {
            let Ok(pdb) = PodDisruptionBudget::deserialize(&*obj) else { continue };
            let ns = pdb.metadata.namespace.clone().unwrap_or_default();
            let pods = pods_by_ns.entry(ns.clone()).or_insert_with(|| {
                let prev = prev.remove(&ns).unwrap_or_default();
                decode_namespace(store, &pods_t, &ns, prev, self.decoded.entry(ns.clone()).or_default())
            });
            let scale_of = |owner: &OwnerReference, namespace: &str| scales.scale_of(store, owner, namespace);
            let outcome = compute_status(&pdb, pods, &scale_of, now);
            if let Some(at) = outcome.recheck_at {
                let secs = u64::try_from(at.as_second()).unwrap_or(0);
                let at = (UNIX_EPOCH + Duration::from_secs(secs)).duration_since(sim_epoch()).unwrap_or_default();
                next = Some(next.map_or(at, |n| n.min(at)));
            }
            let status = serde_json::to_value(&outcome.status).unwrap_or(Value::Null);
            if obj.get("status") != Some(&status) {
                let mut new = (*obj).clone();
                new["status"] = status;
                let name = pdb.metadata.name.clone().unwrap_or_default();
                let _ = store.update(&pdb_t, &ns, &name, new, Part::Status, WriteOptions::default());
            }
        }
        next
    }
}

/// [`scale_of`] answers of one pass, by the owner's uid (then kind, name and namespace).
/// Every pod of a ReplicaSet asks the same question, once per budget selecting it: the
/// lookups (two store reads and an ownerReference decoding for a Deployment's pod) were a
/// thirtieth of the reference scenario's CPU (docs/benchmarks-measured.md, Session 20).
#[derive(Default)]
struct ScaleMemo {
    answers: std::cell::RefCell<BTreeMap<String, Vec<ScaleAnswer>>>,
}

/// One [`ScaleMemo`] entry: the owner's kind and name, the namespace, the answer.
type ScaleAnswer = (String, String, String, Option<ControllerScale>);

impl ScaleMemo {
    fn scale_of(&self, store: &Store, owner: &OwnerReference, namespace: &str) -> Option<ControllerScale> {
        let known = self.answers.borrow().get(owner.uid.as_str()).and_then(|seen| {
            seen.iter()
                .find(|(kind, name, ns, _)| *kind == owner.kind && *name == owner.name && ns == namespace)
                .map(|(_, _, _, answer)| answer.clone())
        });
        if let Some(answer) = known {
            return answer;
        }
        let answer = scale_of(store, owner, namespace);
        self.answers.borrow_mut().entry(owner.uid.clone()).or_default().push((
            owner.kind.clone(),
            owner.name.clone(),
            namespace.to_string(),
            answer.clone(),
        ));
        answer
    }
}

/// The scale of a pod's controller: ReplicaSets owned by a Deployment count the
/// Deployment's replicas, as the disruption controller's finders do.
fn scale_of(store: &Store, owner: &OwnerReference, namespace: &str) -> Option<ControllerScale> {
    let (group, plural) = match owner.kind.as_str() {
        "ReplicaSet" => ("apps", "replicasets"),
        "Deployment" => ("apps", "deployments"),
        "StatefulSet" => ("apps", "statefulsets"),
        "Job" => ("batch", "jobs"),
        _ => return None,
    };
    let t = store.registry().get(group, plural)?;
    let obj = store.get(&t, namespace, &owner.name).ok()?;
    if obj["metadata"]["uid"].as_str() != Some(owner.uid.as_str()) {
        return None;
    }
    if owner.kind == "ReplicaSet"
        && let Some(parent) = obj
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .and_then(|refs| refs.iter().find(|r| r["controller"] == true && r["kind"] == "Deployment"))
        && let Ok(parent) = serde_json::from_value::<OwnerReference>(parent.clone())
    {
        return scale_of(store, &parent, namespace);
    }
    let replicas = match owner.kind.as_str() {
        "Job" => obj.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1),
        _ => obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1),
    };
    Some(ControllerScale { uid: owner.uid.clone(), replicas: replicas as i32 })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::apiserver::store::{DeleteOptions, StoreConfig};
    use dovetail_world::clock::Clock;
    use dovetail_world::rng::derive_rng;
    use dovetail_world::trace::Trace;

    fn pod(name: &str, phase: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": phase}})
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter().map(|p| p.metadata.name.clone().unwrap_or_default()).collect()
    }

    /// The merge reuses the decoding of exactly the pods whose stored object is unchanged,
    /// and yields the pods a fresh decoding yields, in the same order.
    #[test]
    fn decoding_is_reused_for_unchanged_pods_only() {
        let mut store =
            Store::new(Clock::Fixed(Duration::ZERO), derive_rng(1, "test"), Trace::new(), StoreConfig::default());
        let pods_t = store.registry().get("", "pods").expect("pods");
        for name in ["a", "b", "c", "e"] {
            store.create(&pods_t, "default", pod(name, "Pending"), WriteOptions::default()).expect("create");
        }
        let mut first = DecodedPods::new();
        let before = decode_namespace(&store, &pods_t, "default", DecodedPods::new(), &mut first);
        assert_eq!(names(&before), ["a", "b", "c", "e"]);
        let mut b = (*store.get(&pods_t, "default", "b").expect("b")).clone();
        b["status"]["phase"] = json!("Running");
        store.update(&pods_t, "default", "b", b, Part::Status, WriteOptions::default()).expect("update");
        let now = DeleteOptions { grace_period_seconds: Some(0), ..DeleteOptions::default() };
        store.delete(&pods_t, "default", "a", &now).expect("delete");
        store.create(&pods_t, "default", pod("d", "Pending"), WriteOptions::default()).expect("create");
        let mut second = DecodedPods::new();
        let after = decode_namespace(&store, &pods_t, "default", first, &mut second);
        let mut scratch = DecodedPods::new();
        let fresh = decode_namespace(&store, &pods_t, "default", DecodedPods::new(), &mut scratch);
        assert_eq!(names(&after), ["b", "c", "d", "e"]);
        assert_eq!(after, fresh);
        let reused: Vec<bool> = after.iter().map(|p| before.iter().any(|q| Arc::ptr_eq(p, q))).collect();
        assert_eq!(reused, [false, true, false, true], "c and e are unchanged; b was written, d is new");
        assert_eq!(after[0].status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));
    }
}
