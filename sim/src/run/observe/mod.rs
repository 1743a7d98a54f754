//! The run's one observation pass. Once per simulated second the [`Observer`] reads the
//! API server's store and the fake cloud, once, and feeds what it read to both consumers:
//! the invariant checker (a [`Observation`] per tick) and the report (how long pods waited
//! for a node, why each NodeClaim was disrupted, which instances were interrupted), and,
//! when asked, to the HTML timeline's recorder ([`crate::timeline::record`]).

pub mod disruption_reason;
pub mod pending;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::FakeCloud;
use dovetail_fakecloud::cloud::{SharedCloud, lock};
use serde_json::Value;

use crate::apiserver::ApiServer;
use crate::apiserver::store::Store;
use crate::invariants::{Checker, InvariantsReport, Observation};
use crate::oracle::moves::MoveInputs;
use crate::oracle::view::{self, PodView, StoreReadings, View};
use crate::timeline::record::Recorder;
use disruption_reason::disruption_reason;
use pending::{PendingClock, PendingStats, PendingTracker};

/// Observations so far.
pub struct Observer {
    /// Pods at the last store change, and the resourceVersion they were read at.
    pods: Vec<PodView>,
    pods_rv: Option<u64>,
    /// The checker's last view of the store and cloud, refreshed each tick (re-read from
    /// the store only when it changed: [`View::refresh`]).
    view: View,
    /// What `view` was last read from (each Event's reading, each NodeClaim's and Node's
    /// object), so a store write re-decodes only what it replaced.
    readings: StoreReadings,
    /// What the moves oracle read from the store, and the resourceVersion it was read at.
    inputs: Option<(u64, MoveInputs)>,
    /// How long pods waited for a node.
    pending: PendingTracker,
    /// NodeClaims seen deleting, with the reason.
    disrupted: BTreeMap<String, String>,
    /// Instances that got a spot interruption warning or were stopped by an outage.
    interrupted: BTreeSet<String>,
    /// The timeline's recorder, when the run records one.
    timeline: Option<Recorder>,
}

impl Observer {
    /// An observer of a world with or without a `cloud`. Pending times run from creation
    /// where there is a cloud (and so a scheduler and nodes), else from the first tick
    /// that saw the pod (see [`PendingClock`]).
    pub fn new(cloud: Option<&SharedCloud>) -> Self {
        let clock = if cloud.is_some() { PendingClock::FromCreation } else { PendingClock::FromFirstSeen };
        Self::with_clock(clock)
    }

    /// Has the oracles price offerings through the store's NodeOverlays (the controller runs
    /// with the `NodeOverlay` gate on): [`crate::oracle::node_overlay`].
    pub fn price_through_node_overlays(&mut self) {
        self.view.overlays = std::sync::Arc::new(crate::oracle::node_overlay::NodeOverlays::enabled());
    }

    /// An observer whose pending times run by `clock`.
    pub fn with_clock(clock: PendingClock) -> Self {
        Self {
            pods: Vec::new(),
            pods_rv: None,
            view: View::default(),
            readings: StoreReadings::default(),
            inputs: None,
            pending: PendingTracker::new(clock),
            disrupted: BTreeMap::new(),
            interrupted: BTreeSet::new(),
            timeline: None,
        }
    }

    /// Also records the run's timeline from now on (see [`Observer::take_timeline`]).
    pub fn record_timeline(&mut self) {
        self.timeline = Some(Recorder::new());
    }

    /// The timeline recorded so far, if [`Observer::record_timeline`] asked for one.
    pub fn take_timeline(&mut self) -> Option<Recorder> {
        self.timeline.take()
    }

    /// Reads the world at `now` and hands the reading to `checker`, if the run has one
    /// (it needs `cloud`).
    pub fn sample(
        &mut self,
        server: &ApiServer,
        cloud: Option<&SharedCloud>,
        checker: Option<&mut Checker>,
        now: Duration,
    ) {
        let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        let pods_changed = self.read_pods(&store, now);
        self.sample_claims(&store, now);
        let Some(cloud) = cloud else { return };
        let cloud = lock(cloud);
        self.sample_instances(&cloud);
        if checker.is_none() && self.timeline.is_none() {
            return;
        }
        self.view.refresh(&store, &cloud, now, &mut self.readings);
        let inputs = read_inputs(&mut self.inputs, &store);
        drop(store);
        if let Some(timeline) = self.timeline.as_mut() {
            timeline.sample(&self.view, &self.pods, &cloud, &inputs.overhead);
        }
        if let Some(checker) = checker {
            checker.tick(&Observation { view: &self.view, pods: &self.pods, pods_changed, cloud: &cloud, inputs });
        }
    }

