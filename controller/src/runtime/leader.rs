//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does it
//! for controller-runtime (and so for Karpenter): only the replica holding the Lease runs the
//! controllers, it renews every [`RETRY_PERIOD`], gives up if it cannot renew within
//! [`RENEW_DEADLINE`], and another replica takes over once the Lease has gone unrenewed for
//! [`LEASE_DURATION`] *as that replica observed it* (its own `tokio::time`, so clock skew between
//! replicas cannot cause two leaders). Timestamps written into the Lease come from the injected
//! [`Clock`](super::Clock).
//!
//! The renew deadline is shorter than the lease duration, so a leader that cannot reach the API
//! server stops (its [`Leadership::lost`] resolves) before anyone else may start.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::clock::SharedClock;
use super::flags::DEFAULT_LEADER_ELECTION_NAME;

/// How long a Lease is valid after its last renewal (controller-runtime's default).
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps retrying a renewal before giving up leadership.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// The pause between acquisition attempts and between renewals.
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

// A leader must give up before a follower may take over.
const _: () = assert!(RENEW_DEADLINE.as_secs() < LEASE_DURATION.as_secs());
const _: () = assert!(RETRY_PERIOD.as_secs() < RENEW_DEADLINE.as_secs());

/// Which Lease, who we are, and the timings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// The Lease's name (`karpenter-leader-election`).
    pub name: String,
    /// The Lease's namespace (the controller's).
    pub namespace: String,
    /// This replica's identity, unique among replicas (`<pod>_<random>`).
    pub identity: String,
    /// See [`LEASE_DURATION`].
    pub lease_duration: Duration,
    /// See [`RENEW_DEADLINE`].
    pub renew_deadline: Duration,
    /// See [`RETRY_PERIOD`].
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// Karpenter's Lease name and controller-runtime's timings.
    pub fn new(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            name: DEFAULT_LEADER_ELECTION_NAME.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
        }
    }
}

/// The Lease record as last read, and when (in this process's time) it last changed.
#[derive(Clone, Debug)]
struct Observed {
    spec: LeaseSpec,
    at: Instant,
}

/// A candidate for leadership.
pub struct LeaderElection {
    api: Api<Lease>,
    clock: SharedClock,
    config: LeaderElectionConfig,
    observed: Option<Observed>,
}

impl std::fmt::Debug for LeaderElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElection").field("config", &self.config).finish_non_exhaustive()
    }
}

fn lease_seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

impl LeaderElection {
    /// A candidate for the Lease in `config`.
    pub fn new(client: kube::Client, clock: SharedClock, config: LeaderElectionConfig) -> Self {
        let api = Api::namespaced(client, &config.namespace);
        Self { api, clock, config, observed: None }
    }

