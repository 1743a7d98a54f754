//! Termination (karpenter-behaviour.md §6): the two finalizers named `karpenter.sh/termination`.
//!
//! - [`node_claim`]: a deleting NodeClaim stamps its TerminationGracePeriod deadline, deletes its
//!   Node(s) and waits for them, terminates the instance and waits for the cloud to report it
//!   gone, then releases the claim (core `nodeclaim/lifecycle` finalize).
//! - [`node`]: a deleting Node taints itself `karpenter.sh/disrupted:NoSchedule`, [`drain`]s in
//!   tiers through the [`eviction`] queue (PDB-respecting, do-not-disrupt aware, forced by the
//!   TerminationGracePeriod), terminates the instance, then releases the Node (core
//!   `node/termination`).
//!
//! One [`Reconciler`] walks every deleting claim and Node in name order whenever a claim, node or
//! pod changes or a requeue deadline passes; the eviction queue runs as its own task, as in Karpenter. Volume
//! attachments are not awaited: the simulated cluster has no CSI attacher, so `VolumesDetached` is
//! set True once drained (a hook for VolumeAttachments belongs in `state` first).

pub mod drain;
pub mod eviction;
pub mod node;
pub mod node_claim;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::time::Instant;

use crate::apis::NodeClaim;
use crate::apis::condition::StatusConditions;
use crate::apis::labels::TERMINATION_FINALIZER;
use crate::cloudprovider::{CloudError, CloudProvider};
use crate::lifecycle::conditions::{INSTANCE_TERMINATING, set_condition};
use crate::runtime::reconcile::{self, Action, Env, Kind, Kinds, Reconciler};
use crate::runtime::{EventRecorder, SharedClock};
use crate::state::{Cluster, Snapshot};
pub use eviction::EvictionQueue;

/// Drain is reported done only once it has lasted this long, so a node whose pods vanish in the
/// first instant still gives watchers a moment to see it draining (core termination controller,
/// MinDrainTime).
pub const MIN_DRAIN_TIME: Duration = Duration::from_secs(5);
/// How soon a draining node is looked at again (core: `RequeueAfter: 1s`).
pub const DRAIN_REQUEUE: Duration = Duration::from_secs(1);
/// How often a terminating instance is polled until the cloud reports it gone (core: 5 s).
pub const INSTANCE_TERMINATION_REQUEUE: Duration = Duration::from_secs(5);
/// The longest the loop sleeps without a change or a deadline (a safety net, not a behaviour).
pub const IDLE_REQUEUE: Duration = Duration::from_secs(60);
const _: () = assert!(DRAIN_REQUEUE.as_secs() < MIN_DRAIN_TIME.as_secs());

/// Whether an object carries the termination finalizer.
pub fn has_termination_finalizer<K: ResourceExt>(object: &K) -> bool {
    object.finalizers().iter().any(|f| f == TERMINATION_FINALIZER)
}

/// Whether the instance behind a claim is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceState {
    /// The cloud reports NotFound (or the claim never got an instance).
    Terminated,
    /// Still there; look again after this long.
    Terminating(Duration),
}

/// The termination controller: both finalizers and the eviction queue.
#[derive(Clone)]
pub struct Termination {
    client: Client,
    cluster: Arc<Cluster>,
    cloud: Arc<dyn CloudProvider>,
    clock: SharedClock,
    events: EventRecorder,
    queue: EvictionQueue,
    /// Claim UID → when its instance may next be asked about (the 5 s requeue, kept per claim so
    /// change-driven passes do not hammer the cloud).
    polls: Arc<Mutex<BTreeMap<String, Instant>>>,
    /// UIDs of the claims whose termination timestamp this process wrote: the watch may
    /// deliver the annotated claim only after the next pass, which must not write the same
    /// annotation again (a patch that changes nothing).
    stamped: Arc<Mutex<BTreeSet<String>>>,
    /// Node name → when its NotReady instance may next be asked about ([`Termination::dead_instances`]).
    instance_checks: Arc<Mutex<BTreeMap<String, Instant>>>,
}

impl Termination {
    /// A termination controller. The eviction queue starts with [`Termination::run_in`].
    pub fn new(
        client: Client,
        cluster: Arc<Cluster>,
        cloud: Arc<dyn CloudProvider>,
        clock: SharedClock,
        events: EventRecorder,
    ) -> Self {
        let queue = EvictionQueue::new(client.clone(), cluster.clone(), clock.clone(), events.clone());
        Self {
            client,
            cluster,
            cloud,
            clock,
            events,
            queue,
            polls: Arc::default(),
            stamped: Arc::default(),
            instance_checks: Arc::default(),
        }
    }

