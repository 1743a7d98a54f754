//! [`PodCounts`] kept between passes while an owner's pods are unchanged.
//!
//! The Deployment and ReplicaSet controllers reconcile every object they own on every
//! pass, and a pass runs whenever any pod of theirs changes (at reference scale, thousands
//! of times an hour). Counting a ReplicaSet's pods walks all of them and reads their
//! ownerReferences, phase and conditions: on the 200-node reference scenario that was a
//! fifth of the whole run's CPU (docs/benchmarks-measured.md, Session 20). The store says
//! which state an owner's dependents are in ([`Store::dependents_version`]: the
//! resourceVersion of the last write to any of them), so a count is recomputed only when
//! that moved. The answer is the one a fresh walk gives: same objects, same count.

use std::collections::BTreeMap;

use super::pods::{PodCounts, pod_counts};
use crate::apiserver::store::Store;

/// The last count of each (namespace, owner uid), with the dependents' version it was
/// taken at.
#[derive(Default)]
pub(crate) struct CountsMemo {
    counts: BTreeMap<(String, String), (u64, PodCounts)>,
}

impl CountsMemo {
    /// [`pod_counts`] of the pods in `namespace` controlled by `owner_uid`, walked again
    /// only if one of the owner's dependents was written since the last walk.
    pub(crate) fn counts(&mut self, store: &Store, namespace: &str, owner_uid: &str) -> PodCounts {
        let Some(version) = store.dependents_version(owner_uid) else {
            // No dependents at all: nothing to count, and nothing worth keeping.
            self.counts.remove(&(namespace.to_string(), owner_uid.to_string()));
            return PodCounts::default();
        };
        let key = (namespace.to_string(), owner_uid.to_string());
        if let Some((at, counts)) = self.counts.get(&key)
            && *at == version
        {
            return *counts;
        }
        let counts = pod_counts(store, namespace, owner_uid);
        self.counts.insert(key, (version, counts));
        counts
    }

    /// Forgets the owners not in `live` (ReplicaSets deleted since), so the memo stays the
    /// size of the cluster.
    pub(crate) fn retain(&mut self, live: &std::collections::BTreeSet<&str>) {
        self.counts.retain(|(_, uid), _| live.contains(uid.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::apiserver::store::{StoreConfig, WriteOptions};
    use dovetail_world::clock::Clock;
    use dovetail_world::rng::derive_rng;
    use dovetail_world::trace::Trace;

    /// A pod controlled by `owner` (an existing object's uid: a pod whose owners are all
    /// missing is garbage-collected at creation).
    fn pod(name: &str, owner: &str, phase: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default",
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                                 "uid": owner, "controller": true}]},
               "spec": {"containers": [{"name": "c", "image": "i"}]},
               "status": {"phase": phase}})
    }

    /// Every answer equals a fresh walk's, through creations, status changes and deletions.
    #[test]
    fn memo_answers_what_a_walk_answers() {
        let mut store = Store::new(
            Clock::Fixed(std::time::Duration::ZERO),
            derive_rng(1, "test"),
            Trace::new(),
            StoreConfig::default(),
        );
        let pods = store.registry().get("", "pods").expect("pods");
        let namespaces = store.registry().get("", "namespaces").expect("namespaces");
        let owner = store.get(&namespaces, "", "default").expect("default")["metadata"]["uid"]
            .as_str()
            .expect("uid")
            .to_string();
        let owner = owner.as_str();
        let mut memo = CountsMemo::default();
        let check = |memo: &mut CountsMemo, store: &Store| {
            assert_eq!(memo.counts(store, "default", owner), pod_counts(store, "default", owner));
        };
        check(&mut memo, &store);
        store.create(&pods, "default", pod("a", owner, "Pending"), WriteOptions::default()).expect("a");
        check(&mut memo, &store);
        check(&mut memo, &store);
        store.create(&pods, "default", pod("b", owner, "Running"), WriteOptions::default()).expect("b");
        check(&mut memo, &store);
        let a: Arc<serde_json::Value> = store.get(&pods, "default", "a").expect("a");
        let mut done = (*a).clone();
        done["status"]["phase"] = json!("Succeeded");
        store
            .update(&pods, "default", "a", done, crate::apiserver::store::Part::Status, WriteOptions::default())
            .expect("update");
        check(&mut memo, &store);
        assert_eq!(memo.counts(&store, "default", owner).active, 1);
        store.delete(&pods, "default", "b", &Default::default()).expect("delete");
        check(&mut memo, &store);
    }
}
