//! The ReplicaSet controller: keep `spec.replicas` active pods, report status.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::counts_memo::CountsMemo;
use super::pods::{
    at, create_from_template, delete_pod, deletion_rank, is_active, owned_pods, pod_change_matters, ty, write_status,
};
use crate::actors::runtime::Reconciler;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{EventType, Store};

/// Reconciles every ReplicaSet.
#[derive(Default)]
pub struct ReplicaSetController {
    /// Each ReplicaSet's pod counts, walked again only when one of its pods changed.
    counts: CountsMemo,
}

impl Reconciler for ReplicaSetController {
    fn name(&self) -> &'static str {
        "replicaset-controller"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("apps", "replicasets"), ("", "pods")]
    }

    fn wakes_on(&mut self, key: &ResourceKey, event: EventType, obj: &Value) -> bool {
        pod_change_matters("ReplicaSet", key, event, obj)
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let rst = ty(store, "apps", "replicasets");
        // Shared handles to the pass-start objects, not deep copies.
        let all: Vec<Arc<Value>> = store.iter(&rst.key(), None).cloned().collect();
        for rs in &all {
            if at(rs, &["metadata", "deletionTimestamp"]).is_some() {
                continue;
            }
            reconcile_one(store, rs, &mut self.counts);
        }
        self.counts.retain(&all.iter().filter_map(|rs| rs["metadata"]["uid"].as_str()).collect());
        None
    }
}

fn reconcile_one(store: &mut Store, rs: &Value, memo: &mut CountsMemo) {
    let uid = rs["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let ns = rs["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    let want = at(rs, &["spec", "replicas"]).and_then(Value::as_i64).unwrap_or(1).max(0);
    // The active pods' count is `PodCounts::active` (the same walk, the same filter); the
    // pods themselves are listed only when some must go.
    let have = memo.counts(store, &ns, &uid).active;
    if have < want {
        for _ in 0..(want - have) {
            create_from_template(store, rs, &rs["spec"]["template"], None);
        }
    } else if have > want {
        let mut active: Vec<_> = owned_pods(store, &ns, &uid).into_iter().filter(|p| is_active(p)).collect();
        active.sort_by_key(|p| deletion_rank(p));
        for pod in active.iter().take((have - want) as usize) {
            delete_pod(store, pod);
        }
    }
    let counts = memo.counts(store, &ns, &uid);
    let ready = counts.ready;
    let status = json!({
        "replicas": counts.active,
        "fullyLabeledReplicas": counts.active,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs["metadata"]["generation"],
    });
    let rst = ty(store, "apps", "replicasets");
    let current = store.get(&rst, &ns, rs["metadata"]["name"].as_str().unwrap_or(""));
    if let Ok(current) = current {
        write_status(store, &rst, &current, status);
    }
}
