//! One wave of pending pods, and the bound on the NodeClaims Karpenter may create for it:
//! an independent first-fit-decreasing packing ([`crate::oracle::first_fit`]) of the wave's
//! pods, judged **per claim** against what was known when the claim was created.
//!
//! Why per claim: a provisioning pass plans from a snapshot. Core
//! `pkg/controllers/provisioning/provisioner.go` `Schedule` (l. 362–400) takes the cluster's
//! nodes with their bound pods (`p.cluster.Nodes()`, l. 375) and then the pending pods
//! (`GetPendingPods`, l. 378), and hands both to `NewScheduler` / `Solve`; the claims it
//! creates come from that snapshot alone. Where kube-scheduler binds the pods *after* the
//! pass is hindsight Karpenter cannot have had: under a `ScheduleAnyway` zone spread it
//! plans one claim per zone, and kube-scheduler may stack the pods onto the first node
//! ready. So a wave's claims are counted when one is created, against the pods pending and
//! the misdirected bindings ([`Wave::misdirected`]) seen by then, never re-judged against
//! later bindings. A claim created *after* a binding is judged with it: the binding was in
//! the snapshot of the pass that created it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::CapacityType;
use serde_json::Value;

use super::{ClaimLife, Ctx};
use crate::oracle::batches::passes;
use crate::oracle::first_fit::{Demand, Placed, PoolSupply, by_weight, first_fit_decreasing, first_fit_in_batches};
use crate::oracle::resources::{Offering, Resources};
use crate::oracle::view::{NodeView, View};

/// What a NodeClaim was launched as: its NodePool, instance type, zone, capacity type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchedAs {
    /// The NodePool the claim belongs to: several pools may allow the same offering
    /// (generated story 847793307: a `c5n.large` of a pool whose pods select it by
    /// `karpenter.sh/nodepool` is also allowed by another pool), and a node carries its own
    /// pool's labels and takes from its own pool's limits.
    pub nodepool: String,
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: CapacityType,
}

/// One wave of pending pods and the claims created while it lasts.
pub struct Wave {
    pub start: Duration,
    /// uid → (key, pod, requests).
    pub pods: BTreeMap<String, (String, Arc<Value>, Resources)>,
    pub claims: BTreeSet<String>,
    /// Per pool, the offerings when the wave started.
    pub supply: Vec<(String, Arc<Value>, Vec<Offering>)>,
    /// Per pool, the CPU and memory of its live instances when the wave started: what they
    /// took from its `spec.limits` before any of the wave's claims.
    pub used: BTreeMap<String, Resources>,
    pub overhead: Resources,
    /// Pod uids in the order they became pending (ties by key): the order a lagging watch
    /// delivers them in.
    pub order: Vec<String>,
    /// uid → when the pod became pending (its creation), for the batching windows.
    pub pending_at: BTreeMap<String, Duration>,
    /// When the wave's NodeClaims were created: instants a provisioning pass ran.
    pub cuts: BTreeSet<Duration>,
    /// The longest watch-delivery delay in force while the wave lasted.
    pub watch_delay: Duration,
    /// uid → the wave's NodeClaim kube-scheduler bound the pod to, when that is not the claim
    /// Karpenter last nominated it to ([`misdirected`]), and when the binding was seen.
    pub misdirected: BTreeMap<String, (String, Duration)>,
    /// uid → the wave's NodeClaim kube-scheduler bound the pod to, where Karpenter meant it
    /// or not, and when the binding was seen ([`misdirected`]).
    pub landed: BTreeMap<String, (String, Duration)>,
    /// Claim → when a binding was first seen that took a pod Karpenter had last nominated to
    /// it to another of the wave's claims ([`misdirected`]): the room it was planned for
    /// is released, but the claim stays ([`wave_bound`]).
    pub released: BTreeMap<String, Duration>,
    /// Pods seen bound already (uids).
    pub bound: BTreeSet<String>,
    /// uid → a pod outside the wave (never seen pending while it lasted, e.g. created and
    /// bound between two observations) kube-scheduler bound to one of the wave's claims
    /// ([`misdirected`]): the room it takes there is gone for the wave's pods.
    pub foreign: BTreeMap<String, ForeignPod>,
    /// The packing's bound and the inputs it was computed from ([`BoundKey`]).
    pub bound_for: Option<(BoundKey, usize)>,
    pub reported: bool,
}

