//! What the checker sees at one tick: the API server's objects and the fake cloud's
//! instances, read from outside the controller and reduced to the fields invariants use.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::{CapacityType, FakeCloud, InstanceState};
use serde_json::Value;

use super::resources::Resources;
use super::view_readings::EventReading;
pub use super::view_readings::StoreReadings;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::Store;

/// Tag Karpenter puts on an instance naming its NodeClaim.
pub const NODECLAIM_TAG: &str = "karpenter.sh/nodeclaim";
/// Tag naming the instance's NodePool.
pub const NODEPOOL_TAG: &str = "karpenter.sh/nodepool";
/// Label naming a node's or claim's NodePool.
pub const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";
/// Taint Karpenter puts on nodes it is disrupting.
pub const DISRUPTED_TAINT: &str = "karpenter.sh/disrupted";

/// A resource key by group and plural.
pub fn key(group: &str, plural: &str) -> ResourceKey {
    ResourceKey { group: group.into(), plural: plural.into() }
}

pub use super::timestamp::sim_time;

/// Whether an object's `status.conditions` has `kind=True`.
pub fn condition_true(obj: &Value, kind: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// An object's `status.conditions` entry of type `kind`.
pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions").and_then(Value::as_array)?.iter().find(|c| c["type"] == kind)
}

/// A NodeClaim's `spec.expireAfter`: `None` for `Never` (or a value it cannot read), the CRD
/// default (720h) when absent (core `pkg/apis/v1/nodeclaim.go`, `ExpireAfter`'s
/// `+kubebuilder:default:="720h"`).
pub fn expire_after(claim: &Value) -> Option<Duration> {
    const DEFAULT: Duration = Duration::from_secs(720 * 3600);
    match claim.pointer("/spec/expireAfter").and_then(Value::as_str) {
        Some("Never") => None,
        Some(s) => dovetail_world::SimDuration::parse(s).ok().map(|d| d.0),
        None => Some(DEFAULT),
    }
}

/// How long a status check must have failed before Karpenter acts on it (aws
/// `instancestatus.go` `UnhealthyThreshold`).
const IMPAIRED_FOR: Duration = super::protection::FAILED_CHECK_FORCES_AFTER;

/// Whether a system or instance check has failed for [`IMPAIRED_FOR`] at `now` (an attached
/// EBS check does not count: Karpenter ignores it).
fn impaired_long_enough(checks: &dovetail_fakecloud::status_checks::StatusChecks, now: Duration) -> bool {
    [checks.instance, checks.system].into_iter().flatten().any(|since| since + IMPAIRED_FOR <= now)
}

#[cfg(test)]
mod impaired_tests {
    use super::*;

    /// The excuse applies only after 2 minutes, and never for the EBS check.
    #[test]
    fn a_check_counts_as_the_cloud_taking_the_instance_after_two_minutes() {
        let checks = dovetail_fakecloud::status_checks::StatusChecks {
            system: Some(Duration::from_secs(100)),
            ..Default::default()
        };
        assert!(!impaired_long_enough(&checks, Duration::from_secs(219)));
        assert!(impaired_long_enough(&checks, Duration::from_secs(220)));
        let ebs = dovetail_fakecloud::status_checks::StatusChecks {
            attached_ebs: Some(Duration::ZERO),
            ..Default::default()
        };
        assert!(!impaired_long_enough(&ebs, Duration::from_secs(3600)));
    }
}

/// A NodeClaim as invariants see it.
#[derive(Clone, Debug)]
pub struct ClaimView {
    /// Name.
    pub name: String,
    /// metadata.uid.
    pub uid: String,
    /// Its NodePool (label).
    pub nodepool: String,
    /// status.providerID, once launched.
    pub provider_id: Option<String>,
    /// status.nodeName, once registered.
    pub node_name: Option<String>,
    /// creationTimestamp.
    pub created: Duration,
    /// deletionTimestamp.
    pub deleting_since: Option<Duration>,
    /// Initialized=True.
    pub initialized: bool,
    /// InstanceTerminating=True.
    pub instance_terminating: bool,
    /// Annotated `karpenter.sh/do-not-disrupt: "true"`.
    pub do_not_disrupt: bool,
    /// The `reason` of a `DisruptionReason=True` condition: what the controller says it is
    /// disrupting the claim for (`Underutilized`, `Empty`, `Drifted`).
    pub disruption_reason: Option<String>,
    /// Drifted=True.
    pub drifted: bool,
    /// Registered=True.
    pub registered: bool,
    /// spec.requirements, as written.
    pub requirements: Vec<Value>,
}

