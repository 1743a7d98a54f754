//! The PodDisruptionBudget status controller: keeps `disruptionsAllowed` current as pods
//! come and go, so the API server's eviction check answers as on a real cluster.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::Value;

use super::pdb_status::{ControllerScale, compute_status};
use super::runtime::Reconciler;
use crate::apiserver::store::{Part, Store, WriteOptions};
use crate::world::clock::{sim_epoch, timestamp};

/// kube-controller-manager's disruption controller (PDB status part).
#[derive(Default)]
pub struct DisruptionController;

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
        let pdbs: Vec<Value> = store.iter(&pdb_t.key(), None).map(|p| (**p).clone()).collect();
        let now = timestamp(store.clock().now());
        let mut next: Option<Duration> = None;
        // Decode each namespace's pods once, however many budgets it has (status writes
        // below change budgets, not pods).
        let mut pods_by_ns: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        for obj in pdbs {
            let Ok(pdb) = serde_json::from_value::<PodDisruptionBudget>(obj.clone()) else { continue };
            let ns = pdb.metadata.namespace.clone().unwrap_or_default();
            let pods = pods_by_ns.entry(ns.clone()).or_insert_with(|| {
                store
                    .iter(&pods_t.key(), Some(&ns))
                    .filter_map(|p| serde_json::from_value((**p).clone()).ok())
                    .collect()
            });
            let scale_of = |owner: &OwnerReference, namespace: &str| scale_of(store, owner, namespace);
            let outcome = compute_status(&pdb, pods, &scale_of, now);
            if let Some(at) = outcome.recheck_at {
                let secs = u64::try_from(at.as_second()).unwrap_or(0);
                let at = (UNIX_EPOCH + Duration::from_secs(secs)).duration_since(sim_epoch()).unwrap_or_default();
                next = Some(next.map_or(at, |n| n.min(at)));
            }
            let status = serde_json::to_value(&outcome.status).unwrap_or(Value::Null);
            if obj.get("status") != Some(&status) {
                let mut new = obj.clone();
                new["status"] = status;
                let name = pdb.metadata.name.clone().unwrap_or_default();
                let _ = store.update(&pdb_t, &ns, &name, new, Part::Status, WriteOptions::default());
            }
        }
        next
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
