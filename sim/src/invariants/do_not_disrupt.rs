//! `doNotDisrupt`: the controller never evicts or deletes a pod with an active
//! `karpenter.sh/do-not-disrupt` annotation before its node's terminationGracePeriod
//! forces it (judged on the cluster just before the request).

use super::{Ctx, Invariant, Violation};

/// The invariant.
pub struct DoNotDisruptRespected;

impl Invariant for DoNotDisruptRespected {
    fn name(&self) -> &'static str {
        "doNotDisrupt"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        for d in ctx.recorded.pods.iter().filter(|d| d.do_not_disrupt) {
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
    }
}