impl ClaimView {
    /// The view of a NodeClaim object (a pure function of it).
    pub fn of(c: &Value) -> Self {
        let meta = &c["metadata"];
        ClaimView {
            name: meta["name"].as_str().unwrap_or_default().to_string(),
            uid: meta["uid"].as_str().unwrap_or_default().to_string(),
            nodepool: meta["labels"][NODEPOOL_LABEL].as_str().unwrap_or_default().to_string(),
            provider_id: c["status"]["providerID"].as_str().filter(|s| !s.is_empty()).map(String::from),
            node_name: c["status"]["nodeName"].as_str().filter(|s| !s.is_empty()).map(String::from),
            created: sim_time(&meta["creationTimestamp"]).unwrap_or_default(),
            deleting_since: sim_time(&meta["deletionTimestamp"]),
            initialized: condition_true(c, "Initialized"),
            instance_terminating: condition_true(c, "InstanceTerminating"),
            do_not_disrupt: meta["annotations"]["karpenter.sh/do-not-disrupt"] == "true",
            disruption_reason: condition(c, "DisruptionReason")
                .filter(|c| c["status"] == "True")
                .and_then(|c| c["reason"].as_str())
                .map(String::from),
            drifted: condition_true(c, "Drifted"),
            registered: condition_true(c, "Registered"),
            requirements: c.pointer("/spec/requirements").and_then(Value::as_array).cloned().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
impl ClaimView {
    /// A test claim `name` of `nodepool`: launched as `provider_id`, on no Node yet,
    /// registered and initialized, created at 0 and not disrupting; tests change the rest.
    pub fn for_test(name: &str, nodepool: &str, provider_id: &str) -> Self {
        Self {
            name: name.into(),
            uid: format!("uid-{name}"),
            nodepool: nodepool.into(),
            provider_id: Some(provider_id.into()),
            node_name: None,
            created: Duration::ZERO,
            deleting_since: None,
            initialized: true,
            instance_terminating: false,
            do_not_disrupt: false,
            disruption_reason: None,
            drifted: false,
            registered: true,
            requirements: Vec::new(),
        }
    }
}

/// A Node as invariants see it.
#[derive(Clone, Debug)]
pub struct NodeView {
    /// spec.providerID.
    pub provider_id: String,
    /// Its NodePool label, if managed.
    pub nodepool: Option<String>,
    /// Has a deletionTimestamp.
    pub deleting: bool,
    /// Carries the `karpenter.sh/disrupted` taint.
    pub disrupted: bool,
    /// Labelled `karpenter.sh/initialized=true`.
    pub initialized: bool,
    /// Annotated `karpenter.sh/do-not-disrupt: "true"`.
    pub do_not_disrupt: bool,
    /// spec.taints.
    pub taints: Vec<Value>,
    /// The Ready condition is True.
    pub ready: bool,
    /// metadata.labels (string values).
    pub labels: BTreeMap<String, String>,
    /// status.allocatable as the kubelet reported it (zero where it reported nothing yet).
    pub allocatable: Resources,
}

impl NodeView {
    /// The view of a Node object (a pure function of it).
    pub fn of(n: &Value) -> Self {
        let meta = &n["metadata"];
        let disrupted = n
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|t| t["key"] == DISRUPTED_TAINT));
        NodeView {
            provider_id: n["spec"]["providerID"].as_str().unwrap_or_default().to_string(),
            nodepool: meta["labels"][NODEPOOL_LABEL].as_str().map(String::from),
            deleting: meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()),
            disrupted,
            initialized: meta["labels"]["karpenter.sh/initialized"] == "true",
            do_not_disrupt: meta["annotations"]["karpenter.sh/do-not-disrupt"] == "true",
            taints: n.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default(),
            ready: condition_true(n, "Ready"),
            labels: meta["labels"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect(),
            allocatable: Resources::of_list(&n["status"]["allocatable"]),
        }
    }
}

/// A fake-cloud instance as invariants see it.
#[derive(Clone, Debug)]
pub struct InstanceView {
    /// Instance id.
    pub id: String,
    /// Instance type.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
    /// Spot or on-demand.
    pub capacity_type: CapacityType,
    /// pending or running (or stopping/stopped): still an instance someone pays for.
    pub live: bool,
    /// Launch time.
    pub launched: Duration,
    /// `karpenter.sh/nodeclaim` tag.
    pub nodeclaim: Option<String>,
    /// `karpenter.sh/nodepool` tag.
    pub nodepool: Option<String>,
    /// `aws:///zone/id`.
    pub provider_id: String,
    /// The cloud is taking it away (spot reclaim, scheduled event, state reason).
    pub involuntary: bool,
    /// The CreateFleet that launched it, with the total target capacity it asked for.
    pub fleet: Option<(String, u32)>,
    /// The cloud's `stateReason` code, once set (`Client.UserInitiatedShutdown` after a
    /// TerminateInstances call, `Server.SpotInstanceTermination`, ...).
    pub state_reason: Option<String>,
    /// The cloud warned it would take the instance away (spot interruption notice or a
    /// scheduled event) before it stopped.
    pub warned: bool,
    /// It holds a slot of a capacity reservation the cloud still has and that has not
    /// ended: the reserved capacity Karpenter prices at a ten-millionth of on-demand
    /// ([`crate::oracle::instance_price::instance_price`]).
    pub reserved: bool,
}

impl InstanceView {
    /// Whether the instance stopped because an EC2 client asked (TerminateInstances) and not
    /// because the cloud took it (spot reclaim, outage) or had warned it would: only an API
    /// client, in a world the controller's, ends an instance this way.
    pub fn terminated_by_client(&self) -> bool {
        !self.live && !self.warned && self.state_reason.as_deref() == Some(CLIENT_SHUTDOWN)
    }
}

/// The `stateReason` code EC2 gives an instance a TerminateInstances call ended.
pub const CLIENT_SHUTDOWN: &str = "Client.UserInitiatedShutdown";

/// The NodePool fields invariants need.
#[derive(Clone, Debug)]
pub struct PoolView {
    /// Name.
    pub name: String,
    /// The manifest.
    pub object: Arc<Value>,
}

/// The cluster and cloud at one tick. Pods are read separately (see `pods`), only when
/// the store changed.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Simulated time.
    pub now: Duration,
    /// Trace length at the tick.
    pub trace_position: u64,
    /// Store resourceVersion at the tick.
    pub resource_version: u64,
    /// NodePools by name.
    pub pools: BTreeMap<String, PoolView>,
    /// NodeClaims by name.
    pub claims: BTreeMap<String, ClaimView>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, NodeView>,
    /// Every instance the cloud knows.
    pub instances: Vec<InstanceView>,
    /// Karpenter's pod nominations, from its `Nominated` Events, oldest first.
    pub nominations: Vec<super::nomination::Nomination>,
    /// Every PodDisruptionBudget.
    pub pdbs: Vec<Arc<Value>>,
    /// The zones each PersistentVolumeClaim allows (claims allowing any zone left out).
    pub claim_zones: super::volume_zones::ClaimZones,
    /// Karpenter's disruption Events on NodeClaims (replacement launches, terminations),
    /// oldest first.
    pub disruption_events: Vec<super::disruption_events::DisruptionEvent>,
    /// Each NodeClaim's `spec.expireAfter` (`None` for `Never`; the CRD default 720h when
    /// absent), by name.
    pub expire_after: BTreeMap<String, Option<Duration>>,
    /// The NodeOverlays' prices, evaluated when the `NodeOverlay` gate is on (empty, so
    /// catalog prices, otherwise; [`View::refresh`] keeps them current).
    pub overlays: Arc<super::node_overlay::NodeOverlays>,
}

