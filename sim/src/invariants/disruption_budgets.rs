//! `disruptionBudgets`: the nodes the controller is voluntarily disrupting in a NodePool
//! never exceed what its `spec.disruption.budgets` allow (see [`crate::oracle::budget`] for the
//! arithmetic).
//!
//! Counted like Karpenter: `numNodes` is the pool's initialized claims not yet
//! InstanceTerminating; a claim is disrupting when it or its Node is being deleted or the
//! Node carries `karpenter.sh/disrupted`. Disruptions budgets do not govern are left out:
//! deletions a non-controller host started (a person, a test driver), instances the cloud
//! is taking away (spot reclaim, scheduled events, outages), expiration, and NodeRepair's
//! replacement of a Node NotReady past its toleration ([`REPAIR_TOLERATION`]).
//!
//! Two checks. At every tick the disrupting nodes stay within the loosest reason's budget
//! (whatever the reasons, no more may be disrupting). And each reason's budget holds on its
//! own: when a claim starts disrupting for reason R — the `reason` of the `DisruptionReason`
//! condition the controller writes on the NodeClaim (core
//! `pkg/controllers/disruption/queue.go`: `SetTrueWithReason(ConditionTypeDisruptionReason,
//! string(cmd.Reason()), ...)`) — all the pool's voluntarily disrupting nodes, that one
//! included, fit R's budget: Karpenter allows a command of reason R only
//! `MustGetAllowedDisruptions(reason) - disrupting` nodes (core
//! `pkg/controllers/disruption/helpers.go`, `BuildDisruptionBudgetMapping`). Claims first seen
//! disrupting at the same tick are ordered by the Events their commands write as they start
//! ([`started_order`]); a start counts the others of its tick only when they started first,
//! or when nothing orders them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::consolidation_legality::REPLACEMENT_WINDOW;
use super::{Ctx, Invariant, Violation};
use crate::oracle::budget::{allowed_for_reason, cap, wall_time};
use crate::oracle::view::{ClaimView, View};
use dovetail_world::SimDuration;

/// How long a Node may be NotReady (`Ready` False or Unknown) before Karpenter's NodeRepair
/// (gate `NodeRepair`) deletes its NodeClaim: aws/karpenter-provider-aws v1.14.1
/// `pkg/cloudprovider/cloudprovider.go` l. 305–317 (`RepairPolicies`). Such a delete is not
/// governed by disruption budgets nor stopped by `karpenter.sh/do-not-disrupt`: core
/// `pkg/controllers/node/health/controller.go` l. 158–162 deletes with no budget or
/// do-not-disrupt check, and its `suite_test.go` l. 251–287 asserts it ("should ignore node
/// disruption budgets", "should ignore do-not-disrupt on a node").
pub const REPAIR_TOLERATION: Duration = Duration::from_secs(30 * 60);

/// The checker sees a Node turn NotReady up to one tick late.
const TICK_SLACK: Duration = Duration::from_secs(2);

/// Names of NodeClaims and Nodes whose deletion a non-controller host started, and the claims
/// whose deletion was a NodeRepair (their Node NotReady for [`REPAIR_TOLERATION`] when the
/// deletion started).
#[derive(Debug, Default)]
pub struct ExternalDeletes {
    names: BTreeSet<(String, String)>,
    /// When each Node was first seen not Ready (cleared when it is Ready again).
    not_ready_since: BTreeMap<String, Duration>,
    /// Claims whose deletion was judged, and those judged a repair.
    judged: BTreeSet<String>,
    repaired: BTreeSet<String>,
}

impl ExternalDeletes {
    /// Takes in the deletes recorded since the last tick.
    pub fn update(&mut self, ctx: &Ctx<'_>) {
        for d in ctx.recorded.deletes.iter().filter(|d| !d.by_controller) {
            self.names.insert((d.resource.clone(), d.name.clone()));
        }
        self.observe(ctx.view, ctx.node_repair_possible);
    }

