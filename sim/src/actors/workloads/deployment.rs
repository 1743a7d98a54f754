//! The Deployment controller: one ReplicaSet per pod template, rolled with maxSurge and
//! maxUnavailable (or Recreate), old ReplicaSets scaled down as new pods become ready.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::counts_memo::CountsMemo;
use super::pods::{PodCounts, at, controlled, controller_ref, int_or_percent, pod_change_matters, ty, write_status};
use crate::actors::runtime::Reconciler;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{DeleteOptions, EventType, Part, Store, WriteOptions};

/// Label the controller adds to tell ReplicaSets (and their pods) of one template apart.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// Old ReplicaSets kept for rollback (`spec.revisionHistoryLimit` default).
const DEFAULT_HISTORY: usize = 10;

/// Reconciles every Deployment.
#[derive(Default)]
pub struct DeploymentController {
    /// Each ReplicaSet's pod counts, walked again only when one of its pods changed.
    counts: CountsMemo,
}

impl Reconciler for DeploymentController {
    fn name(&self) -> &'static str {
        "deployment-controller"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("apps", "deployments"), ("apps", "replicasets"), ("", "pods")]
    }

    fn wakes_on(&mut self, key: &ResourceKey, event: EventType, obj: &Value) -> bool {
        pod_change_matters("ReplicaSet", key, event, obj)
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let dt = ty(store, "apps", "deployments");
        // Shared handles to the pass-start objects, not deep copies (the store replaces an
        // object on write, so these stay what the pass started from).
        let all: Vec<Arc<Value>> = store.iter(&dt.key(), None).cloned().collect();
        for d in all {
            if at(&d, &["metadata", "deletionTimestamp"]).is_none() {
                reconcile_one(store, &d, &mut self.counts);
            }
        }
        let rst = ty(store, "apps", "replicasets");
        let live: Vec<Arc<Value>> = store.iter(&rst.key(), None).cloned().collect();
        self.counts.retain(&live.iter().filter_map(|rs| rs["metadata"]["uid"].as_str()).collect());
        None
    }
}

