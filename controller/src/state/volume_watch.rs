//! Watches PersistentVolumeClaims, PersistentVolumes and StorageClasses, started the first
//! time a pod mounts a claim.
//!
//! Upstream reads these kinds through controller-runtime's cached client
//! (`provisioning/scheduling/volumetopology.go` l. 144, 174, 193: `kubeClient.Get`), whose
//! informer for a kind starts on the first `Get` of that kind (controller-runtime
//! `pkg/cache/informer_cache.go` `Get` → `Informers.Get`): a cluster whose pods mount no
//! claim never lists or watches them. Starting the watchers when the first pod with a
//! `persistentVolumeClaim` volume appears does the same, so such a cluster's API traffic
//! is what it was before volumes were read. The Pod watcher itself starts them (a hook on
//! each pod it applies), rather than a task of their own woken by every pod change: an
//! extra task's polls would shift when the runtime polls its timers, and with it the
//! interleaving of every run. Until a kind has listed, a pod whose claim is
//! not in the state yet is skipped by the pass (upstream `getVolumeTopologyRequirements`
//! l. 603-605 logs and skips a pod whose requirements fail).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Client;

use super::watch::{Hook, spawn_named};
use super::{Cluster, Kind};

/// Names the volume kinds are marked synced under in [`Snapshot::synced`](super::Snapshot).
pub const VOLUME_KINDS: [&str; 3] = ["PersistentVolumeClaim", "PersistentVolume", "StorageClass"];

/// Whether the pod mounts a PersistentVolumeClaim: a `persistentVolumeClaim` volume, or a
/// generic `ephemeral` volume (whose claim `<pod>-<volume>` the ephemeral volume controller
/// makes; core `utils/volume/volume.go` `GetPersistentVolumeClaim` reads both).
pub fn mounts_claim(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .is_some_and(|v| v.iter().any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some()))
}

/// Starts the three volume watchers the first time its [`hook`](Self::hook) sees a pod
/// mounting a claim (the Pod watcher calls it with every pod it applies).
#[derive(Clone)]
pub struct VolumeWatchStarter {
    client: Client,
    cluster: Arc<Cluster>,
    seed: u64,
    started: Arc<AtomicBool>,
}

impl VolumeWatchStarter {
    /// A starter whose watchers draw their jitter from `seed`.
    pub fn new(client: &Client, cluster: &Arc<Cluster>, seed: u64) -> Self {
        Self { client: client.clone(), cluster: cluster.clone(), seed, started: Arc::new(AtomicBool::new(false)) }
    }

    /// The Pod watcher's hook.
    pub fn hook(&self) -> Hook<Pod> {
        let this = self.clone();
        Arc::new(move |pod: &Pod| {
            if !this.started.load(Ordering::Relaxed) && mounts_claim(pod) {
                this.started.store(true, Ordering::Relaxed);
                this.start();
            }
        })
    }

    fn start(&self) {
        let (client, cluster, seed) = (&self.client, &self.cluster, self.seed);
        let [claims, volumes, classes] = VOLUME_KINDS;
        spawn_named::<PersistentVolumeClaim>(
            client,
            cluster,
            Kind::Volume,
            claims,
            |s| &mut s.persistent_volume_claims,
            seed,
        );
        spawn_named::<PersistentVolume>(
            client,
            cluster,
            Kind::Volume,
            volumes,
            |s| &mut s.persistent_volumes,
            seed.wrapping_add(1),
        );
        spawn_named::<StorageClass>(
            client,
            cluster,
            Kind::Volume,
            classes,
            |s| &mut s.storage_classes,
            seed.wrapping_add(2),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::mounts_claim;

    #[test]
    fn only_claim_volumes_count() {
        let pod = |volumes: serde_json::Value| {
            serde_json::from_value(serde_json::json!({"spec": {"containers": [], "volumes": volumes}})).unwrap()
        };
        assert!(mounts_claim(&pod(serde_json::json!([{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]))));
        assert!(mounts_claim(&pod(
            serde_json::json!([{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
        )));
        assert!(!mounts_claim(&pod(serde_json::json!([{"name": "t", "emptyDir": {}}]))));
        assert!(!mounts_claim(&pod(serde_json::json!([]))));
    }
}