    /// The eviction queue (for inspection).
    pub fn eviction_queue(&self) -> &EvictionQueue {
        &self.queue
    }

    /// Runs the eviction queue and the finalizer loop for ever, alone (as the termination tests
    /// do), in an [`Env::standalone`] made of its own clients.
    pub async fn run(self) {
        let env = Env::standalone(
            self.cluster.clone(),
            self.client.clone(),
            self.cloud.clone(),
            self.clock.clone(),
            self.events.clone(),
        );
        self.run_in(env).await;
    }

    /// Runs the eviction queue (as its own task) and the finalizer loop for ever in `env`.
    pub async fn run_in(self, env: Env) {
        tokio::spawn(self.queue.clone().run());
        reconcile::run(self, env).await;
    }

    /// One walk over every deleting NodeClaim and Node; returns the soonest requeue.
    pub async fn pass(&self, snapshot: &Snapshot) -> Option<Duration> {
        if !snapshot.is_synced() {
            return Some(DRAIN_REQUEUE);
        }
        let mut soonest: Option<Duration> = None;
        let mut requeue = |after: Option<Duration>| {
            if let Some(after) = after {
                soonest = Some(soonest.map_or(after, |s| s.min(after)));
            }
        };
        for claim in snapshot.node_claims.values() {
            if claim.metadata.deletion_timestamp.is_some() && has_termination_finalizer(claim.as_ref()) {
                requeue(self.finalize_node_claim(snapshot, claim).await);
            }
        }
        let dead = self.dead_instances(snapshot).await;
        for node in snapshot.nodes.values() {
            if node.metadata.deletion_timestamp.is_some() && has_termination_finalizer(node.as_ref()) {
                requeue(self.finalize_node(snapshot, node, &dead).await);
            }
        }
        soonest
    }

    /// Makes sure the claim's instance is being terminated and reports whether it is gone
    /// (core `nodeclaim/lifecycle` finalize): every call, at most every 5 s, asks the cloud to
    /// delete the instance, which reads it fresh from EC2 and terminates it unless it is already
    /// shutting down (aws `instance.go` `Delete`, `Get(SkipCache)`); the first success sets
    /// `InstanceTerminating=True`, NotFound means gone.
    pub async fn ensure_terminated(&self, claim: &NodeClaim) -> InstanceState {
        if claim.provider_id().is_none() {
            return InstanceState::Terminated;
        }
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let now = Instant::now();
        if let Some(due) = self.polls.lock().expect("polls").get(&uid).copied()
            && due > now
        {
            return InstanceState::Terminating(due - now);
        }
        let result = self.cloud.delete(claim).await;
        if result.is_ok()
            && !claim.is_condition_true(INSTANCE_TERMINATING)
            && let Err(error) = set_condition(
                &self.client,
                &self.clock,
                claim,
                INSTANCE_TERMINATING,
                crate::apis::condition::ConditionStatus::True,
                "InstanceTerminating",
                "",
                json!({}),
            )
            .await
        {
            tracing::debug!(nodeclaim = claim.name_any(), %error, "recording InstanceTerminating (will retry)");
        }
        match result {
            Err(CloudError::NotFound(_)) => {
                self.polls.lock().expect("polls").remove(&uid);
                InstanceState::Terminated
            }
            other => {
                if let Err(error) = other {
                    tracing::warn!(nodeclaim = claim.name_any(), %error, "terminating instance");
                }
                self.polls.lock().expect("polls").insert(uid, now + INSTANCE_TERMINATION_REQUEUE);
                InstanceState::Terminating(INSTANCE_TERMINATION_REQUEUE)
            }
        }
    }
}

impl Reconciler for Termination {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "termination"
    }

    fn watches(&self) -> Kinds {
        // Deleting claims and nodes, and the pods still draining off them.
        Kinds::of(&[Kind::NodeClaim, Kind::Node, Kind::Pod])
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, _env: &Env) -> Result<Action, Self::Error> {
        Ok(Action::requeue(self.pass(snapshot).await.unwrap_or(IDLE_REQUEUE)))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

/// Removes the termination finalizer from a cluster-scoped object with a merge patch guarded by
/// its resourceVersion (a concurrent writer makes this fail with 409 and the next pass retries).
/// NotFound counts as success.
///
/// # Errors
/// Any other API error.
pub async fn remove_finalizer<K>(client: &Client, object: &K) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let remaining: Vec<&String> = object.finalizers().iter().filter(|f| *f != TERMINATION_FINALIZER).collect();
    let patch = json!({"metadata": {"finalizers": remaining, "resourceVersion": object.resource_version()}});
    let api: Api<K> = Api::all(client.clone());
    match api.patch(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}