/// A stable, short hash of a pod template, in the alphabet Kubernetes uses for names.
pub fn template_hash(template: &Value) -> String {
    let digest = Sha256::digest(serde_json::to_vec(template).unwrap_or_default());
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    digest.iter().take(10).map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

fn reconcile_one(store: &mut Store, d: &Value, memo: &mut CountsMemo) {
    let rst = ty(store, "apps", "replicasets");
    let ns = d["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    let name = d["metadata"]["name"].as_str().unwrap_or("").to_string();
    let uid = d["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let replicas = at(d, &["spec", "replicas"]).and_then(Value::as_i64).unwrap_or(1).max(0);
    let hash = template_hash(&d["spec"]["template"]);
    let new_name = format!("{name}-{hash}");
    let mut owned: Vec<Arc<Value>> = controlled(store, &rst.key(), &ns, &uid).cloned().collect();
    let recreate = at(d, &["spec", "strategy", "type"]).and_then(Value::as_str) == Some("Recreate");

    if !owned.iter().any(|r| r["metadata"]["name"] == new_name.as_str()) {
        let mut template = d["spec"]["template"].clone();
        template["metadata"]["labels"][POD_TEMPLATE_HASH] = json!(hash);
        let mut selector = d["spec"]["selector"].clone();
        selector["matchLabels"][POD_TEMPLATE_HASH] = json!(hash);
        let first = owned.is_empty();
        let initial = if first && !recreate { replicas } else { 0 };
        let rs = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": new_name, "namespace": ns, "labels": template["metadata"]["labels"],
                         "ownerReferences": [controller_ref(d)]},
            "spec": {"replicas": initial, "selector": selector, "template": template},
        });
        match store.create(&rst, &ns, rs, WriteOptions::default()) {
            Ok(created) => owned.push(created),
            Err(e) => tracing::warn!(deployment = %name, "creating ReplicaSet failed: {e}"),
        }
    }
    // Each ReplicaSet's pods, counted once: nothing below writes a pod (scaling writes
    // ReplicaSets, pruning deletes only ReplicaSets without pods, status writes the
    // Deployment), so the counts hold for the whole pass.
    let counts: BTreeMap<String, PodCounts> = owned
        .iter()
        .filter_map(|r| r["metadata"]["uid"].as_str())
        .map(|u| (u.to_string(), memo.counts(store, &ns, u)))
        .collect();
    let count_of = |r: &Value| -> PodCounts {
        r["metadata"]["uid"].as_str().and_then(|u| counts.get(u)).copied().unwrap_or_default()
    };
    let (new, old): (Vec<Arc<Value>>, Vec<Arc<Value>>) =
        owned.into_iter().partition(|r| r["metadata"]["name"] == new_name.as_str());
    let Some(new) = new.into_iter().next() else { return };
    let spec_replicas = |r: &Value| at(r, &["spec", "replicas"]).and_then(Value::as_i64).unwrap_or(0);
    let ready_of = |_: &Store, r: &Value| -> i64 { count_of(r).ready };
    let active_of = |_: &Store, r: &Value| -> i64 { count_of(r).active };

    if recreate {
        let old_pods: i64 = old.iter().map(|r| active_of(store, r)).sum();
        for r in &old {
            scale(store, r, 0);
        }
        if old_pods == 0 {
            scale(store, &new, replicas);
        }
    } else {
        let surge = int_or_percent(&d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], replicas, true, "25%");
        let unavailable =
            int_or_percent(&d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], replicas, false, "25%");
        let (surge, unavailable) = if surge == 0 && unavailable == 0 { (1, 0) } else { (surge, unavailable) };
        let old_total: i64 = old.iter().map(|r| spec_replicas(r)).sum();
        if old_total == 0 {
            scale(store, &new, replicas);
        } else {
            // Scale up the new ReplicaSet within the surge budget.
            let max_total = replicas + surge;
            let current_total = old_total + spec_replicas(&new);
            if current_total < max_total {
                let up = (spec_replicas(&new) + max_total - current_total).min(replicas);
                scale(store, &new, up);
            }
            // Scale down old ReplicaSets, as reconcileOldReplicaSets does: never below
            // `replicas - maxUnavailable` available pods, counting a ReplicaSet's pods only
            // up to its (possibly just lowered) spec, so pods already doomed by a scale-down
            // the ReplicaSet controller has not acted on yet are not spent twice.
            let min_available = replicas - unavailable;
            let current = |store: &Store, r: &Value| -> i64 {
                store
                    .get(&rst, &ns, r["metadata"]["name"].as_str().unwrap_or(""))
                    .map(|c| spec_replicas(&c))
                    .unwrap_or(0)
            };
            let available_of = |store: &Store, r: &Value| ready_of(store, r).min(current(store, r));
            let new_spec = current(store, &new);
            let all_pods: i64 = new_spec + old.iter().map(|r| current(store, r)).sum::<i64>();
            let new_unavailable = new_spec - available_of(store, &new);
            let mut max_scaled_down = all_pods - min_available - new_unavailable;
            if max_scaled_down > 0 {
                // Unhealthy old pods cost no availability: clean them up first.
                for r in &old {
                    let spec = current(store, r);
                    let unhealthy = (spec - available_of(store, r)).max(0).min(max_scaled_down);
                    if unhealthy > 0 {
                        scale(store, r, spec - unhealthy);
                        max_scaled_down -= unhealthy;
                    }
                }
                let available: i64 =
                    available_of(store, &new) + old.iter().map(|r| available_of(store, r)).sum::<i64>();
                let mut budget = (available - min_available).max(0);
                for r in &old {
                    let spec = current(store, r);
                    let down = spec.min(budget);
                    if down > 0 {
                        scale(store, r, spec - down);
                        budget -= down;
                    }
                }
            }
        }
    }
    prune_history(store, d, &old, &count_of);
    let new_ready = ready_of(store, &new);
    let total_active: i64 = active_of(store, &new) + old.iter().map(|r| active_of(store, r)).sum::<i64>();
    let total_ready: i64 = new_ready + old.iter().map(|r| ready_of(store, r)).sum::<i64>();
    let available = total_ready
        >= replicas - int_or_percent(&d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], replicas, false, "25%");
    let status = json!({
        "observedGeneration": d["metadata"]["generation"],
        "replicas": total_active,
        "updatedReplicas": active_of(store, &new),
        "readyReplicas": total_ready,
        "availableReplicas": total_ready,
        "unavailableReplicas": (replicas - total_ready).max(0),
        "conditions": [{"type": "Available", "status": if available { "True" } else { "False" },
                        "reason": if available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" }}],
    });
    let dt = ty(store, "apps", "deployments");
    if let Ok(current) = store.get(&dt, &ns, &name) {
        write_status(store, &dt, &current, status);
    }
}

fn scale(store: &mut Store, rs: &Value, replicas: i64) {
    let rst = ty(store, "apps", "replicasets");
    let ns = rs["metadata"]["namespace"].as_str().unwrap_or("");
    let name = rs["metadata"]["name"].as_str().unwrap_or("");
    let Ok(current) = store.get(&rst, ns, name) else { return };
    if at(&current, &["spec", "replicas"]).and_then(Value::as_i64) == Some(replicas) {
        return;
    }
    let mut new = (*current).clone();
    new["spec"]["replicas"] = json!(replicas);
    let _ = store.update(&rst, ns, name, new, Part::Main, WriteOptions::default());
}

/// Deletes empty old ReplicaSets beyond `revisionHistoryLimit`.
fn prune_history(store: &mut Store, d: &Value, old: &[Arc<Value>], count_of: &dyn Fn(&Value) -> PodCounts) {
    let limit =
        at(d, &["spec", "revisionHistoryLimit"]).and_then(Value::as_u64).map_or(DEFAULT_HISTORY, |l| l as usize);
    let rst = ty(store, "apps", "replicasets");
    let mut empty: Vec<&Value> = old
        .iter()
        .map(|r| &**r)
        .filter(|r| at(r, &["spec", "replicas"]).and_then(Value::as_i64) == Some(0) && count_of(r).all == 0)
        .collect();
    if empty.len() <= limit {
        return;
    }
    empty.sort_by_key(|r| r["metadata"]["creationTimestamp"].as_str().unwrap_or("").to_string());
    let excess = empty.len() - limit;
    for r in empty.into_iter().take(excess) {
        let ns = r["metadata"]["namespace"].as_str().unwrap_or("");
        let name = r["metadata"]["name"].as_str().unwrap_or("");
        let _ = store.delete(&rst, ns, name, &DeleteOptions::default());
    }
}
