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
//! `pkg/controllers/disruption/helpers.go`, `BuildDisruptionBudgetMapping`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

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
    /// Claims whose start of disruption for a reason was judged.
    started: BTreeSet<String>,
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
            for claim in &voluntary {
                let Some(reason) = claim.disruption_reason.as_deref() else { continue };
                if !self.started.insert(claim.name.clone()) {
                    continue;
                }
                let Some(allowed) = allowed_for_reason(&budgets, counted.len(), reason, wall) else { continue };
                if voluntary.len() > allowed {
                    let mut objects = vec![format!("NodePool {name}"), format!("NodeClaim {}", claim.name)];
                    objects.extend(
                        voluntary.iter().filter(|c| c.name != claim.name).map(|c| format!("NodeClaim {}", c.name)),
                    );
                    out.push(Violation {
                        invariant: self.name().into(),
                        at: view.now,
                        objects,
                        message: format!(
                            "the controller started disrupting NodeClaim {} for {reason} with {} of NodePool {name}'s {} nodes disrupting; its {reason} budgets allow {allowed}",
                            claim.name,
                            voluntary.len(),
                            counted.len()
                        ),
                        trace_position: view.trace_position,
                    });
                }
            }
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
            name: "c".into(),
            uid: "u".into(),
            nodepool: "web".into(),
            provider_id: Some("aws:///z/i-1".into()),
            node_name: Some("n".into()),
            created: Duration::ZERO,
            deleting_since,
            initialized: true,
            instance_terminating: false,
            do_not_disrupt: false,
            disruption_reason: None,
            drifted: false,
            registered: true,
            requirements: Vec::new(),
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
}
