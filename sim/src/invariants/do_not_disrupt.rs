//! `doNotDisrupt`: the controller never voluntarily disrupts what `karpenter.sh/do-not-disrupt`
//! protects, before a node's terminationGracePeriod forces it (or the cloud's status checks
//! make its termination forceful, [`crate::oracle::protection::failed_check_forces`]):
//! - a pod with the annotation active is not evicted or deleted by the controller (judged on
//!   the cluster just before the request, [`super::disruptions`]) nor taken down with its Node
//!   or instance ([`super::pod_losses`]);
//! - a node annotated `"true"` is not picked for disruption: no claim starts disrupting
//!   (disrupted taint, claim or Node deleting) while its annotation says `"true"`, unless a
//!   person deleted it, the cloud is taking it away, or it expired (expiration is forceful in
//!   Karpenter v1). Which object's annotation counts follows core
//!   `pkg/controllers/state/statenode.go` (`ValidateNodeDisruptable` reads
//!   `StateNode.Annotations()`): the Node's once the claim has registered one, the
//!   NodeClaim's before (Karpenter copies the claim's annotations onto the Node at
//!   registration).

use std::collections::{BTreeMap, BTreeSet};

use super::disruption_budgets::{ExternalDeletes, disrupting, expire_after};
use super::pod_losses::PodLosses;
use super::{Ctx, Invariant, Violation};
use crate::oracle::protection::failed_check_forces;
use crate::oracle::view::{ClaimView, View};

/// The invariant.
#[derive(Default)]
pub struct DoNotDisruptRespected {
    losses: PodLosses,
    external: ExternalDeletes,
    /// Claims already seen disrupting (judged once, at the start).
    disrupting: BTreeSet<String>,
    /// Each claim's effective annotation at the previous tick.
    protected: BTreeMap<String, bool>,
}

/// Whether the annotation Karpenter reads for this claim's node says `"true"`.
fn node_protected(view: &View, claim: &ClaimView) -> bool {
    match claim.node_name.as_ref().and_then(|n| view.nodes.get(n)) {
        Some(node) => node.do_not_disrupt,
        None => claim.do_not_disrupt,
    }
}

impl Invariant for DoNotDisruptRespected {
    fn name(&self) -> &'static str {
        "doNotDisrupt"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let forced = |p: &Option<String>, at| p.as_deref().is_some_and(|p| failed_check_forces(ctx.cloud, p, at));
        for d in ctx.recorded.pods.iter().filter(|d| d.do_not_disrupt && !forced(&d.provider_id, d.at)) {
            let mut objects = vec![format!("Pod {}", d.pod)];
            objects.extend(d.node.as_ref().map(|n| format!("Node {n}")));
            out.push(Violation {
                invariant: self.name().into(),
                at: d.at,
                objects,
                message: format!(
                    "{} sent {} for do-not-disrupt pod {} before any terminationGracePeriod forced it",
                    d.host, d.verb, d.pod
                ),
                trace_position: d.trace_position,
            });
        }
        for loss in self.losses.tick(ctx) {
            for pod in &loss.do_not_disrupt {
                out.push(Violation {
                    invariant: self.name().into(),
                    at: loss.at,
                    objects: vec![format!("Pod {pod}"), format!("Node {}", loss.node)],
                    message: format!(
                        "{} with do-not-disrupt pod {pod} still running on it, before any terminationGracePeriod forced it",
                        loss.how
                    ),
                    trace_position: loss.trace_position,
                });
            }
        }
        self.judge_nodes(ctx, out);
    }
}

impl DoNotDisruptRespected {
    fn judge_nodes(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        self.external.update(ctx);
        let view = ctx.view;
        for claim in view.claims.values() {
            let protected_now = node_protected(view, claim);
            let protected = protected_now || self.protected.get(&claim.name).copied().unwrap_or(false);
            if !disrupting(view, claim) || !self.disrupting.insert(claim.name.clone()) {
                continue;
            }
            let registered = claim.node_name.as_ref().is_some_and(|n| view.nodes.contains_key(n));
            let expire = view.pools.get(&claim.nodepool).and_then(|p| expire_after(&p.object));
            if !protected || !registered || !claim.initialized || self.external.exempt(view, claim, expire) {
                continue;
            }
            let mut objects = vec![format!("NodeClaim {}", claim.name)];
            objects.extend(claim.node_name.as_ref().map(|n| format!("Node {n}")));
            out.push(Violation {
                invariant: self.name().into(),
                at: view.now,
                objects,
                message: format!(
                    "the controller started disrupting NodeClaim {}{} while its node was annotated karpenter.sh/do-not-disrupt: \"true\"",
                    claim.name,
                    claim.disruption_reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
                ),
                trace_position: view.trace_position,
            });
        }
        self.protected = view.claims.values().map(|c| (c.name.clone(), node_protected(view, c))).collect();
        self.disrupting.retain(|c| view.claims.contains_key(c));
    }
}