/// Everything [`wave_bound`] reads that can change while a wave lasts, so a cached bound is
/// reused only for the very same packing. The wave's pods, their order and their pending
/// times only grow (a pod is never removed from a wave), so their count stands for them;
/// the supply, the pools' used capacity and the overhead are fixed when the wave starts.
/// Everything else is kept whole: the provisioning passes up to the claim's creation
/// (`cuts`), which pod sits on which claim (placed bindings and foreign pods, by identity,
/// not by count: the same number of different pods is a different packing), the released
/// claims still live, and what each of those claims was launched as and its Node reports.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundKey {
    pods: usize,
    cuts: Vec<Duration>,
    placed: Vec<(String, String)>,
    foreign: Vec<(String, String)>,
    released: Vec<String>,
    claims: Vec<(String, Option<LaunchedAs>, Option<Resources>)>,
    watch_delay: Duration,
}

impl BoundKey {
    /// The inputs [`wave_bound`] reads for a claim created at `at`, with `live` claims.
    pub fn of(
        wave: &Wave,
        at: Duration,
        live: &BTreeSet<String>,
        launched: &BTreeMap<String, LaunchedAs>,
        registered: &BTreeMap<String, Resources>,
    ) -> Self {
        let placed: Vec<(String, String)> =
            wave.placed_by(at).into_iter().map(|(u, c)| (u.clone(), c.clone())).collect();
        let foreign: Vec<(String, String)> = wave
            .foreign
            .iter()
            .filter(|(_, f)| f.seen <= at && live.contains(&f.claim))
            .map(|(uid, f)| (uid.clone(), f.claim.clone()))
            .collect();
        let released: Vec<String> = wave.released_by(at).filter(|c| live.contains(*c)).cloned().collect();
        let mut involved: BTreeSet<&String> = placed.iter().map(|(_, c)| c).collect();
        involved.extend(foreign.iter().map(|(_, c)| c));
        involved.extend(released.iter());
        let claims =
            involved.into_iter().map(|c| (c.clone(), launched.get(c).cloned(), registered.get(c).copied())).collect();
        BoundKey {
            pods: wave.pods.len(),
            cuts: wave.cuts.range(..=at).copied().collect(),
            placed,
            foreign,
            released,
            claims,
            watch_delay: wave.watch_delay,
        }
    }
}

/// A pod outside a wave bound to one of its claims ([`Wave::foreign`]).
#[derive(Clone, Debug)]
pub struct ForeignPod {
    pub claim: String,
    /// When the binding was first seen.
    pub seen: Duration,
    pub key: String,
    pub pod: Arc<Value>,
    pub requests: Resources,
}

impl Wave {
    /// The pods outside the wave seen bound to its claims by `at` ([`Wave::foreign`]).
    pub fn foreign_by(&self, at: Duration) -> impl Iterator<Item = &ForeignPod> {
        self.foreign.values().filter(move |f| f.seen <= at)
    }

    /// The misdirected bindings seen by `at` (a claim's creation): the placements the pass
    /// that created it knew.
    pub fn misdirected_by(&self, at: Duration) -> BTreeMap<&String, &String> {
        self.misdirected.iter().filter(|(_, (_, seen))| *seen <= at).map(|(uid, (claim, _))| (uid, claim)).collect()
    }

    /// The bindings to the wave's claims seen by `at`, misdirected or not: where the pass
    /// that created a claim then found those pods ([`wave_bound`]).
    pub fn placed_by(&self, at: Duration) -> BTreeMap<&String, &String> {
        let mut placed = self.misdirected_by(at);
        let landed = self.landed.iter().filter(|(_, (_, seen))| *seen <= at);
        placed.extend(landed.map(|(uid, (claim, _))| (uid, claim)));
        placed
    }

