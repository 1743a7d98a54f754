//! The eviction queue (core `terminator/eviction.go`): pods handed over by drain are evicted
//! through the Eviction API (`policy/v1`, with a UID precondition so a recreated pod of the same
//! name is never evicted by mistake). 404 and 409 mean the pod is gone or replaced, so the item is
//! done; 429 (a PodDisruptionBudget says no) and 500 (more than one PDB) publish `FailedDraining`
//! and retry the pod with a per-pod exponential backoff of 100 ms → 10 s. Pods with an active
//! `karpenter.sh/do-not-disrupt` are never evicted: they wait in the queue (with backoff) until
//! the annotation goes, the pod ends, or the TerminationGracePeriod force-delete takes them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, EvictParams, Preconditions};
use kube::{Api, Client};
use tokio::time::Instant;

use super::drain::has_active_do_not_disrupt;
use crate::provisioning::pending::is_terminal;
use crate::runtime::{Event, EventRecorder, EventType, SharedClock};
use crate::state::Cluster;

/// First retry delay of a pod whose eviction failed (core: the queue's per-item rate limiter).
pub const EVICTION_BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Longest retry delay.
pub const EVICTION_BACKOFF_MAX: Duration = Duration::from_secs(10);
/// Evictions one queue pass performs at most before yielding, so a huge drain cannot starve the
/// runtime; the rest are due immediately and run on the next pass.
pub const EVICTIONS_PER_PASS_MAX: usize = 100;

const _: () = assert!(EVICTION_BACKOFF_MIN.as_millis() < EVICTION_BACKOFF_MAX.as_millis());

/// The per-pod retry delay: doubles from [`EVICTION_BACKOFF_MIN`] up to [`EVICTION_BACKOFF_MAX`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Records a failure and returns how long to wait before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let exponent = self.failures.min(16);
        self.failures = self.failures.saturating_add(1);
        EVICTION_BACKOFF_MIN.saturating_mul(1 << exponent).min(EVICTION_BACKOFF_MAX)
    }
}

/// A queued pod: `namespace`, `name` and the UID drain saw.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID (the eviction precondition).
    pub uid: String,
}

impl PodKey {
    /// The key of `pod`.
    pub fn of(pod: &Pod) -> Self {
        Self {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
        }
    }
}

#[derive(Debug)]
struct Item {
    node: String,
    due: Instant,
    backoff: Backoff,
}

/// How one eviction attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Evicted, or gone already (404), or replaced by a pod with another UID (409).
    Done,
    /// Refused or failed; try again after the backoff. The string says why.
    Retry(String),
}

/// What one API error means for the queue (core `Queue.Evict`).
pub fn classify(error: &kube::Error) -> Outcome {
    match error {
        kube::Error::Api(status) => match status.code {
            404 | 409 => Outcome::Done,
            429 => Outcome::Retry("evicting pod violates a PDB".into()),
            500 => Outcome::Retry("evicting pod violates multiple PDBs".into()),
            code => Outcome::Retry(format!("eviction failed ({code}): {}", status.message)),
        },
        other => Outcome::Retry(format!("eviction failed: {other}")),
    }
}

/// The eviction queue. Cheap to clone; [`EvictionQueue::run`] is its worker.
#[derive(Clone)]
pub struct EvictionQueue {
    client: Client,
    cluster: Arc<Cluster>,
    clock: SharedClock,
    events: EventRecorder,
    items: Arc<Mutex<BTreeMap<PodKey, Item>>>,
    wake: Arc<tokio::sync::Notify>,
}

impl EvictionQueue {
    /// An empty queue.
    pub fn new(client: Client, cluster: Arc<Cluster>, clock: SharedClock, events: EventRecorder) -> Self {
        Self { client, cluster, clock, events, items: Arc::default(), wake: Arc::default() }
    }