impl View {
    /// Reads the store's NodePools, NodeClaims and Nodes and the cloud's instances.
    pub fn read(store: &Store, cloud: &FakeCloud, now: Duration) -> Self {
        let mut view = Self::read_store(store, &mut StoreReadings::default(), View::default());
        view.now = now;
        view.read_cloud(cloud);
        view
    }

    /// This view brought up to `now`: the same as [`View::read`], but the store's part
    /// (pools, claims, nodes, PDBs, nominations) is read again only when the store's
    /// resourceVersion moved since this view was read; every store write bumps it, so an
    /// unchanged one means unchanged objects. The observation pass reads the world every
    /// simulated second and most seconds write nothing, so this saves most re-reads
    /// (issue 21: `View::read` was ~8% of a run's CPU).
    ///
    /// `readings` keeps what each Event said between readings, so only Events written since
    /// are decoded again (issue 21: every store write re-decoded every Event), and which
    /// object each NodeClaim and Node of this view was read from ([`View::read_store`]); it
    /// must be the one this view was last read with.
    pub fn refresh(&mut self, store: &Store, cloud: &FakeCloud, now: Duration, readings: &mut StoreReadings) {
        if store.resource_version() != self.resource_version {
            let mut old = std::mem::take(self);
            let overlays = std::mem::take(&mut old.overlays);
            *self = Self::read_store(store, readings, old);
            let pools: Vec<&Value> = self.pools.values().map(|p| p.object.as_ref()).collect();
            self.overlays = overlays.refreshed(store, cloud, &pools);
        }
        self.now = now;
        self.trace_position = store.trace().len();
        self.read_cloud(cloud);
    }