    /// The claims released by the bindings seen by `at` ([`Wave::released`]).
    pub fn released_by(&self, at: Duration) -> impl Iterator<Item = &String> {
        self.released.iter().filter(move |(_, seen)| **seen <= at).map(|(claim, _)| claim)
    }
}

/// Records the wave's pods kube-scheduler bound to one of the wave's NodeClaims other
/// than the one Karpenter last nominated them to. kube-scheduler does not read Karpenter's
/// nominations: they are Events only (core
/// `pkg/controllers/provisioning/scheduling/events.go` `NominatePodEvent`, l. 35–52), so it
/// binds a pending pod to whichever node fits it once that node is ready, and the pods
/// Karpenter meant for that node must go elsewhere. The packing places such a pod where it
/// was bound: the room it took is gone, and the claim it was nominated to is released
/// ([`Wave::released`]).
pub fn misdirected(
    wave: &mut Wave,
    ctx: &Ctx<'_>,
    claims: &BTreeMap<String, ClaimLife>,
    nominated: &BTreeMap<String, Vec<(Duration, String)>>,
) {
    let by_node: BTreeMap<&str, &str> =
        claims.iter().filter_map(|(name, life)| Some((life.node_name.as_deref()?, name.as_str()))).collect();
    // A foreign pod that left its node (deleted, finished) gives its room back to the
    // passes after: only the claims judged while it was there saw it.
    let mut still_there: BTreeSet<&str> = BTreeSet::new();
    for p in ctx.pods {
        let Some(node) = p.node_name.as_deref() else { continue };
        if !wave.pods.contains_key(&p.uid) {
            let claim = by_node.get(node).filter(|c| wave.claims.contains(**c));
            let Some(claim) = claim.filter(|_| p.active() && !p.daemonset) else { continue };
            still_there.insert(&p.uid);
            if wave.foreign.get(&p.uid).is_none_or(|f| f.claim != *claim) {
                let foreign = ForeignPod {
                    claim: claim.to_string(),
                    seen: ctx.view.now,
                    key: p.key.clone(),
                    pod: p.object.clone(),
                    requests: p.requests,
                };
                wave.foreign.insert(p.uid.clone(), foreign);
            }
            continue;
        }
        if !wave.bound.insert(p.uid.clone()) {
            continue;
        }
        let Some(claim) = by_node.get(node) else { continue };
        if wave.claims.contains(*claim) {
            wave.landed.insert(p.uid.clone(), (claim.to_string(), ctx.view.now));
        }
        let last = nominated.get(&p.key).and_then(|n| n.last()).map(|(_, c)| c.as_str());
        if let Some(from) = last.filter(|c| c != claim)
            && wave.claims.contains(*claim)
        {
            wave.misdirected.insert(p.uid.clone(), (claim.to_string(), ctx.view.now));
            if wave.claims.contains(from) {
                wave.released.entry(from.to_string()).or_insert(ctx.view.now);
            }
        }
    }
    wave.foreign.retain(|uid, _| still_there.contains(uid.as_str()));
}

/// Claim → the name of its Node: `status.nodeName`, else the Node whose `spec.providerID`
/// is the claim's instance. Under API-server errors the controller's write of
/// `status.nodeName` can lag the registration by tens of seconds while kube-scheduler
/// already binds pods to the Node (generated story 847793307: app-0 pods bound to three
/// registered `c5n.large` nodes of pool-2 whose claims did not name them yet went unseen as
/// [`misdirected`], and the app-2 pods planned there were judged re-packable); which
/// instance a Node runs on is the cloud's fact, not the controller's.
pub fn claim_node_names(view: &View) -> BTreeMap<&str, &str> {
    let unnamed = view.claims.values().any(|c| c.node_name.is_none() && c.provider_id.is_some());
    let node_of_instance: BTreeMap<&str, &str> = if unnamed {
        view.nodes.iter().map(|(name, n)| (n.provider_id.as_str(), name.as_str())).collect()
    } else {
        BTreeMap::new()
    };
    view.claims
        .values()
        .filter_map(|c| {
            let named = c.node_name.as_deref();
            let node = named.or_else(|| node_of_instance.get(c.provider_id.as_deref()?).copied())?;
            Some((c.name.as_str(), node))
        })
        .collect()
}

