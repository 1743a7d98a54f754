//! `leakedInstance`: a live instance tagged `karpenter.sh/nodeclaim` that no NodeClaim
//! owns (by providerID; a claim still launching owns the instances tagged with its name)
//! must be gone before it is `maxAge` old.

use std::collections::BTreeSet;

use super::{Ctx, Invariant, Violation, format_duration};

/// The invariant; reports each instance once.
#[derive(Default)]
pub struct LeakedInstance {
    reported: BTreeSet<String>,
}

impl Invariant for LeakedInstance {
    fn name(&self) -> &'static str {
        "leakedInstance"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let max_age = ctx.config.leaked_instance.max_age.0;
        let owned: BTreeSet<&str> = ctx.view.claims.values().filter_map(|c| c.provider_id.as_deref()).collect();
        for i in ctx.view.instances.iter().filter(|i| i.live) {
            let Some(tag) = &i.nodeclaim else { continue };
            if owned.contains(i.provider_id.as_str()) {
                continue;
            }
            let launching = ctx.view.claims.get(tag).is_some_and(|c| c.provider_id.is_none());
            let age = ctx.view.now.saturating_sub(i.launched);
            if launching || age <= max_age || !self.reported.insert(i.id.clone()) {
                continue;
            }
            out.push(Violation {
                invariant: self.name().into(),
                at: ctx.view.now,
                objects: vec![format!("Instance {}", i.id), format!("NodeClaim {tag}")],
                message: format!(
                    "instance {} ({}) tagged for NodeClaim {tag} has no NodeClaim and is {} old (limit {})",
                    i.id,
                    i.instance_type,
                    format_duration(age),
                    format_duration(max_age)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}
