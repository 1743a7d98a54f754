//! Pod garbage collection: pods bound to a node that no longer exists are force-deleted,
//! as kube-controller-manager's PodGC does, so their owners recreate them elsewhere.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use super::runtime::Reconciler;
use crate::apiserver::store::{DeleteOptions, Store};

/// kube-controller-manager's PodGC (orphaned pods).
#[derive(Default)]
pub struct PodGc;

impl Reconciler for PodGc {
    fn name(&self) -> &'static str {
        "pod-gc"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("", "nodes"), ("", "pods")]
    }

    fn reconcile(&mut self, store: &mut Store, _now: Duration) -> Option<Duration> {
        let pods_t = store.registry().get("", "pods").expect("built in");
        let nodes_t = store.registry().get("", "nodes").expect("built in");
        let nodes: BTreeSet<String> =
            store.iter(&nodes_t.key(), None).filter_map(|n| n["metadata"]["name"].as_str().map(String::from)).collect();
        let orphans: Vec<(String, String)> = store
            .iter(&pods_t.key(), None)
            .filter(|p| {
                p.get("spec")
                    .and_then(|s| s.get("nodeName"))
                    .and_then(Value::as_str)
                    .is_some_and(|n| !n.is_empty() && !nodes.contains(n))
            })
            .map(|p| {
                (
                    p["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
                    p["metadata"]["name"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        for (ns, name) in orphans {
            let opts = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
            let _ = store.delete(&pods_t, &ns, &name, &opts);
        }
        None
    }
}