/// Claim → the `status.allocatable` its registered Node reports, for the claims whose Node
/// exists.
pub fn registered_allocatable(
    claims: &BTreeMap<String, ClaimLife>,
    nodes: &BTreeMap<String, NodeView>,
) -> BTreeMap<String, Resources> {
    claims
        .iter()
        .filter_map(|(name, life)| Some((name.clone(), nodes.get(life.node_name.as_deref()?)?.allocatable)))
        .collect()
}

/// The room Karpenter's cluster state gives a claim launched with `estimate` whose Node
/// reports `node` (core `state/statenode.go` `Allocatable`, l. 377–392): the Node's figure,
/// each quantity the Node reports as zero taken from the claim's estimate.
pub fn seen_allocatable(node: &Resources, estimate: &Resources) -> Resources {
    let pick = |n: f64, e: f64| if n == 0.0 { e } else { n };
    Resources {
        cpu: pick(node.cpu, estimate.cpu),
        memory: pick(node.memory, estimate.memory),
        pods: pick(node.pods, estimate.pods),
    }
}

/// What a wave may have when a claim created at `at` joins it: the packing's nodes plus the
/// slack per NodePool. Without watch lag, with every pod where Karpenter meant it and every
/// pod pending in one batching window, one first-fit-decreasing packing of the whole wave;
/// else the passes that can have seen the pods in turn ([`crate::oracle::batches::passes`]:
/// batching windows over the instants the pods became pending, cut where a claim of the
/// wave was created by `at`, each split by a lagging watch), each reusing the room earlier
/// passes opened; pods kube-scheduler bound elsewhere than their nomination by `at` sit
/// where they were bound ([`Wave::misdirected_by`]), on the node `launched` (claim → what it
/// was launched as) names, with the room `registered` (claim → its Node's allocatable) says
/// that node has ([`seen_allocatable`]).
///
/// Pods bound where Karpenter nominated them sit where they were bound too, once seen by
/// `at` ([`Wave::placed_by`]): the pass that created the claim planned on the nodes with
/// their bound pods (core `provisioner.go` `Schedule`, l. 375) and scheduled only the pods
/// still pending (`GetPendingPods`, l. 378), so room a free re-packing of them would open
/// was never Karpenter's (generated story 458153824: six pods bound where nominated to the
/// first node ready, re-packed elsewhere, made room there for ten batch pods that in fact
/// needed two more claims).
///
/// The claims those bindings released ([`Wave::released`]) that are still `live` at `at`
/// are placed too, empty, at the offering they were launched as: the pass that planned them
/// did not know of the bindings, and no later pass takes them back. A provisioning pass
/// plans on the cluster's nodes, in-flight claims included (core `provisioner.go`
/// `Schedule`, l. 375, `DeepCopyNodes`), and tries them before any new claim (core
/// `scheduling/scheduler.go` `add`, l. 593, `addToExistingNode`); a claim not yet
/// initialized is no disruption candidate (core `state/statenode.go`
/// `ValidateNodeDisruptable`, l. 219–221), so it stays with the room it was launched with,
/// which may be too small for the pods still pending (generated story 721375015: seven
/// `ScheduleAnyway`-spread pods planned over five zones, all bound to the first node
/// ready, left a 1-vCPU and two 2-vCPU claims empty that 2-CPU pods of a later pass cannot
/// use). Each released claim was judged when it was created, against what was known then;
/// here the pods still pending fill its room first, so a claim launched where that room
/// would have done is still over the bound.
pub fn wave_bound(
    wave: &Wave,
    at: Duration,
    live: &BTreeSet<String>,
    launched: &BTreeMap<String, LaunchedAs>,
    registered: &BTreeMap<String, Resources>,
    slack_per_pool: usize,
) -> usize {
    let mut pools: Vec<PoolSupply<'_>> = wave
        .supply
        .iter()
        .map(|(name, pool, offerings)| PoolSupply {
            name: name.clone(),
            pool,
            offerings: offerings.clone(),
            used: wave.used.get(name).copied().unwrap_or_default(),
        })
        .collect();
    by_weight(&mut pools);
    let demand = |uid: &String| wave.pods.get(uid).map(|(key, pod, requests)| Demand { key, pod, requests: *requests });
    let misdirected = wave.placed_by(at);
    let mut placed: Vec<Placed<'_>> = Vec::new();
    let mut on_placed: BTreeSet<&String> = BTreeSet::new();
    let foreign: Vec<&ForeignPod> = wave.foreign_by(at).filter(|f| live.contains(&f.claim)).collect();
    let mut claims: BTreeSet<&String> = misdirected.values().copied().collect();
    claims.extend(foreign.iter().map(|f| &f.claim));
    let released = wave.released_by(at).filter(|c| live.contains(*c) && !claims.contains(c));
    let released: Vec<&String> = released.collect();
    for claim in claims.iter().chain(&released) {
        let Some(mut offering) = launched.get(*claim).and_then(|l| claim_offering(wave, l)) else { continue };
        if let Some(node) = registered.get(*claim) {
            offering.1.allocatable = seen_allocatable(node, &offering.1.allocatable);
        }
        let uids: Vec<&String> = misdirected.iter().filter(|(_, c)| **c == *claim).map(|(u, _)| *u).collect();
        on_placed.extend(uids.iter().copied());
        let mut pods: Vec<Demand<'_>> = uids.into_iter().filter_map(demand).collect();
        let outside = foreign.iter().filter(|f| f.claim == **claim);
        pods.extend(outside.map(|f| Demand { key: &f.key, pod: &f.pod, requests: f.requests }));
        placed.push(Placed { pool: offering.0, offering: offering.1, pods });
    }
    let mut rest: Vec<(Duration, Demand<'_>)> = wave
        .order
        .iter()
        .filter(|u| !on_placed.contains(u))
        .filter_map(|u| Some((wave.pending_at.get(u).copied().unwrap_or(wave.start), demand(u)?)))
        .collect();
    rest.sort_by_key(|(t, _)| *t);
    let cuts: BTreeSet<Duration> = wave.cuts.range(..=at).copied().collect();
    let by_pass = passes(&rest, &cuts, wave.watch_delay);
    let packing = if by_pass.len() <= 1 && placed.is_empty() {
        let all: Vec<Demand<'_>> = rest.into_iter().map(|(_, d)| d).collect();
        first_fit_decreasing(&all, &pools, &wave.overhead)
    } else {
        first_fit_in_batches(&by_pass, &pools, &wave.overhead, &placed)
    };
    // Pods this packing left without a node only because it spent a pool's limits
    // differently from Karpenter may each take a claim of their own: within a pass Karpenter
    // tries the claims it plans fewest-pods-first (core `scheduling/scheduler.go` `add`,
    // l. 598), not first-fit, so it fills other claims, whose cheapest types (not the
    // smallest) then take a different share of the limit (`updateRemainingResources`,
    // l. 835–842), and the pods the limit leaves over come one small claim per pass
    // (generated story 4258: a 12-CPU pool, six pods with hostname anti-affinity, two
    // 4-vCPU claims then four 1-vCPU ones). Without limits, or when this packing places
    // every pod, the bound is strict.
    packing.total() + packing.limited + slack_per_pool * wave.supply.len()
}

/// The NodePool and offering a claim launched as `launched` is, among its own pool's
/// supply in the wave.
fn claim_offering(wave: &Wave, launched: &LaunchedAs) -> Option<(String, Offering)> {
    wave.supply.iter().filter(|(name, _, _)| *name == launched.nodepool).find_map(|(name, _, offerings)| {
        offerings
            .iter()
            .find(|o| {
                o.instance_type == launched.instance_type
                    && o.zone == launched.zone
                    && o.capacity_type == launched.capacity_type
            })
            .map(|o| (name.clone(), o.clone()))
    })
}