    /// Follows Node readiness and judges each claim once, when its deletion is first seen:
    /// a repair when the `NodeRepair` gate is on at some time of the run (`repair_possible`;
    /// upstream registers the health controller only then, core `controllers.go` l. 178) and
    /// its Node had been not Ready for [`REPAIR_TOLERATION`] by then.
    pub fn observe(&mut self, view: &View, repair_possible: bool) {
        for (name, node) in &view.nodes {
            if node.ready {
                self.not_ready_since.remove(name);
            } else {
                self.not_ready_since.entry(name.clone()).or_insert(view.now);
            }
        }
        self.not_ready_since.retain(|name, _| view.nodes.contains_key(name));
        for claim in view.claims.values() {
            let Some(deleting) = claim.deleting_since else { continue };
            if !self.judged.insert(claim.name.clone()) {
                continue;
            }
            let since = claim.node_name.as_ref().and_then(|n| self.not_ready_since.get(n));
            if repair_possible && since.is_some_and(|s| deleting + TICK_SLACK >= *s + REPAIR_TOLERATION) {
                self.repaired.insert(claim.name.clone());
            }
        }
    }

    /// Whether a claim's disruption was started outside the controller or is one budgets do
    /// not govern (cloud-initiated, expired).
    pub fn exempt(&self, view: &View, claim: &ClaimView, expire_after: Option<Duration>) -> bool {
        let external = self.names.contains(&("nodeclaims".into(), claim.name.clone()))
            || claim.node_name.as_ref().is_some_and(|n| self.names.contains(&("nodes".into(), n.clone())));
        let involuntary = view.instance_of(claim).is_some_and(|i| i.involuntary || !i.live);
        let expired = expire_after.is_some_and(|e| view.now.saturating_sub(claim.created) >= e);
        external || involuntary || expired || self.repaired.contains(&claim.name)
    }
}

/// A pool's `expireAfter` (default 720h; `Never` → none).
pub fn expire_after(pool: &Value) -> Option<Duration> {
    match pool.pointer("/spec/template/spec/expireAfter").and_then(Value::as_str) {
        Some("Never") => None,
        Some(s) => SimDuration::parse(s).ok().map(|d| d.0),
        None => Some(Duration::from_secs(720 * 3600)),
    }
}

/// Where a disruption start falls in the API server's order of writes, from the Event its
/// command writes when it starts (Karpenter starts one command per disruption pass and
/// counts the commands already started against the next one's budget:
/// `disruption/controller.go` `disrupt`, then requeue; `helpers.go`
/// `BuildDisruptionBudgetMapping` subtracts the nodes already disrupting): a delete writes
/// "Disrupting NodeClaim: <Reason>" on its candidate as it starts, a replace writes
/// "Launching NodeClaim: <Reason>" on its replacement (core `disruption/queue.go`
/// `StartCommand`, l. 217; `events.go` `Launching`, `Terminating`); a replace's own
/// Terminating Event comes only once its replacement is ready, long after. Only Events written
/// within [`START_ORDER_WAIT`] of the start count. `None` when there is none: then the order
/// is unknown and each of two same-tick starts counts against the other.
fn started_order(view: &View, start_at: Duration, claim: &ClaimView) -> Option<u64> {
    let reason = claim.disruption_reason.as_deref()?;
    let window = |at: Duration| at + REPLACEMENT_WINDOW >= start_at && at <= start_at + START_ORDER_WAIT;
    view.disruption_events
        .iter()
        .filter(|e| window(e.at))
        .filter(|e| {
            if e.is_launch() {
                e.disruption_reason().is_some_and(|r| r.eq_ignore_ascii_case(reason))
                    && view.claims.get(&e.node_claim).is_some_and(|r| r.nodepool == claim.nodepool)
            } else {
                e.node_claim == claim.name
            }
        })
        .map(|e| e.resource_version)
        .min()
}

