//! `overProvisioning`: the controller launches what pending pods need, and no more.
//!
//! Three rules, judged from outside the controller:
//! - **Per wave.** Pods that become pending while others are still pending form a wave; it
//!   ends when none of them is pending any more. The NodeClaims created during a wave and
//!   still live may never outnumber what an independent first-fit-decreasing packing of the
//!   wave's pods over the allowed, available offerings needs ([`crate::oracle::first_fit`])
//!   plus `slackPerPool` per NodePool. A NodeClaim created while some Node carries the
//!   `karpenter.sh/disrupted` taint is a disruption replacement and is not the wave's:
//!   Karpenter taints its candidates before it launches their replacements (core
//!   `pkg/controllers/disruption/queue.go` `StartCommand`, l. 321–335, calls
//!   `markDisrupted`, l. 265, then `createReplacementNodeClaims`, l. 303), and the taint
//!   stays until the candidates are gone. A wave whose pods all went where they were
//!   nominated, without lag, gets the strict one-pass packing, so a controller or client
//!   that launches beyond it is caught. The packing judges what Karpenter could know, and
//!   two things it cannot:
//!   - *Pods it has not seen yet.* Under a lagging watch the controller learns of the pods
//!     in turn, and each provisioning pass packs the pods it has seen, reusing the room of
//!     the claims in flight (core `scheduling/scheduler.go` `add`, l. 582–612; in-flight
//!     room is the claim's allocatable, `state/statenode.go` `Allocatable`, l. 377), so the
//!     packing runs pass by pass over the split [`crate::oracle::batches`] gives for the
//!     delay in force ([`first_fit_in_batches`]). Without lag the whole wave is one pass.
//!   - *Where kube-scheduler binds.* Karpenter's nominations are Events kube-scheduler never
//!     reads (core `scheduling/events.go` `NominatePodEvent`, l. 35–52), so it may bind a
//!     pod to another of the wave's claims than the one Karpenter meant, taking room meant
//!     for others. Such a pod is placed where it was bound ([`misdirected`]), on a node of
//!     the room Karpenter sees there: once the claim's Node has registered, that is the
//!     Node's `status.allocatable` (with the claim's estimate only where the Node reports
//!     zero), not the estimate the claim was launched with (core
//!     `pkg/controllers/state/statenode.go` `Allocatable`, l. 377–392: `lo.Assign` of
//!     `Node.Status.Allocatable`, l. 381, filled from `NodeClaim.Status.Allocatable` for
//!     zero quantities, l. 382–386; the claim's own figure only while no Node exists,
//!     l. 389). A kubelet that reports less than the estimate leaves fewer pods room there,
//!     and the next pass opens a claim for the rest ([`seen_allocatable`]).
//! - **Unused capacity.** A NodeClaim that has initialized and had no pod bound to its node
//!   nor nominated to it (Karpenter's `Nominated` Events, [`crate::oracle::nomination`]) for
//!   `unusedFor` plus its NodePool's `consolidateAfter` (Karpenter removes an empty node
//!   after `consolidateAfter`), counted from when faults healed at the earliest. A pool with
//!   `consolidateAfter: Never` keeps empty nodes by design (core
//!   `pkg/controllers/nodeclaim/disruption/consolidation.go` l. 45 sets no Consolidatable
//!   condition without a duration) and is not judged.
//! - **No duplicate.** A pod nominated to a new NodeClaim while a NodeClaim it was
//!   nominated to earlier is still in flight (live, not yet initialized) was provisioned
//!   twice, unless the earlier claim is still wanted: some pod is nominated to it at or
//!   after the new claim's creation, or a pod is bound to its Node (judged
//!   `DUPLICATE_GRACE` later). Why the excuse:
//!   Karpenter re-simulates every pending pod on each provisioning pass
//!   (core `pkg/controllers/provisioning/provisioner.go` `Schedule` → `GetPendingPods`),
//!   and an in-flight node's free capacity subtracts only pods *bound* to it (core
//!   `pkg/controllers/state/cluster.go` `populateResourceRequests` lists pods by
//!   `spec.nodeName`), so a nominated pod may move to a new claim when newer pods fill
//!   its first one; that is no extra node. Once the claim's Node registers, its room is the
//!   Node's allocatable (core `state/statenode.go` `Allocatable`, l. 377–391), which may be
//!   less than the claim promised, so a pass may move a nominated pod off it while other
//!   pods are bound to it: a claim that hosts pods was not launched for nothing either. An
//!   earlier claim nobody is nominated or bound to any more was launched for nothing, and
//!   that is the duplicate judged here — unless the pod moved to a claim its preferred node
//!   affinity ranks above the earlier one, which Karpenter does whenever it can
//!   ([`preference`]): the wave may have one claim more per such move, and the claim a move
//!   leaves behind is judged as unused capacity from the move on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Ctx, Invariant, Violation, format_duration};
use crate::oracle::batches::split;
use crate::oracle::first_fit::{Demand, Placed, PoolSupply, by_weight, first_fit_decreasing, first_fit_in_batches};
use crate::oracle::resources::{Offering, Resources, allowed_offerings, daemonset_overhead};
use crate::oracle::view::{InstanceView, NodeView, PodView, View};
use dovetail_world::SimDuration;
use preference::LeftBehind;