    /// Enqueues pods of `node` (a pod already queued keeps its place and backoff).
    pub fn add<'a>(&self, node: &str, pods: impl IntoIterator<Item = &'a Pod>) {
        let now = Instant::now();
        let mut added = false;
        {
            let mut items = self.items.lock().expect("eviction queue");
            for pod in pods {
                items.entry(PodKey::of(pod)).or_insert_with(|| {
                    added = true;
                    Item { node: node.to_string(), due: now, backoff: Backoff::default() }
                });
            }
        }
        if added {
            self.wake.notify_one();
        }
    }

    /// Whether `pod` is queued.
    pub fn contains(&self, pod: &Pod) -> bool {
        self.items.lock().expect("eviction queue").contains_key(&PodKey::of(pod))
    }

    /// How many pods are queued.
    pub fn len(&self) -> usize {
        self.items.lock().expect("eviction queue").len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Evicts queued pods as they come due, for ever.
    pub async fn run(self) {
        loop {
            let next = self.pass().await;
            let notified = self.wake.notified();
            match next {
                Some(at) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Attempts every due item once (in key order); returns when the next item is due.
    pub async fn pass(&self) -> Option<Instant> {
        let now = Instant::now();
        let due: Vec<(PodKey, String)> = {
            let items = self.items.lock().expect("eviction queue");
            items
                .iter()
                .filter(|(_, item)| item.due <= now)
                .take(EVICTIONS_PER_PASS_MAX)
                .map(|(key, item)| (key.clone(), item.node.clone()))
                .collect()
        };
        for (key, node) in due {
            let outcome = self.attempt(&key, &node).await;
            let mut items = self.items.lock().expect("eviction queue");
            match outcome {
                Outcome::Done => {
                    items.remove(&key);
                }
                Outcome::Retry(reason) => {
                    if let Some(item) = items.get_mut(&key) {
                        let delay = item.backoff.next_delay();
                        item.due = Instant::now() + delay;
                        tracing::debug!(pod = %key.name, namespace = %key.namespace, %reason, ?delay, "eviction retry");
                    }
                }
            }
        }
        self.items.lock().expect("eviction queue").values().map(|item| item.due).min()
    }

    /// One eviction attempt for `key`.
    async fn attempt(&self, key: &PodKey, node: &str) -> Outcome {
        let snapshot = self.cluster.snapshot();
        let current = snapshot.pods.get(&format!("{}/{}", key.namespace, key.name));
        match current {
            // Gone, or replaced by a pod with another UID: nothing of ours left to evict.
            None => return Outcome::Done,
            Some(pod) if pod.metadata.uid.as_deref() != Some(key.uid.as_str()) => return Outcome::Done,
            Some(pod) if is_terminal(pod) || pod.metadata.deletion_timestamp.is_some() => return Outcome::Done,
            Some(pod) if has_active_do_not_disrupt(pod, self.clock.now()) => {
                return Outcome::Retry("pod has an active karpenter.sh/do-not-disrupt annotation".into());
            }
            Some(_) => {}
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &key.namespace);
        let params = EvictParams {
            delete_options: Some(DeleteParams {
                preconditions: Some(Preconditions { uid: Some(key.uid.clone()), resource_version: None }),
                ..DeleteParams::default()
            }),
            ..EvictParams::default()
        };
        match api.evict(&key.name, &params).await {
            Ok(_) => {
                tracing::info!(pod = %key.name, namespace = %key.namespace, node, "evicted pod");
                if let Some(pod) = current {
                    self.events.publish(
                        Event::about(pod.as_ref(), EventType::Normal, "Evicted", "Evicted pod").deduped_by_name(),
                    );
                }
                Outcome::Done
            }
            Err(error) => {
                let outcome = classify(&error);
                if let (Outcome::Retry(reason), Some(node_obj)) = (&outcome, snapshot.nodes.get(node))
                    && matches!(&error, kube::Error::Api(s) if s.code == 429 || s.code == 500)
                {
                    self.events.publish(
                        Event::about(
                            node_obj.as_ref(),
                            EventType::Warning,
                            "FailedDraining",
                            format!("Failed to drain node, {reason} ({}/{})", key.namespace, key.name),
                        )
                        .deduped_by_name(),
                    );
                }
                outcome
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_100ms_and_caps_at_10s() {
        let mut backoff = Backoff::default();
        let delays: Vec<u128> = (0..10).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
        for _ in 0..100 {
            assert_eq!(backoff.next_delay(), EVICTION_BACKOFF_MAX);
        }
    }

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status { code, message: "m".into(), ..kube::core::Status::default() }))
    }

    #[test]
    fn gone_and_replaced_pods_are_done_and_budget_refusals_retry() {
        assert_eq!(classify(&api_error(404)), Outcome::Done);
        assert_eq!(classify(&api_error(409)), Outcome::Done);
        assert!(matches!(classify(&api_error(429)), Outcome::Retry(r) if r.contains("PDB")));
        assert!(matches!(classify(&api_error(500)), Outcome::Retry(r) if r.contains("multiple PDBs")));
        assert!(matches!(classify(&api_error(503)), Outcome::Retry(_)));
    }
}