/// Whether a claim is being disrupted now (claim or node deleting, or node tainted).
pub fn disrupting(view: &View, claim: &ClaimView) -> bool {
    let node = claim.node_name.as_ref().and_then(|n| view.nodes.get(n));
    claim.deleting_since.is_some() || node.is_some_and(|n| n.deleting || n.disrupted)
}

/// The invariant; reports each pool once per episode over budget.
#[derive(Default)]
pub struct DisruptionBudgets {
    external: ExternalDeletes,
    over: BTreeSet<String>,
    /// Claims whose start of disruption for a reason was seen.
    started: BTreeSet<String>,
    /// Starts waiting for the Events that order them.
    waiting: Vec<Start>,
}

impl Invariant for DisruptionBudgets {
    fn name(&self) -> &'static str {
        "disruptionBudgets"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        self.external.update(ctx);
        let view = ctx.view;
        self.started.retain(|c| view.claims.get(c).is_some_and(|c| c.disruption_reason.is_some()));
        let wall = wall_time(view.now);
        for (name, pool) in &view.pools {
            let expire = expire_after(&pool.object);
            let counted: Vec<&ClaimView> = view
                .claims
                .values()
                .filter(|c| &c.nodepool == name && !c.instance_terminating)
                .filter(|c| {
                    c.initialized || c.node_name.as_ref().and_then(|n| view.nodes.get(n)).is_some_and(|n| n.initialized)
                })
                .collect();
            let voluntary: Vec<&ClaimView> = counted
                .iter()
                .copied()
                .filter(|c| disrupting(view, c) && !self.external.exempt(view, c, expire))
                .collect();
            let budgets: Vec<Value> =
                pool.object.pointer("/spec/disruption/budgets").and_then(Value::as_array).cloned().unwrap_or_default();
            self.judge_starts(view, name, &budgets, counted.len(), &voluntary, wall);
            let allowed = cap(&budgets, counted.len(), wall);
            if voluntary.len() <= allowed {
                self.over.remove(name);
                continue;
            }
            if self.over.insert(name.clone()) {
                let mut objects = vec![format!("NodePool {name}")];
                objects.extend(voluntary.iter().map(|c| format!("NodeClaim {}", c.name)));
                out.push(Violation {
                    invariant: self.name().into(),
                    at: view.now,
                    objects,
                    message: format!(
                        "{} of NodePool {name}'s {} nodes are being disrupted by the controller; its budgets allow {allowed}",
                        voluntary.len(),
                        counted.len()
                    ),
                    trace_position: view.trace_position,
                });
            }
        }
        self.judge_waiting(view, out);
    }
}

/// How long a same-tick start may wait for the `DisruptionTerminating` Events that order it
/// (the controller writes Events asynchronously, after the disruption itself).
pub const START_ORDER_WAIT: Duration = Duration::from_secs(10);

/// A claim first seen disrupting for a reason, judged once its order is known.
#[derive(Clone, Debug)]
struct Start {
    at: Duration,
    pool: String,
    claim: String,
    reason: String,
    allowed: usize,
    counted: usize,
    /// The pool's voluntarily disrupting claims at that tick, this one included.
    disrupting: Vec<String>,
    /// Those first seen disrupting at the same tick.
    same_tick: BTreeSet<String>,
}

impl DisruptionBudgets {
    /// Notes each of `pool`'s claims first seen disrupting for a reason, for
    /// [`Self::judge_waiting`] to judge against its reason's budget once its order among its
    /// tick's starts is known.
    fn judge_starts(
        &mut self,
        view: &View,
        name: &str,
        budgets: &[Value],
        counted: usize,
        voluntary: &[&ClaimView],
        wall: jiff::civil::DateTime,
    ) {
        let same_tick: BTreeSet<String> = voluntary
            .iter()
            .filter(|c| c.disruption_reason.is_some() && !self.started.contains(&c.name))
            .map(|c| c.name.clone())
            .collect();
        let disrupting: Vec<String> = voluntary.iter().map(|c| c.name.clone()).collect();
        for claim in voluntary {
            let Some(reason) = claim.disruption_reason.as_deref() else { continue };
            if !self.started.insert(claim.name.clone()) {
                continue;
            }
            let Some(allowed) = allowed_for_reason(budgets, counted, reason, wall) else { continue };
            self.waiting.push(Start {
                at: view.now,
                pool: name.to_owned(),
                claim: claim.name.clone(),
                reason: reason.to_owned(),
                allowed,
                counted,
                disrupting: disrupting.clone(),
                same_tick: same_tick.clone(),
            });
        }
    }