#[path = "over_provisioning_preference.rs"]
mod preference;

/// The invariant's name.
pub const NAME: &str = "overProvisioning";

/// One wave of pending pods and the claims created while it lasts.
struct Wave {
    start: Duration,
    /// uid → (key, pod, requests).
    pods: BTreeMap<String, (String, Arc<Value>, Resources)>,
    claims: BTreeSet<String>,
    /// Per pool, the offerings when the wave started.
    supply: Vec<(String, Arc<Value>, Vec<Offering>)>,
    overhead: Resources,
    /// Pod uids in the order they became pending (ties by key): the order a lagging watch
    /// delivers them in.
    order: Vec<String>,
    /// The longest watch-delivery delay in force while the wave lasted.
    watch_delay: Duration,
    /// uid → the wave's NodeClaim kube-scheduler bound the pod to, when that is not the claim
    /// Karpenter last nominated it to ([`misdirected`]).
    misdirected: BTreeMap<String, String>,
    /// Pods seen bound already (uids).
    bound: BTreeSet<String>,
    /// The packing's bound and what it was computed for: (pods, misdirected, delay).
    bound_for: Option<((usize, usize, Duration), usize)>,
    reported: bool,
}

/// What the invariant remembers of a NodeClaim.
#[derive(Clone, Debug, Default)]
struct ClaimLife {
    created: Duration,
    nodepool: String,
    node_name: Option<String>,
    initialized_at: Option<Duration>,
    gone_at: Option<Duration>,
    used: bool,
    /// When a pod was first bound to its Node.
    hosted_at: Option<Duration>,
}

impl ClaimLife {
    /// Live and not yet initialized at `t`.
    fn in_flight_at(&self, t: Duration) -> bool {
        self.created <= t && self.gone_at.is_none_or(|g| g > t) && self.initialized_at.is_none_or(|i| i > t)
    }
}

/// The invariant.
#[derive(Default)]
pub struct OverProvisioning {
    wave: Option<Wave>,
    claims: BTreeMap<String, ClaimLife>,
    /// Nominations handled: (pod, claim).
    nominations: BTreeSet<(String, String)>,
    /// Repeats handled: (pod, claim, when), a later pass nominating the same pod to the
    /// same claim again ([`crate::oracle::nomination`]).
    repeats: BTreeSet<(String, String, Duration)>,
    /// Pod → the claims it was nominated to, with when.
    nominated: BTreeMap<String, Vec<(Duration, String)>>,
    reported_unused: BTreeSet<String>,
    /// Claim → when a pod was last nominated to it.
    last_nominated: BTreeMap<String, Duration>,
    /// Re-nominations awaiting judgement: (pod, earlier claim, new claim, new claim's
    /// creation, seen at).
    suspects: Vec<(String, String, String, Duration, Duration)>,
    /// Claims preference moves left behind.
    left_behind: LeftBehind,
}

/// How long after a re-nomination the earlier claim may still receive a nomination that
/// shows it is wanted (a few provisioning passes).
const DUPLICATE_GRACE: Duration = Duration::from_secs(30);

/// Whether a pod waits for a node: active, not a DaemonSet pod, unbound, ungated.
pub fn is_pending(p: &PodView) -> bool {
    p.node_name.is_none()
        && p.active()
        && !p.daemonset
        && p.object.pointer("/spec/schedulingGates").and_then(Value::as_array).is_none_or(|g| g.is_empty())
}

