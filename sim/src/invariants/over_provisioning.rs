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
//!   stays until the candidates are gone.
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
//!   after the new claim's creation (judged `DUPLICATE_GRACE` later). Why the excuse:
//!   Karpenter re-simulates every pending pod on each provisioning pass
//!   (core `pkg/controllers/provisioning/provisioner.go` `Schedule` → `GetPendingPods`),
//!   and an in-flight node's free capacity subtracts only pods *bound* to it (core
//!   `pkg/controllers/state/cluster.go` `populateResourceRequests` lists pods by
//!   `spec.nodeName`), so a nominated pod may move to a new claim when newer pods fill
//!   its first one; that is no extra node. An earlier claim nobody is nominated to any
//!   more was launched for nothing, and that is the duplicate judged here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Ctx, Invariant, Violation, format_duration};
use crate::oracle::first_fit::{Demand, PoolSupply, by_weight, first_fit_decreasing};
use crate::oracle::resources::{Offering, Resources, allowed_offerings, daemonset_overhead};
use crate::oracle::view::{PodView, View};
use dovetail_world::SimDuration;

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
    /// The packing's bound for this many pods, once computed.
    bound: Option<(usize, usize)>,
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
    /// Pod → the claims it was nominated to, with when.
    nominated: BTreeMap<String, Vec<(Duration, String)>>,
    reported_unused: BTreeSet<String>,
    /// Claim → when a pod was last nominated to it.
    last_nominated: BTreeMap<String, Duration>,
    /// Re-nominations awaiting judgement: (pod, earlier claim, new claim, new claim's
    /// creation, seen at).
    suspects: Vec<(String, String, String, Duration, Duration)>,
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
            if !self.claims.contains_key(&claim) || !self.nominations.insert((n.pod.clone(), claim.clone())) {
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
        for (pod, other, claim, created, _) in ripe {
            if self.last_nominated.get(&other).is_some_and(|last| *last >= created) {
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

    /// Opens, grows, judges and closes the current wave.
    fn waves(&mut self, ctx: &Ctx<'_>, new_claims: &[String], out: &mut Vec<Violation>) {
        let pending: Vec<&PodView> = ctx.pods.iter().filter(|p| is_pending(p)).collect();
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
                bound: None,
                reported: false,
            });
        }
        let Some(wave) = &mut self.wave else { return };
        for p in &pending {
            wave.pods.entry(p.uid.clone()).or_insert_with(|| (p.key.clone(), p.object.clone(), p.requests));
        }
        let replacing = ctx.view.nodes.values().any(|n| n.disrupted);
        if !replacing {
            wave.claims.extend(new_claims.iter().cloned());
        }
        let live: Vec<&String> = wave
            .claims
            .iter()
            .filter(|c| ctx.view.claims.get(*c).is_some_and(|c| c.deleting_since.is_none()))
            .collect();
        if !wave.reported && !live.is_empty() {
            let bound = match wave.bound {
                Some((pods, bound)) if pods == wave.pods.len() => bound,
                _ => {
                    let bound = wave_bound(wave, ctx.config.over_provisioning.slack_per_pool as usize);
                    wave.bound = Some((wave.pods.len(), bound));
                    bound
                }
            };
            if live.len() > bound {
                wave.reported = true;
                let mut objects: Vec<String> = live.iter().rev().take(5).map(|c| format!("NodeClaim {c}")).collect();
                objects.sort();
                out.push(Violation {
                    invariant: NAME.into(),
                    at: ctx.view.now,
                    objects,
                    message: format!(
                        "{} live NodeClaims created for a wave of {} pending pods (since {}) where a \
                         first-fit-decreasing packing over the allowed offerings needs {} plus {} per NodePool",
                        live.len(),
                        wave.pods.len(),
                        format_duration(wave.start),
                        bound - ctx.config.over_provisioning.slack_per_pool as usize * wave.supply.len(),
                        ctx.config.over_provisioning.slack_per_pool
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
            if life.used || life.gone_at.is_some() || self.reported_unused.contains(name) {
                continue;
            }
            let Some(pool) = ctx.view.pools.get(&life.nodepool) else { continue };
            let Some(after) = consolidate_after(&pool.object) else { continue };
            let since = initialized.max(healed);
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

/// What a wave may have: the packing's nodes plus the slack per NodePool.
fn wave_bound(wave: &Wave, slack_per_pool: usize) -> usize {
    let mut pools: Vec<PoolSupply<'_>> = wave
        .supply
        .iter()
        .map(|(name, pool, offerings)| PoolSupply { name: name.clone(), pool, offerings: offerings.clone() })
        .collect();
    by_weight(&mut pools);
    let demands: Vec<Demand<'_>> =
        wave.pods.values().map(|(key, pod, requests)| Demand { key, pod, requests: *requests }).collect();
    first_fit_decreasing(&demands, &pools, &wave.overhead).total() + slack_per_pool * wave.supply.len()
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