    /// The checker's last reading at the end of the run (`now`), and its final judgement.
    /// The report's disruption and interruption counts stay as the last tick left them.
    pub fn judge(
        &mut self,
        server: &ApiServer,
        cloud: &SharedCloud,
        mut checker: Checker,
        now: Duration,
    ) -> InvariantsReport {
        let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        let pods_changed = self.read_pods(&store, now);
        let cloud = lock(cloud);
        self.view.refresh(&store, &cloud, now, &mut self.readings);
        let inputs = read_inputs(&mut self.inputs, &store);
        drop(store);
        let seen = Observation { view: &self.view, pods: &self.pods, pods_changed, cloud: &cloud, inputs };
        checker.tick(&seen);
        checker.finish(&seen)
    }

    /// Re-reads the pods when the store changed since the last reading; says whether it did.
    /// Only pods the store wrote since are decoded again: every write replaces the object's
    /// `Arc`, so a pod whose `Arc` is the one read last time has the same view (a pure
    /// function of the object). The previous views hold their `Arc`s until the new list is
    /// built, so an address cannot be reused by a different pod in between.
    fn read_pods(&mut self, store: &Store, now: Duration) -> bool {
        let rv = store.resource_version();
        if self.pods_rv == Some(rv) {
            return false;
        }
        let mut previous: BTreeMap<*const Value, PodView> =
            std::mem::take(&mut self.pods).into_iter().map(|p| (Arc::as_ptr(&p.object), p)).collect();
        self.pods = store
            .iter(&view::key("", "pods"), None)
            .map(|p| previous.remove(&Arc::as_ptr(p)).unwrap_or_else(|| view::read_pod(p)))
            .collect();
        drop(previous);
        self.pods_rv = Some(rv);
        self.pending.observe(&self.pods, now);
        true
    }

    fn sample_claims(&mut self, store: &Store, now: Duration) {
        let Some(rt) = store.registry().get("karpenter.sh", "nodeclaims") else { return };
        let deleting: Vec<Value> = store
            .iter(&rt.key(), None)
            .filter(|c| c.pointer("/metadata/deletionTimestamp").is_some())
            .filter(|c| {
                c.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| !self.disrupted.contains_key(n))
            })
            .map(|c| (**c).clone())
            .collect();
        for claim in deleting {
            let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let reason = disruption_reason(store, &claim, now);
            if let Some(timeline) = self.timeline.as_mut() {
                let provider_id = claim.pointer("/status/providerID").and_then(Value::as_str);
                timeline.disrupted(now, &name, &reason, provider_id);
            }
            self.disrupted.insert(name, reason);
        }
    }

    fn sample_instances(&mut self, cloud: &FakeCloud) {
        for i in cloud.instances() {
            let stopped = i.state_reason.as_ref().is_some_and(|(_, message)| message.contains("zone outage"));
            if (i.reclaim_at.is_some() || stopped) && !self.interrupted.contains(&i.id) {
                self.interrupted.insert(i.id.clone());
            }
        }
    }

    /// Pending-time percentiles; pods still unbound count as pending until `now`.
    pub fn pending(&self, now: Duration) -> PendingStats {
        self.pending.stats(now)
    }

    /// Disruptions by reason.
    pub fn disruptions(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for reason in self.disrupted.values() {
            *out.entry(reason.clone()).or_default() += 1;
        }
        out
    }

    /// Instances interrupted.
    pub fn interruptions(&self) -> u64 {
        self.interrupted.len() as u64
    }
}

/// The moves oracle's inputs from `cache`, re-read only when the store's resourceVersion
/// moved since they were read (every store write bumps it).
fn read_inputs<'a>(cache: &'a mut Option<(u64, MoveInputs)>, store: &Store) -> &'a MoveInputs {
    let rv = store.resource_version();
    if cache.as_ref().is_some_and(|(read_at, _)| *read_at != rv) {
        *cache = None;
    }
    &cache.get_or_insert_with(|| (rv, MoveInputs::read(store))).1
}
