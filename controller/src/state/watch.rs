//! Feeds [`Cluster`] from the API server with kube-runtime watchers, one task per kind.
//!
//! Initial lists are buffered and swapped in whole at `InitDone`, so a relist after a 410 never
//! shows a half-empty map; the kind is marked synced at its first `InitDone`. Watch errors are
//! retried with kube-runtime's default backoff schedule, its jitter seeded from the controller's
//! injected RNG (see [`watch_backoff`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::utils::ResetTimerBackoff;
use kube::runtime::watcher::{self, Event, ExponentialBackoff};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::{Cluster, Kind, Snapshot, key_of};

pub(super) type MapOf<K> = fn(&mut Snapshot) -> &mut BTreeMap<String, Arc<K>>;

/// kube-runtime's `DefaultBackoff` schedule (`watcher.rs`: 800 ms doubling to 30 s, with
/// jitter, reset after 120 s without an error), but with the jitter drawn from `seed`.
///
/// `default_backoff()` seeds its jitter by forking the thread-local `fastrand` generator
/// (backon `ExponentialBuilder::build` without a seed). That generator is shared with the
/// AWS SDK, whose every operation draws an invocation id from it inside a `debug_span!`
/// field, evaluated only when that span is enabled or no tracing subscriber is installed
/// (aws-sdk-ec2 `operation/*.rs` `sdk_invocation_id`). So how many values had been drawn
/// before a watch error, and with them the retry delay, depended on the log filter: with
/// `RUST_LOG=info` the same seed made 5 launches in apiserver-brownout instead of 8. Seeded
/// from the injected RNG, the schedule depends on nothing else (on EKS the RNG is seeded
/// from the OS, so replicas and watchers still spread out). A reset restarts the seeded
/// sequence, which is still jittered across watchers and replicas.
pub(crate) fn watch_backoff(seed: u64) -> ResetTimerBackoff<ExponentialBackoff> {
    let schedule = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(800))
        .with_max_delay(Duration::from_secs(30))
        .with_factor(2.0)
        .without_max_times()
        .with_jitter()
        .with_jitter_seed(seed);
    ResetTimerBackoff::new(ExponentialBackoff::from(schedule), Duration::from_secs(120))
}

pub(super) fn spawn<K>(client: &Client, cluster: &Arc<Cluster>, kind: Kind, map: MapOf<K>, jitter_seed: u64)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    spawn_with(client, cluster, kind, kind.as_str(), map, jitter_seed, None);
}

/// Called with every object a watcher applies (listed or changed).
pub(super) type Hook<K> = Arc<dyn Fn(&K) + Send + Sync>;

/// [`spawn`], with the name the kind is marked synced under (several Kubernetes kinds may
/// announce one [`Kind`]: claims, volumes and storage classes are all [`Kind::Volume`]).
pub(super) fn spawn_named<K>(
    client: &Client,
    cluster: &Arc<Cluster>,
    kind: Kind,
    name: &'static str,
    map: MapOf<K>,
    jitter_seed: u64,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    spawn_with(client, cluster, kind, name, map, jitter_seed, None);
}

/// [`spawn_named`], calling `hook` with every object applied.
pub(super) fn spawn_with<K>(
    client: &Client,
    cluster: &Arc<Cluster>,
    kind: Kind,
    name: &'static str,
    map: MapOf<K>,
    jitter_seed: u64,
    hook: Option<Hook<K>>,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let api: Api<K> = Api::all(client.clone());
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default()).backoff(watch_backoff(jitter_seed)).boxed();
        let mut buffer: BTreeMap<String, Arc<K>> = BTreeMap::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Init) => buffer.clear(),
                Ok(Event::InitApply(object)) => {
                    if let Some(hook) = &hook {
                        hook(&object);
                    }
                    buffer.insert(key_of(&object), Arc::new(object));
                }
                Ok(Event::InitDone) => {
                    let listed = std::mem::take(&mut buffer);
                    cluster.update(kind, |s| {
                        *map(s) = listed;
                        s.synced.insert(name);
                    });
                }
                Ok(Event::Apply(object)) => {
                    if let Some(hook) = &hook {
                        hook(&object);
                    }
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
                Err(error) => tracing::warn!(kind = name, %error, "watch failed, retrying"),
            }
        }
    });
}