    /// Judges the starts whose same-tick starts all have their Events, or have waited
    /// [`START_ORDER_WAIT`].
    fn judge_waiting(&mut self, view: &View, out: &mut Vec<Violation>) {
        let name = self.name();
        self.waiting.retain(|start| {
            let order = |c: &str| view.claims.get(c).and_then(|claim| started_order(view, start.at, claim));
            let known = start.same_tick.iter().all(|c| order(c).is_some());
            if !known && view.now < start.at + START_ORDER_WAIT {
                return true;
            }
            // Disrupting when this one started: all but those that started after it within
            // its tick, by the order their Terminating Events were written.
            let mine = order(&start.claim);
            let before: Vec<&String> = start
                .disrupting
                .iter()
                .filter(|c| {
                    **c == start.claim
                        || !start.same_tick.contains(*c)
                        || match (order(c), mine) {
                            (Some(theirs), Some(mine)) => theirs < mine,
                            _ => true,
                        }
                })
                .collect();
            if before.len() > start.allowed {
                let (pool, claim, reason, allowed) = (&start.pool, &start.claim, &start.reason, start.allowed);
                let mut objects = vec![format!("NodePool {pool}"), format!("NodeClaim {claim}")];
                objects.extend(before.iter().filter(|c| **c != claim).map(|c| format!("NodeClaim {c}")));
                out.push(Violation {
                    invariant: name.into(),
                    at: start.at,
                    objects,
                    message: format!(
                        "the controller started disrupting NodeClaim {claim} for {reason} with {} of NodePool {pool}'s {} nodes disrupting; its {reason} budgets allow {allowed}",
                        before.len(),
                        start.counted
                    ),
                    trace_position: view.trace_position,
                });
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ready: bool) -> crate::oracle::view::NodeView {
        crate::oracle::view::NodeView {
            provider_id: "aws:///z/i-1".into(),
            nodepool: Some("web".into()),
            deleting: false,
            disrupted: false,
            initialized: true,
            do_not_disrupt: false,
            taints: Vec::new(),
            ready,
            labels: BTreeMap::new(),
            allocatable: Default::default(),
        }
    }

    fn claim(deleting_since: Option<Duration>) -> ClaimView {
        ClaimView {
            uid: "u".into(),
            node_name: Some("n".into()),
            deleting_since,
            ..ClaimView::for_test("c", "web", "aws:///z/i-1")
        }
    }

    /// Plays `ready` at 0s, then the claim's deletion at `deleted`, with the `NodeRepair` gate
    /// on; whether it is exempt.
    fn exempt_after(ready: bool, deleted: Duration) -> bool {
        exempt_after_with_gate(ready, deleted, true)
    }

    fn exempt_after_with_gate(ready: bool, deleted: Duration, gate: bool) -> bool {
        let mut external = ExternalDeletes::default();
        let mut view = View::default();
        view.nodes.insert("n".into(), node(ready));
        view.claims.insert("c".into(), claim(None));
        external.observe(&view, gate);
        view.now = deleted;
        view.claims.insert("c".into(), claim(Some(deleted)));
        external.observe(&view, gate);
        external.exempt(&view, &view.claims["c"], None)
    }

    /// With the `NodeRepair` gate off for the whole run Karpenter repairs nothing, so the
    /// same late delete of a NotReady Node counts against the budget.
    #[test]
    fn with_the_gate_off_a_late_not_ready_delete_is_not_exempt() {
        assert!(!exempt_after_with_gate(false, REPAIR_TOLERATION + Duration::from_secs(600), false));
    }

    #[test]
    fn a_repair_of_a_node_not_ready_past_its_toleration_is_exempt() {
        assert!(exempt_after(false, REPAIR_TOLERATION));
        assert!(exempt_after(false, REPAIR_TOLERATION + Duration::from_secs(600)));
    }

    /// Where the excuse does not apply the delete still counts against the budget: a Node
    /// not Ready for less than the toleration (a repair too early), or a Ready one.
    #[test]
    fn an_early_or_healthy_delete_is_not_exempt() {
        assert!(!exempt_after(false, REPAIR_TOLERATION - Duration::from_secs(60)));
        assert!(!exempt_after(true, REPAIR_TOLERATION + Duration::from_secs(60)));
    }

    /// Two claims of pool `web` first seen disrupting at the same tick (331 s): an Empty delete
    /// (`empty`, started by its Terminating Event) and a Drift replace (`drifted`, started by
    /// the Launching Event on its replacement `r`), with a budget of 1 for Empty only (Drift
    /// unbudgeted). `events` are (claim, Event reason, resourceVersion); the violations of
    /// the per-reason check once the wait for Events is over.
    fn same_tick_starts(events: &[(&str, &str, u64)]) -> Vec<Violation> {
        use crate::oracle::disruption_events::{DisruptionEvent, LAUNCHING_REASON, TERMINATING_REASON};
        let mut view = View { now: Duration::from_secs(331), ..View::default() };
        for (name, reason) in [("empty", Some("Empty")), ("drifted", Some("Drifted")), ("r", None)] {
            let mut c = claim(reason.map(|_| Duration::from_secs(331)));
            c.name = name.into();
            c.node_name = None;
            c.disruption_reason = reason.map(Into::into);
            view.claims.insert(name.into(), c);
        }
        for &(claim, kind, resource_version) in events {
            let (reason, message) = match kind {
                "launch" => (LAUNCHING_REASON, "Launching NodeClaim: Drifted/replace"),
                _ => (TERMINATING_REASON, "Disrupting NodeClaim: Empty/delete"),
            };
            view.disruption_events.push(DisruptionEvent {
                at: Duration::from_secs(331),
                node_claim: claim.into(),
                reason: reason.into(),
                message: message.into(),
                resource_version,
            });
        }
        let budgets = vec![serde_json::json!({"nodes": "1", "reasons": ["Underutilized", "Empty"]})];
        let voluntary: Vec<&ClaimView> = view.claims.values().filter(|c| c.disruption_reason.is_some()).collect();
        let mut out = Vec::new();
        let mut budget = DisruptionBudgets::default();
        budget.judge_starts(&view, "web", &budgets, 9, &voluntary, wall_time(view.now));
        view.now += START_ORDER_WAIT;
        budget.judge_waiting(&view, &mut out);
        out
    }

    /// The Empty delete started first (its Event was written before the Drift replacement's):
    /// the Drift replace that followed within the second did not count against Empty's
    /// budget of 1 (generated story 4248).
    #[test]
    fn a_start_is_judged_without_the_starts_that_followed_it_in_the_same_tick() {
        assert!(same_tick_starts(&[("empty", "terminate", 903), ("r", "launch", 911)]).is_empty());
    }

    /// Where the excuse does not apply it fires: the Drift replace started first, so the
    /// Empty delete found one node disrupting and its budget of 1 used; and without Events
    /// to order them (a replace's own Terminating Event comes only when it ends), every
    /// same-tick start counts.
    #[test]
    fn a_start_after_another_in_the_same_tick_counts_it() {
        for events in [&[("empty", "terminate", 913), ("r", "launch", 903)][..], &[("empty", "terminate", 903)]] {
            let out = same_tick_starts(events);
            assert_eq!(out.len(), 1, "{out:?}");
            assert!(
                out[0].message.contains("NodeClaim empty for Empty with 2 of NodePool web's 9"),
                "{}",
                out[0].message
            );
        }
    }
}