/// DaemonSet overhead every new node carries, from the DaemonSet pods seen.
fn overhead(pods: &[PodView]) -> Resources {
    let mut owners = BTreeSet::new();
    let templates: Vec<Value> = pods
        .iter()
        .filter(|p| p.daemonset)
        .filter_map(|p| {
            let owner = p.object.pointer("/metadata/ownerReferences/0/uid")?.as_str()?.to_string();
            owners.insert(owner).then(|| serde_json::json!({"spec": {"template": {"spec": p.object["spec"].clone()}}}))
        })
        .collect();
    daemonset_overhead(templates.iter())
}

/// A pool's `consolidateAfter`: `None` for `Never`; Karpenter's default is 0s.
pub fn consolidate_after(pool: &Value) -> Option<Duration> {
    match pool.pointer("/spec/disruption/consolidateAfter").and_then(Value::as_str) {
        None => Some(Duration::ZERO),
        Some("Never") => None,
        Some(s) => Some(SimDuration::parse(s).map_or(Duration::ZERO, |d| d.0)),
    }
}

impl OverProvisioning {
    fn track_claims(&mut self, view: &View, pods: &[PodView]) {
        let now = view.now;
        for c in view.claims.values() {
            let life = self.claims.entry(c.name.clone()).or_insert_with(|| ClaimLife {
                created: c.created,
                nodepool: c.nodepool.clone(),
                ..ClaimLife::default()
            });
            life.node_name = c.node_name.clone();
            if c.initialized && life.initialized_at.is_none() {
                life.initialized_at = Some(now);
            }
            if c.deleting_since.is_some() && life.gone_at.is_none() {
                life.gone_at = c.deleting_since.or(Some(now));
            }
        }
        for (name, life) in &mut self.claims {
            if !view.claims.contains_key(name) && life.gone_at.is_none() {
                life.gone_at = Some(now);
            }
        }
        let busy: BTreeSet<&str> =
            pods.iter().filter(|p| p.active() && !p.daemonset).filter_map(|p| p.node_name.as_deref()).collect();
        for life in self.claims.values_mut() {
            if life.node_name.as_deref().is_some_and(|n| busy.contains(n)) {
                life.used = true;
                life.hosted_at.get_or_insert(now);
            }
        }
    }

    /// New nominations: mark their claims used, and judge duplicates.
    fn nominations(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let by_node: BTreeMap<String, String> =
            self.claims.iter().filter_map(|(name, life)| Some((life.node_name.clone()?, name.clone()))).collect();
        for n in &ctx.view.nominations {
            let claim = n.node_claim.clone().or_else(|| n.node.as_ref().and_then(|node| by_node.get(node).cloned()));
            let Some(claim) = claim else { continue };
            if !self.claims.contains_key(&claim) {
                continue;
            }
            if !self.nominations.insert((n.pod.clone(), claim.clone())) {
                // A repeat: the claim is still wanted then; it is not a new nomination to
                // judge for duplicates (the first one was).
                if self.repeats.insert((n.pod.clone(), claim.clone(), n.at)) {
                    let last = self.last_nominated.entry(claim.clone()).or_default();
                    *last = (*last).max(n.at);
                    self.nominated.entry(n.pod.clone()).or_default().push((n.at, claim));
                }
                continue;
            }
            let created = self.claims[&claim].created;
            if let Some(life) = self.claims.get_mut(&claim) {
                life.used = true;
            }
            let last = self.last_nominated.entry(claim.clone()).or_default();
            *last = (*last).max(n.at);
            let earlier = self.nominated.entry(n.pod.clone()).or_default();
            let duplicate = earlier.iter().find(|(at, other)| {
                *other != claim && *at <= created && self.claims.get(other).is_some_and(|o| o.in_flight_at(created))
            });
            if let Some((_, other)) = duplicate {
                self.left_behind.classify(ctx, &n.pod, other, &claim, created);
                self.suspects.push((n.pod.clone(), other.clone(), claim.clone(), created, ctx.view.now));
            }
            earlier.push((n.at, claim));
        }
        self.judge_suspects(ctx, out);
    }

