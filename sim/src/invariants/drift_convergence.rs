//! `driftConvergence`: drifted nodes are replaced as fast as the pool's Drifted budget lets
//! them be.
//!
//! A NodeClaim is drifted when it has `Drifted=True` (the condition the controller sets when
//! a claim no longer matches its NodePool or EC2NodeClass; core
//! `pkg/controllers/nodeclaim/disruption/drift.go`), or when its Node visibly no longer
//! matches its NodePool's template ([`crate::oracle::template_drift`]: a template label the
//! Node contradicts, a requirement its labels break), whatever the controller says: a
//! controller that never notices NodePool drift is caught too. A drifted claim
//! must be gone within `ceil(drifted / allowed) × replaceWithin` of when it was first seen
//! drifted, where `drifted` counts the pool's drifted claims and `allowed` is its budget for
//! the `Drifted` reason now ([`crate::oracle::budget::allowed_for_reason`]): Karpenter
//! replaces at most `allowed` drifted nodes at a time, each in about one replacement time.
//! The clock runs only while nothing blocks the node; a blocked node's clock restarts. The
//! blockers, as Karpenter's candidate filtering has them (core
//! `pkg/controllers/disruption/types.go` `NewCandidate`, `pkg/controllers/state/statenode.go`
//! `ValidateNodeDisruptable`/`ValidatePodsDisruptable`):
//! - faults are live (the run has not healed);
//! - the pool's Drifted budget allows 0 nodes now;
//! - the node is annotated `karpenter.sh/do-not-disrupt: "true"`;
//! - a pod on it has an active `karpenter.sh/do-not-disrupt`;
//! - a pod on it is covered by a PodDisruptionBudget that cannot lose it now.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::pod_losses::breaches;
use super::{Ctx, Invariant, Violation};
use crate::oracle::budget::{allowed_for_reason, wall_time};
use crate::oracle::protection::do_not_disrupt_active;
use crate::oracle::template_drift::mismatch;
use crate::oracle::view::{ClaimView, PodView, PoolView, View};
use crate::scenario::invariants::InvariantConfig;

/// The invariant: reports each claim in [`Ctx::drift_overdue`] once.
#[derive(Default)]
pub struct DriftConvergence {
    reported: BTreeSet<String>,
}

/// Per drifted NodeClaim, when its clock started (first seen drifted, or last blocked).
/// The [`super::Checker`] owns the one clock and advances it once per tick; this invariant
/// and the end-of-run [`super::convergence`] check read its result from [`Ctx`].
#[derive(Default)]
pub struct DriftClock {
    since: BTreeMap<String, Duration>,
}

/// A drifted NodeClaim past its deadline with nothing blocking its replacement.
#[derive(Clone, Debug, PartialEq)]
pub struct Overdue {
    /// NodeClaim name.
    pub claim: String,
    /// Its NodePool.
    pub nodepool: String,
    /// Its Node, if registered.
    pub node: Option<String>,
    /// When its clock started.
    pub since: Duration,
    /// Drifted claims in its pool.
    pub drifted: usize,
    /// The pool's Drifted budget now.
    pub allowed: usize,
    /// The time it had: `ceil(drifted / allowed) × replaceWithin`.
    pub allowance: Duration,
}