    /// The store's part of a view (`now` and `instances` left empty). A NodeClaim or Node
    /// whose object is the one `readings` says `old` read it from (the same `Arc`: every
    /// store write replaces it) is moved over from `old` rather than decoded again; the
    /// reading is a pure function of the object (issue 21: every store write decoded every
    /// claim and node again).
    fn read_store(store: &Store, readings: &mut StoreReadings, mut old: View) -> Self {
        let mut view =
            View { trace_position: store.trace().len(), resource_version: store.resource_version(), ..View::default() };
        // One pass over the Events for both readings: every store write re-reads the view.
        let mut previous = std::mem::take(&mut readings.events);
        for event in store.iter(&key("", "events"), None) {
            let at = Arc::as_ptr(event) as usize;
            let reading = previous.remove(&at).unwrap_or_else(|| EventReading::of(event));
            view.nominations.extend(reading.nominations.iter().cloned());
            view.disruption_events.extend(reading.disruption.iter().cloned());
            readings.events.insert(at, reading);
        }
        drop(previous);
        view.nominations.sort();
        view.disruption_events.sort();
        for pool in store.iter(&key("karpenter.sh", "nodepools"), None) {
            let name = pool["metadata"]["name"].as_str().unwrap_or_default().to_string();
            view.pools.insert(name.clone(), PoolView { name, object: pool.clone() });
        }
        let read_from = std::mem::take(&mut readings.claims);
        for c in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            let name = c["metadata"]["name"].as_str().unwrap_or_default();
            let unchanged = read_from.get(name).is_some_and(|was| Arc::ptr_eq(was, c));
            let kept = if unchanged { old.claims.remove(name).zip(old.expire_after.remove(name)) } else { None };
            let (claim, expire) = kept.unwrap_or_else(|| (ClaimView::of(c), expire_after(c)));
            view.expire_after.insert(claim.name.clone(), expire);
            readings.claims.insert(claim.name.clone(), c.clone());
            view.claims.insert(claim.name.clone(), claim);
        }
        drop(read_from);
        let read_from = std::mem::take(&mut readings.nodes);
        for n in store.iter(&key("", "nodes"), None) {
            let name = n["metadata"]["name"].as_str().unwrap_or_default();
            let unchanged = read_from.get(name).is_some_and(|was| Arc::ptr_eq(was, n));
            let node = if unchanged { old.nodes.remove(name) } else { None }.unwrap_or_else(|| NodeView::of(n));
            readings.nodes.insert(name.to_string(), n.clone());
            view.nodes.insert(name.to_string(), node);
        }
        drop(read_from);
        view.pdbs = store.iter(&key("policy", "poddisruptionbudgets"), None).cloned().collect();
        view.claim_zones = super::volume_zones::read(store);
        view
    }

    /// Reads the cloud's instances (in place of any read before).
    fn read_cloud(&mut self, cloud: &FakeCloud) {
        self.instances.clear();
        let now = cloud.now();
        for i in cloud.instances() {
            // A failed system or instance status check the cloud has reported for 2 minutes:
            // Karpenter replaces the node forcefully, with no budget or PDB check (aws
            // `pkg/providers/instancestatus/instancestatus.go` l. 45 `UnhealthyThreshold`,
            // `pkg/controllers/interruption/utils.go` l. 153–168, 117–124).
            let failed_check = impaired_long_enough(&i.status_checks, now);
            self.instances.push(InstanceView {
                id: i.id.clone(),
                instance_type: i.instance_type.clone(),
                zone: i.zone.clone(),
                capacity_type: i.capacity_type,
                live: i.state.is_live(),
                launched: i.launch_time,
                nodeclaim: i.tags.get(NODECLAIM_TAG).cloned(),
                nodepool: i.tags.get(NODEPOOL_TAG).cloned(),
                provider_id: format!("aws:///{}/{}", i.zone, i.id),
                involuntary: i.reclaim_at.is_some()
                    || !i.scheduled_events.is_empty()
                    || failed_check
                    || (i.state_reason.is_some()
                        && i.state != InstanceState::Running
                        && i.state != InstanceState::Pending)
                    || matches!(i.state, InstanceState::Stopping | InstanceState::Stopped),
                fleet: i.fleet_id.as_ref().and_then(|f| cloud.fleet_target(f).map(|t| (f.clone(), t))),
                state_reason: i.state_reason.as_ref().map(|(code, _)| code.clone()),
                warned: i.reclaim_at.is_some() || !i.scheduled_events.is_empty(),
                reserved: i.capacity_reservation_id.as_ref().is_some_and(|id| {
                    cloud.capacity_reservations().any(|r| r.id == *id && r.end.is_none_or(|end| now < end))
                }),
            });
        }
    }

    /// The live instance behind a claim, by providerID.
    pub fn instance_of(&self, claim: &ClaimView) -> Option<&InstanceView> {
        let pid = claim.provider_id.as_deref()?;
        self.instances.iter().find(|i| i.provider_id == pid)
    }
}

