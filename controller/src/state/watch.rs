//! Feeds [`Cluster`] from the API server with kube-runtime watchers, one task per kind.
//!
//! Initial lists are buffered and swapped in whole at `InitDone`, so a relist after a 410 never
//! shows a half-empty map; the kind is marked synced at its first `InitDone`. Watch errors are
//! retried with kube-runtime's default backoff (tokio time, seeded jitter).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::{Cluster, Kind, Snapshot, key_of};
use crate::apis::{EC2NodeClass, NodeClaim, NodePool};

type MapOf<K> = fn(&mut Snapshot) -> &mut BTreeMap<String, Arc<K>>;

/// Starts one watcher task per kind on the current runtime.
pub fn spawn_watchers(client: &Client, cluster: &Arc<Cluster>) {
    spawn::<Pod>(client, cluster, Kind::Pod, |s| &mut s.pods);
    spawn::<Node>(client, cluster, Kind::Node, |s| &mut s.nodes);
    spawn::<NodeClaim>(client, cluster, Kind::NodeClaim, |s| &mut s.node_claims);
    spawn::<NodePool>(client, cluster, Kind::NodePool, |s| &mut s.node_pools);
    spawn::<EC2NodeClass>(client, cluster, Kind::NodeClass, |s| &mut s.node_classes);
    spawn::<PodDisruptionBudget>(client, cluster, Kind::PodDisruptionBudget, |s| &mut s.pdbs);
    spawn::<DaemonSet>(client, cluster, Kind::DaemonSet, |s| &mut s.daemon_sets);
}

fn spawn<K>(client: &Client, cluster: &Arc<Cluster>, kind: Kind, map: MapOf<K>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let api: Api<K> = Api::all(client.clone());
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default()).default_backoff().boxed();
        let mut buffer: BTreeMap<String, Arc<K>> = BTreeMap::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Init) => buffer.clear(),
                Ok(Event::InitApply(object)) => {
                    buffer.insert(key_of(&object), Arc::new(object));
                }
                Ok(Event::InitDone) => {
                    let listed = std::mem::take(&mut buffer);
                    cluster.update(kind, |s| {
                        *map(s) = listed;
                        s.synced.insert(kind.as_str());
                    });
                }
                Ok(Event::Apply(object)) => {
                    let key = key_of(&object);
                    cluster.update(kind, |s| {
                        map(s).insert(key, Arc::new(object));
                    });
                }
                Ok(Event::Delete(object)) => {
                    let key = key_of(&object);
                    cluster.update(kind, |s| {
                        map(s).remove(&key);
                    });
                }
                Err(error) => tracing::warn!(kind = kind.as_str(), %error, "watch failed, retrying"),
            }
        }
    });
}