    /// A re-nomination is a duplicate launch when, `DUPLICATE_GRACE` on, no pod has been
    /// nominated to the earlier claim since the new one was created.
    fn judge_suspects(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let now = ctx.view.now;
        let (ripe, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.suspects).into_iter().partition(|s| now >= s.4 + DUPLICATE_GRACE);
        self.suspects = waiting;
        for (pod, other, claim, created, _) in &self.suspects {
            self.left_behind.classify(ctx, pod, other, claim, *created);
        }
        for (pod, other, claim, created, _) in ripe {
            if self.last_nominated.get(&other).is_some_and(|last| *last >= created) {
                continue;
            }
            if self.left_behind.classify(ctx, &pod, &other, &claim, created) {
                continue;
            }
            if self.claims.get(&other).is_some_and(|o| o.hosted_at.is_some()) {
                continue;
            }
            out.push(Violation {
                invariant: NAME.into(),
                at: now,
                objects: vec![format!("Pod {pod}"), format!("NodeClaim {other}"), format!("NodeClaim {claim}")],
                message: format!(
                    "pod {pod} nominated to new NodeClaim {claim} (created at {}) while NodeClaim {other} it was \
                     nominated to was still in flight, and no pod has been nominated to {other} since: a duplicate launch",
                    format_duration(created)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }

    /// When a preference move left `claim` behind with no pod nominated to it since, nor
    /// bound to its Node: from then on nobody wants it.
    fn abandoned(&self, claim: &str) -> Option<Duration> {
        let since = self.left_behind.since(claim)?;
        let wanted = self.last_nominated.get(claim).is_some_and(|last| *last >= since)
            || self.claims.get(claim).is_some_and(|c| c.hosted_at.is_some());
        (!wanted).then_some(since)
    }

    /// Opens, grows, judges and closes the current wave.
    fn waves(&mut self, ctx: &Ctx<'_>, new_claims: &[String], out: &mut Vec<Violation>) {
        let mut pending: Vec<&PodView> = ctx.pods.iter().filter(|p| is_pending(p)).collect();
        pending.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.key.cmp(&b.key)));
        if self.wave.is_none() && !pending.is_empty() {
            let supply = ctx
                .view
                .pools
                .iter()
                .map(|(name, p)| {
                    (name.clone(), p.object.clone(), allowed_offerings(ctx.cloud, &p.object, ctx.view.now))
                })
                .collect();
            self.wave = Some(Wave {
                start: ctx.view.now,
                pods: BTreeMap::new(),
                claims: BTreeSet::new(),
                supply,
                overhead: overhead(ctx.pods),
                order: Vec::new(),
                watch_delay: Duration::ZERO,
                misdirected: BTreeMap::new(),
                bound: BTreeSet::new(),
                bound_for: None,
                reported: false,
            });
        }
        let move_targets = self.left_behind.targets().clone();
        let Some(wave) = &mut self.wave else { return };
        wave.watch_delay = wave.watch_delay.max(ctx.watch_delay);
        for p in &pending {
            if !wave.pods.contains_key(&p.uid) {
                wave.order.push(p.uid.clone());
                wave.pods.insert(p.uid.clone(), (p.key.clone(), p.object.clone(), p.requests));
            }
        }
        let replacing = ctx.view.nodes.values().any(|n| n.disrupted);
        if !replacing {
            wave.claims.extend(new_claims.iter().cloned());
        }
        misdirected(wave, ctx, &self.claims, &self.nominated);
        let live: Vec<&String> = wave
            .claims
            .iter()
            .filter(|c| ctx.view.claims.get(*c).is_some_and(|c| c.deleting_since.is_none()))
            .collect();
        if !wave.reported && !live.is_empty() {
            let slack = ctx.config.over_provisioning.slack_per_pool as usize;
            let key = (wave.pods.len(), wave.misdirected.len(), wave.watch_delay);
            let bound = match wave.bound_for {
                Some((k, bound)) if k == key => bound,
                _ => {
                    let registered = registered_allocatable(&self.claims, &ctx.view.nodes);
                    let bound = wave_bound(wave, &ctx.view.instances, &registered, slack);
                    wave.bound_for = Some((key, bound));
                    bound
                }
            };
            // Each preference move launched one claim the one-pass packing does not count.
            let moved = wave.claims.intersection(&move_targets).count();
            if live.len() > bound + moved {
                wave.reported = true;
                let mut objects: Vec<String> = live.iter().rev().take(5).map(|c| format!("NodeClaim {c}")).collect();
                objects.sort();
                let seen = if wave.watch_delay.is_zero() {
                    String::new()
                } else {
                    format!(
                        ", one pass per {} pod(s) delivered under a {} watch lag",
                        crate::oracle::batches::pods_per_pass(wave.watch_delay).unwrap_or(0),
                        format_duration(wave.watch_delay)
                    )
                };
                out.push(Violation {
                    invariant: NAME.into(),
                    at: ctx.view.now,
                    objects,
                    message: format!(
                        "{} live NodeClaims created for a wave of {} pending pods (since {}) where a \
                         first-fit-decreasing packing over the allowed offerings needs {} plus {} per NodePool \
                         ({} pod(s) placed where kube-scheduler bound them{seen}; plus {moved} for pods moved to a \
                         claim their preferred node affinity ranks higher)",
                        live.len(),
                        wave.pods.len(),
                        format_duration(wave.start),
                        bound - slack * wave.supply.len(),
                        slack,
                        wave.misdirected.len(),
                    ),
                    trace_position: ctx.view.trace_position,
                });
            }
        }
        if pending.is_empty() {
            self.wave = None;
        }
    }

    /// Initialized claims nobody has used for longer than allowed.
    fn unused(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let Some(healed) = ctx.healed_at else { return };
        let unused_for = ctx.config.over_provisioning.unused_for.0;
        let now = ctx.view.now;
        for (name, life) in &self.claims {
            let Some(initialized) = life.initialized_at else { continue };
            let abandoned = self.abandoned(name);
            if (life.used && abandoned.is_none()) || life.gone_at.is_some() || self.reported_unused.contains(name) {
                continue;
            }
            let Some(pool) = ctx.view.pools.get(&life.nodepool) else { continue };
            let Some(after) = consolidate_after(&pool.object) else { continue };
            let since = initialized.max(healed).max(abandoned.unwrap_or_default());
            if now.saturating_sub(since) <= unused_for + after {
                continue;
            }
            self.reported_unused.insert(name.clone());
            out.push(Violation {
                invariant: NAME.into(),
                at: now,
                objects: vec![format!("NodeClaim {name}")],
                message: format!(
                    "NodeClaim {name} initialized at {} and no pod was bound or nominated to it for {} \
                     (limit {} + consolidateAfter {})",
                    format_duration(initialized),
                    format_duration(now.saturating_sub(since)),
                    format_duration(unused_for),
                    format_duration(after)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}

/// Records the wave's pods kube-scheduler bound to one of the wave's NodeClaims other
/// than the one Karpenter last nominated them to. kube-scheduler does not read Karpenter's
/// nominations: they are Events only (core
/// `pkg/controllers/provisioning/scheduling/events.go` `NominatePodEvent`, l. 35–52), so it
/// binds a pending pod to whichever node fits it once that node is ready, and the pods
/// Karpenter meant for that node must go elsewhere. The packing places such a pod where it
/// was bound: the room it was nominated to is released, the room it took is gone.
fn misdirected(
    wave: &mut Wave,
    ctx: &Ctx<'_>,
    claims: &BTreeMap<String, ClaimLife>,
    nominated: &BTreeMap<String, Vec<(Duration, String)>>,
) {
    let by_node: BTreeMap<&str, &str> =
        claims.iter().filter_map(|(name, life)| Some((life.node_name.as_deref()?, name.as_str()))).collect();
    for p in ctx.pods {
        let Some(node) = p.node_name.as_deref() else { continue };
        if !wave.pods.contains_key(&p.uid) || !wave.bound.insert(p.uid.clone()) {
            continue;
        }
        let Some(claim) = by_node.get(node) else { continue };
        let last = nominated.get(&p.key).and_then(|n| n.last()).map(|(_, c)| c.as_str());
        if last.is_some_and(|c| c != *claim) && wave.claims.contains(*claim) {
            wave.misdirected.insert(p.uid.clone(), claim.to_string());
        }
    }
}

/// Claim → the `status.allocatable` its registered Node reports, for the claims whose Node
/// exists.
fn registered_allocatable(
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

/// What a wave may have: the packing's nodes plus the slack per NodePool. Without watch lag
/// and with every pod where Karpenter meant it, one first-fit-decreasing packing of the whole
/// wave; under a lagging watch, the passes that can have seen the pods in turn
/// ([`crate::oracle::batches`]), each reusing the room earlier passes opened; pods
/// kube-scheduler bound elsewhere than their nomination sit where they were bound, on the
/// room `registered` (claim → its Node's allocatable) says that node has
/// ([`seen_allocatable`]).
fn wave_bound(
    wave: &Wave,
    instances: &[InstanceView],
    registered: &BTreeMap<String, Resources>,
    slack_per_pool: usize,
) -> usize {
    let mut pools: Vec<PoolSupply<'_>> = wave
        .supply
        .iter()
        .map(|(name, pool, offerings)| PoolSupply { name: name.clone(), pool, offerings: offerings.clone() })
        .collect();
    by_weight(&mut pools);
    let demand = |uid: &String| wave.pods.get(uid).map(|(key, pod, requests)| Demand { key, pod, requests: *requests });
    let mut placed: Vec<Placed<'_>> = Vec::new();
    let mut on_placed: BTreeSet<&String> = BTreeSet::new();
    let claims: BTreeSet<&String> = wave.misdirected.values().collect();
    for claim in claims {
        let Some(mut offering) = claim_offering(wave, instances, claim) else { continue };
        if let Some(node) = registered.get(claim) {
            offering.1.allocatable = seen_allocatable(node, &offering.1.allocatable);
        }
        let uids: Vec<&String> = wave.misdirected.iter().filter(|(_, c)| *c == claim).map(|(u, _)| u).collect();
        on_placed.extend(uids.iter().copied());
        placed.push(Placed {
            pool: offering.0,
            offering: offering.1,
            pods: uids.into_iter().filter_map(demand).collect(),
        });
    }
    let rest: Vec<Demand<'_>> = wave.order.iter().filter(|u| !on_placed.contains(u)).filter_map(demand).collect();
    let packing = if wave.watch_delay.is_zero() && placed.is_empty() {
        first_fit_decreasing(&rest, &pools, &wave.overhead)
    } else {
        first_fit_in_batches(&split(&rest, wave.watch_delay), &pools, &wave.overhead, &placed)
    };
    packing.total() + slack_per_pool * wave.supply.len()
}

/// The NodePool and offering a wave's NodeClaim was launched as, from its instance.
fn claim_offering(wave: &Wave, instances: &[InstanceView], claim: &str) -> Option<(String, Offering)> {
    let instance = instances.iter().find(|i| i.nodeclaim.as_deref() == Some(claim))?;
    wave.supply.iter().find_map(|(name, _, offerings)| {
        offerings
            .iter()
            .find(|o| {
                o.instance_type == instance.instance_type
                    && o.zone == instance.zone
                    && o.capacity_type == instance.capacity_type
            })
            .map(|o| (name.clone(), o.clone()))
    })
}

impl Invariant for OverProvisioning {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let new_claims: Vec<String> =
            ctx.view.claims.keys().filter(|name| !self.claims.contains_key(*name)).cloned().collect();
        self.track_claims(ctx.view, ctx.pods);
        self.nominations(ctx, out);
        self.waves(ctx, &new_claims, out);
        self.unused(ctx, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn consolidate_after_defaults_to_zero_and_never_is_none() {
        assert_eq!(consolidate_after(&json!({"spec": {}})), Some(Duration::ZERO));
        assert_eq!(consolidate_after(&json!({"spec": {"disruption": {"consolidateAfter": "Never"}}})), None);
        assert_eq!(
            consolidate_after(&json!({"spec": {"disruption": {"consolidateAfter": "1m30s"}}})),
            Some(Duration::from_secs(90))
        );
    }

    #[test]
    fn in_flight_means_live_and_not_yet_initialized() {
        let life = ClaimLife {
            created: Duration::from_secs(10),
            initialized_at: Some(Duration::from_secs(60)),
            ..ClaimLife::default()
        };
        assert!(!life.in_flight_at(Duration::from_secs(9)));
        assert!(life.in_flight_at(Duration::from_secs(30)));
        assert!(!life.in_flight_at(Duration::from_secs(60)));
        let gone = ClaimLife {
            created: Duration::from_secs(10),
            gone_at: Some(Duration::from_secs(20)),
            ..ClaimLife::default()
        };
        assert!(!gone.in_flight_at(Duration::from_secs(30)), "a deleted claim is not in flight");
    }
}

#[cfg(test)]
#[path = "over_provisioning_tests.rs"]
mod wave_tests;