/// A pod as invariants see it.
#[derive(Clone, Debug)]
pub struct PodView {
    /// `namespace/name`.
    pub key: String,
    /// metadata.uid.
    pub uid: String,
    /// creationTimestamp.
    pub created: Duration,
    /// spec.nodeName.
    pub node_name: Option<String>,
    /// Succeeded or Failed.
    pub terminal: bool,
    /// Has a deletionTimestamp.
    pub terminating: bool,
    /// Owned by a DaemonSet.
    pub daemonset: bool,
    /// Effective requests (containers, init containers, overhead).
    pub requests: Resources,
    /// The pod object.
    pub object: Arc<Value>,
}

impl PodView {
    /// Still wants to run: not terminal and not being deleted.
    pub fn active(&self) -> bool {
        !self.terminal && !self.terminating
    }
}

/// Every pod in the store.
pub fn read_pods(store: &Store) -> Vec<PodView> {
    store.iter(&key("", "pods"), None).map(read_pod).collect()
}

/// One pod's view (a pure function of the object).
pub fn read_pod(p: &Arc<Value>) -> PodView {
    let meta = &p["metadata"];
    PodView {
        key: format!(
            "{}/{}",
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default()
        ),
        uid: meta["uid"].as_str().unwrap_or_default().to_string(),
        created: sim_time(&meta["creationTimestamp"]).unwrap_or_default(),
        node_name: p["spec"]["nodeName"].as_str().filter(|s| !s.is_empty()).map(String::from),
        terminal: matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")),
        terminating: meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()),
        daemonset: is_daemonset_pod(p),
        requests: Resources::of_pod_spec(&p["spec"]),
        object: p.clone(),
    }
}

/// Whether a pod is owned by a DaemonSet.
pub fn is_daemonset_pod(pod: &Value) -> bool {
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|o| o.iter().any(|o| o["kind"] == "DaemonSet"))
}
