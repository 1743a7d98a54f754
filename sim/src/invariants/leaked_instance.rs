//! `leakedInstance`: a live instance the controller launched (tagged `karpenter.sh/nodepool`,
//! as every CreateFleet it sends is) that no NodeClaim owns by providerID must be gone before
//! it is `maxAge` old. A claim still launching owns the instances tagged with its name; an
//! untagged fresh launch is covered by `maxAge` (Karpenter's own GC waits 30 s).

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
            if i.nodepool.is_none() && i.nodeclaim.is_none() {
                continue;
            }
            if owned.contains(i.provider_id.as_str()) {
                continue;
            }
            let tag = i.nodeclaim.as_deref();
            let launching = tag.is_some_and(|t| ctx.view.claims.get(t).is_some_and(|c| c.provider_id.is_none()));
            let age = ctx.view.now.saturating_sub(i.launched);
            if launching || age <= max_age || !self.reported.insert(i.id.clone()) {
                continue;
            }
            out.push(Violation {
                invariant: self.name().into(),
                at: ctx.view.now,
                objects: std::iter::once(format!("Instance {}", i.id))
                    .chain(tag.map(|t| format!("NodeClaim {t}")))
                    .chain(i.nodepool.as_ref().map(|p| format!("NodePool {p}")))
                    .collect(),
                message: format!(
                    "instance {} ({}) launched for {} has no NodeClaim and is {} old (limit {})",
                    i.id,
                    i.instance_type,
                    tag.map_or_else(
                        || format!("NodePool {}", i.nodepool.as_deref().unwrap_or_default()),
                        |t| format!("NodeClaim {t}")
                    ),
                    format_duration(age),
                    format_duration(max_age)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}