impl DriftClock {
    /// Advances the clocks to `view`'s moment and returns the claims overdue and unblocked;
    /// `healed_at` is when faults last healed (`None` while they are live).
    pub fn overdue(
        &mut self,
        view: &View,
        pods: &[PodView],
        config: &InvariantConfig,
        healed_at: Option<Duration>,
    ) -> Vec<Overdue> {
        let replace = config.drift_convergence.replace_within.0;
        let wall = wall_time(view.now);
        let mut out = Vec::new();
        for (name, pool) in &view.pools {
            let drifted: Vec<&ClaimView> =
                view.claims.values().filter(|c| &c.nodepool == name && is_drifted(view, pool, c)).collect();
            if drifted.is_empty() {
                continue;
            }
            let counted = view
                .claims
                .values()
                .filter(|c| &c.nodepool == name && c.initialized && !c.instance_terminating)
                .count();
            let budgets: Vec<Value> =
                pool.object.pointer("/spec/disruption/budgets").and_then(Value::as_array).cloned().unwrap_or_default();
            let allowed = allowed_for_reason(&budgets, counted, "Drifted", wall).unwrap_or(drifted.len());
            for claim in &drifted {
                let since = *self.since.entry(claim.name.clone()).or_insert(view.now);
                if healed_at.is_none() || allowed == 0 {
                    self.since.insert(claim.name.clone(), view.now);
                    continue;
                }
                let allowance = replace * drifted.len().div_ceil(allowed) as u32;
                if view.now <= since + allowance {
                    continue;
                }
                if blocker(view, pods, claim).is_some() {
                    self.since.insert(claim.name.clone(), view.now);
                    continue;
                }
                out.push(Overdue {
                    claim: claim.name.clone(),
                    nodepool: name.clone(),
                    node: claim.node_name.clone(),
                    since,
                    drifted: drifted.len(),
                    allowed,
                    allowance,
                });
            }
        }
        self.since.retain(|c, _| {
            view.claims.get(c).is_some_and(|c| view.pools.get(&c.nodepool).is_some_and(|p| is_drifted(view, p, c)))
        });
        out
    }
}

/// Whether `claim` is drifted: the controller marked it, or its Node contradicts `pool`'s
/// template.
fn is_drifted(view: &View, pool: &PoolView, claim: &ClaimView) -> bool {
    claim.drifted || template_mismatch(view, pool, claim).is_some()
}

/// Why `claim`'s Node no longer matches `pool`'s template, if it does not.
pub fn template_mismatch(view: &View, pool: &PoolView, claim: &ClaimView) -> Option<String> {
    let node = view.nodes.get(claim.node_name.as_deref()?)?;
    mismatch(&pool.object, &node.labels)
}

/// What keeps Karpenter from replacing this drifted node now, if anything.
fn blocker(view: &View, pods: &[PodView], claim: &ClaimView) -> Option<String> {
    let node_name = claim.node_name.as_deref()?;
    let node = view.nodes.get(node_name)?;
    if node.do_not_disrupt {
        return Some(format!("Node {node_name} is annotated karpenter.sh/do-not-disrupt"));
    }
    let on_node: Vec<&PodView> =
        pods.iter().filter(|p| p.active() && !p.daemonset && p.node_name.as_deref() == Some(node_name)).collect();
    if let Some(p) = on_node.iter().find(|p| do_not_disrupt_active(&p.object, view.now)) {
        return Some(format!("pod {} has an active do-not-disrupt", p.key));
    }
    for p in &on_node {
        if let Some(b) = breaches(&view.pdbs, pods, &[*p]).first() {
            return Some(format!("pod {} is held by PodDisruptionBudget {}", p.key, b.pdb));
        }
    }
    None
}

impl Invariant for DriftConvergence {
    fn name(&self) -> &'static str {
        "driftConvergence"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let view = ctx.view;
        for o in ctx.drift_overdue {
            if !self.reported.insert(o.claim.clone()) {
                continue;
            }
            let mut objects = vec![format!("NodeClaim {}", o.claim), format!("NodePool {}", o.nodepool)];
            objects.extend(o.node.as_ref().map(|n| format!("Node {n}")));
            let why = view
                .claims
                .get(&o.claim)
                .zip(view.pools.get(&o.nodepool))
                .and_then(|(c, p)| template_mismatch(view, p, c))
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            out.push(Violation {
                invariant: self.name().into(),
                at: view.now,
                objects,
                message: format!(
                    "NodeClaim {} has been drifted{why} and unblocked for {}s: with {} drifted nodes and a Drifted budget of {}, it should be replaced within {}s",
                    o.claim,
                    (view.now - o.since).as_secs(),
                    o.drifted,
                    o.allowed,
                    o.allowance.as_secs()
                ),
                trace_position: view.trace_position,
            });
        }
        self.reported.retain(|c| view.claims.contains_key(c));
    }
}
