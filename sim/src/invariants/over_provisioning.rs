//! `overProvisioning`: the controller launches what pending pods need, and no more.
//!
//! Three rules, judged from outside the controller:
//! - **Per wave.** Pods that become pending while others are still pending form a wave; it
//!   ends when none of them is pending any more. The NodeClaims created during a wave and
//!   still live may never outnumber what an independent first-fit-decreasing packing of the
//!   wave's pods over the allowed, available offerings needs ([`crate::oracle::first_fit`])
//!   plus `slackPerPool` per NodePool, counted when each claim is created against what was
//!   known then (the wave's pods pending and the bindings seen by then; module `wave`, with
//!   the upstream lines). A NodeClaim created while some Node carries the
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
//!     delay in force ([`crate::oracle::first_fit::first_fit_in_batches`]). Without lag the whole wave is one pass.
//!   - *Pods that were not pending yet.* A wave lasts while any of its pods is pending, so
//!     pods that became pending a minute apart may share one; a pass sees only the pods of
//!     its batching window (core `provisioning/batcher.go` `Wait`, l. 72–110: idle 1 s, max
//!     10 s) that were pending when it started (`provisioner.go` `Schedule` →
//!     `GetPendingPods`, l. 362–378), and a claim opened for the first pods is sized for
//!     them, not for pods that came later. So the packing also goes pass by pass over the
//!     windows of the instants the pods became pending, cut where a claim of the wave was
//!     created ([`crate::oracle::batches::windows`]); pods pending in one window with no
//!     claim created among them are still packed in one pass.
//!   - *Where kube-scheduler binds.* Karpenter's nominations are Events kube-scheduler never
//!     reads (core `scheduling/events.go` `NominatePodEvent`, l. 35–52), so it may bind a
//!     pod to another of the wave's claims than the one Karpenter meant, taking room meant
//!     for others. Such a pod is placed where it was bound ([`misdirected`]) on the node
//!     its claim's `status.providerID` names (set at launch, core
//!     `nodeclaim/lifecycle/launch.go` l. 141; the instance's `karpenter.sh/nodeclaim` tag
//!     comes only after the Node registers, aws `pkg/controllers/nodeclaim/tagging/
//!     controller.go` `isTaggable`, l. 131–141), of
//!     the room Karpenter sees there: once the claim's Node has registered, that is the
//!     Node's `status.allocatable` (with the claim's estimate only where the Node reports
//!     zero), not the estimate the claim was launched with (core
//!     `pkg/controllers/state/statenode.go` `Allocatable`, l. 377–392: `lo.Assign` of
//!     `Node.Status.Allocatable`, l. 381, filled from `NodeClaim.Status.Allocatable` for
//!     zero quantities, l. 382–386; the claim's own figure only while no Node exists,
//!     l. 389). A kubelet that reports less than the estimate leaves fewer pods room there,
//!     and the next pass opens a claim for the rest ([`wave::seen_allocatable`]). The claim
//!     such a pod was meant for stays, at the size it was launched with: later passes plan
//!     on it and no pass takes it back before it initializes, so the packing places it too,
//!     and the pods still pending fill it first ([`wave::wave_bound`]).
//! - **Unused capacity.** A NodeClaim that has initialized and had no pod bound to its node
//!   nor nominated to it (Karpenter's `Nominated` Events, [`crate::oracle::nomination`]) for
//!   `unusedFor` plus its NodePool's `consolidateAfter` (Karpenter removes an empty node
//!   after `consolidateAfter`), counted from when faults healed at the earliest. A pool with
//!   `consolidateAfter: Never` keeps empty nodes by design (core
//!   `pkg/controllers/nodeclaim/disruption/consolidation.go` l. 45 sets no Consolidatable
//!   condition without a duration) and is not judged.
//! - **No duplicate.** A pod nominated to a new NodeClaim (still in flight when nominated:
//!   a nomination to an initialized node is no launch decision) while a NodeClaim it was
//!   nominated to earlier is still in flight (live, not yet initialized) was provisioned
//!   twice, unless the earlier claim is still wanted: some pod is nominated to it at or
//!   after the new claim's creation, or a pod is bound to its Node (judged once the earlier
//!   claim is gone or has been initialized a while, [`ripe`]: nominations are lossy
//!   Events). Why the excuse:
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
//!   leaves behind is judged as unused capacity from the move on. Nor is it a duplicate when
//!   the pod's `DoNotSchedule` zone spread forbade the earlier claim's zone in the pass that
//!   moved it ([`spread`]: a pass counts bound pods, not earlier nominations); that claim
//!   too is judged as unused capacity from the move on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::nodepool_limits::counts_for_limits;
use super::{Ctx, Invariant, Violation, format_duration};
use crate::oracle::resources::{Resources, allowed_offerings, daemonset_overhead};
use crate::oracle::view::{PodView, View};
use dovetail_world::SimDuration;
use preference::LeftBehind;
use wave::{BoundKey, LaunchedAs, Wave, claim_node_names, misdirected, registered_allocatable, wave_bound};