    /// Waits until this replica holds the Lease, retrying every retry period, then keeps
    /// renewing it in a background task until the returned [`Leadership`] is released, dropped
    /// or lost.
    pub async fn acquire(mut self) -> Leadership {
        tracing::info!(lease = %self.config.name, namespace = %self.config.namespace, identity = %self.config.identity, "attempting to acquire leader lease");
        loop {
            match tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => break,
                Ok(Ok(false)) => {}
                Ok(Err(e)) => tracing::warn!("leader election: {e}"),
                Err(_) => tracing::warn!("leader election: API server did not answer within the renew deadline"),
            }
            tokio::time::sleep(self.config.retry_period).await;
        }
        tracing::info!(identity = %self.config.identity, "acquired leader lease");
        let (lost_tx, lost_rx) = watch::channel(None);
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(self.renew_until_lost_or_stopped(lost_tx, stop_rx));
        Leadership { lost: lost_rx, stop: stop_tx, task: Some(task) }
    }

    async fn renew_until_lost_or_stopped(
        mut self,
        lost: watch::Sender<Option<String>>,
        mut stop: watch::Receiver<bool>,
    ) {
        loop {
            tokio::select! {
                biased;
                changed = stop.changed() => {
                    // A send is `release()`; a dropped sender is a dropped `Leadership`,
                    // which leaves the Lease to expire.
                    if changed.is_ok() {
                        self.release().await;
                    }
                    return;
                }
                () = tokio::time::sleep(self.config.retry_period) => {}
            }
            let retry_period = self.config.retry_period;
            let renew_deadline = self.config.renew_deadline;
            let round = async {
                loop {
                    match self.try_acquire_or_renew().await {
                        Ok(true) => return,
                        Ok(false) => tracing::warn!("leader lease is held by another replica"),
                        Err(e) => tracing::warn!("failed to renew leader lease: {e}"),
                    }
                    tokio::time::sleep(retry_period).await;
                }
            };
            if tokio::time::timeout(renew_deadline, round).await.is_err() {
                let reason = format!(
                    "failed to renew lease {}/{} within {:?}",
                    self.config.namespace, self.config.name, self.config.renew_deadline
                );
                tracing::error!("{reason}");
                let _ = lost.send(Some(reason));
                return;
            }
        }
    }

    /// One client-go `tryAcquireOrRenew`: `Ok(true)` when this replica holds the Lease after it.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = MicroTime(self.clock.now());
        let me = self.config.identity.clone();
        let duration_seconds = lease_seconds(self.config.lease_duration);
        let desired = |previous: Option<&LeaseSpec>| {
            let (acquire_time, transitions) = match previous {
                Some(p) if p.holder_identity.as_deref() == Some(me.as_str()) => {
                    (p.acquire_time.clone(), p.lease_transitions.unwrap_or(0))
                }
                Some(p) => (Some(now.clone()), p.lease_transitions.unwrap_or(0).saturating_add(1)),
                None => (Some(now.clone()), 0),
            };
            LeaseSpec {
                holder_identity: Some(me.clone()),
                lease_duration_seconds: Some(duration_seconds),
                acquire_time,
                renew_time: Some(now.clone()),
                lease_transitions: Some(transitions),
                ..LeaseSpec::default()
            }
        };
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(desired(None)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(created.spec.unwrap_or_default(), true);
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let current = lease.spec.clone().unwrap_or_default();
        self.observe(current.clone(), false);
        let holder = current.holder_identity.as_deref().unwrap_or_default();
        if !holder.is_empty() && holder != me && !self.expired(&current) {
            return Ok(false);
        }
        lease.spec = Some(desired(Some(&current)));
        match self.api.replace(&self.config.name, &PostParams::default(), &lease).await {
            Ok(updated) => {
                if holder != me {
                    tracing::info!(previous = %holder, "took over leader lease");
                }
                self.observe(updated.spec.unwrap_or_default(), true);
                Ok(true)
            }
            // Someone else wrote it first; re-read on the next attempt.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Records `spec`; its observation time moves only when it changed (or we wrote it).
    fn observe(&mut self, spec: LeaseSpec, wrote: bool) {
        let changed = self.observed.as_ref().is_none_or(|o| o.spec != spec);
        if changed || wrote {
            self.observed = Some(Observed { spec, at: Instant::now() });
        }
    }

    /// Whether the holder of `spec` has let it lapse, judged by when we saw it last change.
    fn expired(&self, spec: &LeaseSpec) -> bool {
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.config.lease_duration, Duration::from_secs);
        self.observed.as_ref().is_none_or(|o| o.at + duration <= Instant::now())
    }

    /// Gives the Lease up (client-go's `ReleaseOnCancel`, which Karpenter enables) so a
    /// successor need not wait for it to expire. Best-effort: failures are logged.
    async fn release(&mut self) {
        let attempt = async {
            let Some(mut lease) = self.api.get_opt(&self.config.name).await? else { return Ok(()) };
            let Some(spec) = lease.spec.as_mut() else { return Ok(()) };
            if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                return Ok(());
            }
            let now = MicroTime(self.clock.now());
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(now.clone());
            spec.acquire_time = Some(now);
            self.api.replace(&self.config.name, &PostParams::default(), &lease).await.map(|_| ())
        };
        match tokio::time::timeout(self.config.renew_deadline, attempt).await {
            Ok(Ok(())) => tracing::info!("released leader lease"),
            Ok(Err(e)) => tracing::warn!("failed to release leader lease: {e}"),
            Err(_) => tracing::warn!("failed to release leader lease: API server did not answer"),
        }
    }
}

/// Held while this replica is the leader. Dropping it stops renewal without releasing the
/// Lease (others take over after it expires); [`Leadership::release`] hands it over at once.
#[derive(Debug)]
pub struct Leadership {
    lost: watch::Receiver<Option<String>>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Leadership {
    /// Resolves, with the reason, when renewal failed and this replica must stop acting as
    /// leader (the binary exits non-zero, like controller-runtime).
    pub async fn lost(&mut self) -> String {
        match self.lost.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "leader election task ended".into(),
        }
    }

    /// Stops renewing and releases the Lease so another replica can take over at once.
    pub async fn release(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