#[path = "over_provisioning_preference.rs"]
mod preference;
#[path = "over_provisioning_spread.rs"]
mod spread;
#[path = "over_provisioning_wave.rs"]
mod wave;

/// The invariant's name.
pub const NAME: &str = "overProvisioning";

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
    /// What it was launched as, from the instance its `status.providerID` names.
    launched_as: Option<LaunchedAs>,
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
    /// Nominations handled, pod → claim → the repeats handled (when a later pass nominated
    /// the same pod to the same claim again, [`crate::oracle::nomination`]). Nested by name
    /// so the every-tick re-reading of old nominations looks them up without allocating.
    handled: BTreeMap<String, BTreeMap<String, BTreeSet<Duration>>>,
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
    /// Re-nominations (pod, earlier claim) the pod's zone spread forced ([`spread`]).
    spread_moves: BTreeSet<(String, String)>,
}

/// How long after a re-nomination the earlier claim may still receive a nomination that
/// shows it is wanted (a few provisioning passes).
const DUPLICATE_GRACE: Duration = Duration::from_secs(30);

/// Whether a suspect re-nomination (seen at `seen`) away from the claim `earlier` can be
/// judged at `now`: `DUPLICATE_GRACE` after it was seen, and once the earlier claim is gone
/// or has been initialized for `DUPLICATE_GRACE` (time for kube-scheduler to bind to it).
/// Not sooner, because the nominations that would show the claim still wanted may never be
/// written: upstream's recorder drops a pod's `Nominated` Event repeated within 2 minutes
/// whatever its target (core `pkg/events/recorder.go`: the dedupe key is reason and pod
/// UID, l. 40–45, kept `defaultDedupeTimeout` = 2 min, l. 56 and l. 79; the pod UID is the
/// nomination's `DedupeValues`, `scheduling/events.go` l. 50) and rate-limits the rest
/// (l. 83, `PodNominationRateLimiter`, l. 33). A pod bound to its Node is the evidence that
/// does not depend on Events.
fn ripe(earlier: Option<&ClaimLife>, seen: Duration, now: Duration) -> bool {
    let settled = earlier.is_none_or(|c| {
        c.gone_at.is_some_and(|g| g <= now) || c.initialized_at.is_some_and(|i| now >= i + DUPLICATE_GRACE)
    });
    now >= seen + DUPLICATE_GRACE && settled
}

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
        let node_names = claim_node_names(view);
        for c in view.claims.values() {
            let life = self.claims.entry(c.name.clone()).or_insert_with(|| ClaimLife {
                created: c.created,
                nodepool: c.nodepool.clone(),
                ..ClaimLife::default()
            });
            life.node_name = node_names.get(c.name.as_str()).map(|n| (*n).to_string());
            if life.launched_as.is_none() {
                life.launched_as = view.instance_of(c).map(|i| LaunchedAs {
                    nodepool: c.nodepool.clone(),
                    instance_type: i.instance_type.clone(),
                    zone: i.zone.clone(),
                    capacity_type: i.capacity_type,
                });
            }
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
        let mut fresh = Vec::new();
        for n in &ctx.view.nominations {
            let claim = n
                .node_claim
                .as_deref()
                .or_else(|| n.node.as_ref().and_then(|node| by_node.get(node)).map(String::as_str));
            let Some(claim) = claim else { continue };
            if !self.claims.contains_key(claim) {
                continue;
            }
            if let Some(repeats) = self.handled.get_mut(&n.pod).and_then(|claims| claims.get_mut(claim)) {
                // A repeat: the claim is still wanted then; it is not a new nomination to
                // judge for duplicates (the first one was).
                if repeats.insert(n.at) {
                    let last = self.last_nominated.entry(claim.to_string()).or_default();
                    *last = (*last).max(n.at);
                    self.nominated.entry(n.pod.clone()).or_default().push((n.at, claim.to_string()));
                }
                continue;
            }
            self.handled.entry(n.pod.clone()).or_default().insert(claim.to_string(), BTreeSet::new());
            let claim = claim.to_string();
            let created = self.claims[&claim].created;
            if let Some(life) = self.claims.get_mut(&claim) {
                life.used = true;
            }
            let last = self.last_nominated.entry(claim.clone()).or_default();
            *last = (*last).max(n.at);
            // Only a nomination to a claim still in flight can be the launch decision: one to a
            // claim whose node has initialized places the pod on capacity that exists (story
            // 804998432: pods nominated at 5m32s to a node created at 1m1s).
            let launching = self.claims.get(&claim).is_some_and(|c| c.in_flight_at(n.at));
            let earlier = self.nominated.entry(n.pod.clone()).or_default();
            let duplicate = earlier.iter().filter(|_| launching).find(|(at, other)| {
                *other != claim && *at <= created && self.claims.get(other).is_some_and(|o| o.in_flight_at(created))
            });
            if let Some((_, other)) = duplicate {
                fresh.push((n.pod.clone(), other.clone(), claim.clone(), created, n.at));
            }
            earlier.push((n.at, claim));
        }
        // Judged once every nomination of the tick is recorded: the spread counts the whole
        // pass's placements.
        for (pod, other, claim, created, pass_at) in fresh {
            self.left_behind.classify(ctx, &pod, &other, &claim, created);
            if spread::spread_forced(ctx, &self.nominated, &pod, &other, pass_at) {
                self.left_behind.forced_move(&other, created);
                self.spread_moves.insert((pod.clone(), other.clone()));
            }
            self.suspects.push((pod, other, claim, created, ctx.view.now));
        }
        self.judge_suspects(ctx, out);
    }

    /// A re-nomination is a duplicate launch when, once the earlier claim's fate is known
    /// ([`ripe`]), no pod has been nominated to it since the new one was created and none
    /// was ever bound to its Node.
    fn judge_suspects(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let now = ctx.view.now;
        let claims = &self.claims;
        let (ripe, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.suspects).into_iter().partition(|s| ripe(claims.get(&s.1), s.4, now));
        self.suspects = waiting;
        for (pod, other, claim, created, _) in &self.suspects {
            self.left_behind.classify(ctx, pod, other, claim, *created);
        }
        for (pod, other, claim, created, _) in ripe {
            if self.last_nominated.get(&other).is_some_and(|last| *last >= created) {
                continue;
            }
            if self.left_behind.classify(ctx, &pod, &other, &claim, created)
                || self.spread_moves.contains(&(pod.clone(), other.clone()))
            {
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
                    (
                        name.clone(),
                        p.object.clone(),
                        allowed_offerings(ctx.cloud, &ctx.view.overlays, &p.object, ctx.view.now),
                    )
                })
                .collect();
            let catalog = ctx.cloud.catalog();
            let mut used: BTreeMap<String, Resources> = BTreeMap::new();
            // What Karpenter's state counts against the limits (`nodepool_limits`).
            let counted = ctx.view.instances.iter().filter(|i| i.live && counts_for_limits(ctx.view, i));
            for i in counted {
                let (Some(pool), Some(info)) = (&i.nodepool, catalog.get(&i.instance_type)) else { continue };
                let took = Resources {
                    cpu: f64::from(info.vcpu) * 1000.0,
                    memory: info.memory_mib as f64 * 1024.0 * 1024.0,
                    pods: 0.0,
                };
                used.entry(pool.clone()).or_default().add(&took);
            }
            self.wave = Some(Wave {
                start: ctx.view.now,
                used,
                pods: BTreeMap::new(),
                claims: BTreeSet::new(),
                supply,
                overhead: overhead(ctx.pods),
                order: Vec::new(),
                pending_at: BTreeMap::new(),
                cuts: BTreeSet::new(),
                watch_delay: Duration::ZERO,
                misdirected: BTreeMap::new(),
                foreign: BTreeMap::new(),
                landed: BTreeMap::new(),
                released: BTreeMap::new(),
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
                wave.pending_at.insert(p.uid.clone(), p.created);
                wave.pods.insert(p.uid.clone(), (p.key.clone(), p.object.clone(), p.requests));
            }
        }
        let replacing = ctx.view.nodes.values().any(|n| n.disrupted);
        let mut joined: Vec<(Duration, &String)> = Vec::new();
        if !replacing {
            wave.claims.extend(new_claims.iter().cloned());
            joined = new_claims.iter().filter_map(|c| Some((self.claims.get(c)?.created, c))).collect();
            joined.sort();
            wave.cuts.extend(joined.iter().map(|(at, _)| *at));
        }
        misdirected(wave, ctx, &self.claims, &self.nominated);
        // Each claim is judged once, when it is created, against what was known then
        // (module `wave`): the live claims created by then, the pods pending, and the
        // misdirected bindings seen by then.
        for (at, _) in joined {
            if wave.reported {
                break;
            }
            let live: BTreeSet<String> = wave
                .claims
                .iter()
                .filter(|c| self.claims.get(*c).is_some_and(|l| l.created <= at))
                .filter(|c| ctx.view.claims.get(*c).is_some_and(|c| c.deleting_since.is_none()))
                .cloned()
                .collect();
            let slack = ctx.config.over_provisioning.slack_per_pool as usize;
            let registered = registered_allocatable(&self.claims, &ctx.view.nodes);
            let launched: BTreeMap<String, LaunchedAs> =
                self.claims.iter().filter_map(|(name, life)| Some((name.clone(), life.launched_as.clone()?))).collect();
            let key = BoundKey::of(wave, at, &live, &launched, &registered);
            let released = wave.released_by(at).filter(|c| live.contains(*c)).count();
            let bound = match &wave.bound_for {
                Some((k, bound)) if *k == key => *bound,
                _ => {
                    let bound = wave_bound(wave, at, &live, &launched, &registered, slack);
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
                         ({} pod(s) placed where kube-scheduler bound them, {released} claim(s) they were meant for \
                         kept{seen}; plus {moved} for pods moved to a claim their preferred node affinity ranks higher)",
                        live.len(),
                        wave.pods.len(),
                        format_duration(wave.start),
                        bound - slack * wave.supply.len(),
                        slack,
                        wave.misdirected_by(at).len(),
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

    /// A suspect waits for the earlier claim's fate, since repeated nominations may never be
    /// written; once the claim is gone, or initialized `DUPLICATE_GRACE` ago, it is judged.
    #[test]
    fn a_duplicate_is_judged_once_the_earlier_claims_fate_is_known() {
        let secs = Duration::from_secs;
        let in_flight = ClaimLife { created: secs(10), ..ClaimLife::default() };
        assert!(!ripe(Some(&in_flight), secs(20), secs(200)), "still launching: not yet");
        let initialized = ClaimLife { initialized_at: Some(secs(60)), ..in_flight.clone() };
        assert!(!ripe(Some(&initialized), secs(20), secs(80)), "initialized 20 s ago: binding may still come");
        assert!(ripe(Some(&initialized), secs(20), secs(90)), "initialized 30 s ago");
        let gone = ClaimLife { gone_at: Some(secs(40)), ..in_flight };
        assert!(!ripe(Some(&gone), secs(20), secs(45)), "seen 25 s ago");
        assert!(ripe(Some(&gone), secs(20), secs(50)));
        assert!(ripe(None, secs(20), secs(50)), "an unknown claim is judged on time");
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
