//! `nodepoolLimits`: a NodePool's live instances (what the cloud runs with its
//! `karpenter.sh/nodepool` tag) never exceed `spec.limits` by more than one node, the
//! overshoot Karpenter's launch-then-count race allows.
//!
//! An instance whose capacity is on its way out does not count, because it does not count
//! for Karpenter: the pool's usage leaves out every state node `MarkedForDeletion`
//! (core `pkg/controllers/state/cluster.go` `updateNodePoolResources`: a marked node's
//! resources are an empty list), and `statenode.go` `MarkedForDeletion`/`Deleted` marks a
//! node whose NodeClaim has a deletionTimestamp or `InstanceTerminating=True`, a claim-less
//! Node being deleted, or one the disruption controller marked (in v1 the
//! `karpenter.sh/disrupted` taint it puts on first). So replacements for pods of deleting
//! nodes may launch past the limit, as upstream's do (`provisioning/provisioner.go` reads
//! these usages for its limit check). An instance Karpenter's state would still count (its
//! claim live and unmarked, or no claim but an undeleted Node) is judged as before.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Ctx, Invariant, Violation};
use crate::actors::quantity::{parse_milli, parse_value};
use crate::oracle::resources::capacity;
use crate::oracle::view::{InstanceView, View};

/// The invariant; reports each pool once per episode over its limit.
#[derive(Default)]
pub struct NodePoolLimits {
    over: BTreeSet<String>,
}

impl Invariant for NodePoolLimits {
    fn name(&self) -> &'static str {
        "nodepoolLimits"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        for (name, pool) in &ctx.view.pools {
            let Some(limits) = pool.object.pointer("/spec/limits").and_then(Value::as_object) else {
                self.over.remove(name);
                continue;
            };
            let instances: Vec<_> = ctx
                .view
                .instances
                .iter()
                .filter(|i| i.live && i.nodepool.as_deref() == Some(name.as_str()) && counts_for_limits(ctx.view, i))
                .collect();
            let mut breached = Vec::new();
            for (resource, limit) in limits {
                let Some(limit_text) =
                    limit.as_str().map(str::to_string).or_else(|| limit.as_i64().map(|n| n.to_string()))
                else {
                    continue;
                };
                let per_node = |t: &str| -> f64 {
                    let Some(info) = ctx.cloud.catalog().get(t) else { return 0.0 };
                    let c = capacity(info);
                    match resource.as_str() {
                        "cpu" => c.cpu,
                        "memory" => c.memory,
                        "pods" => c.pods,
                        "nodes" => 1.0,
                        "nvidia.com/gpu" => f64::from(info.gpu_count),
                        _ => 0.0,
                    }
                };
                let limit = if resource == "cpu" {
                    parse_milli(&limit_text).map(|v| v as f64)
                } else {
                    parse_value(&limit_text).map(|v| v as f64)
                };
                let Ok(limit) = limit else { continue };
                let sizes: Vec<f64> = instances.iter().map(|i| per_node(&i.instance_type)).collect();
                let used: f64 = sizes.iter().sum();
                let largest = sizes.iter().copied().fold(0.0, f64::max);
                if used - largest > limit {
                    breached.push(format!("{resource}: {used} in use > limit {limit} plus one node ({largest})"));
                }
            }
            if breached.is_empty() {
                self.over.remove(name);
            } else if self.over.insert(name.clone()) {
                let mut objects = vec![format!("NodePool {name}")];
                objects.extend(instances.iter().map(|i| format!("Instance {}", i.id)));
                out.push(Violation {
                    invariant: self.name().into(),
                    at: ctx.view.now,
                    objects,
                    message: format!(
                        "NodePool {name} exceeds its limits by more than one node: {}",
                        breached.join("; ")
                    ),
                    trace_position: ctx.view.trace_position,
                });
            }
        }
    }
}

/// Whether Karpenter's cluster state counts `instance` in its pool's usage (see the module
/// doc): false once its NodeClaim is deleting or `InstanceTerminating`, or its Node is
/// deleting or carries the disruption taint; an instance with neither a claim nor a Node
/// has no state node and no usage.
pub(crate) fn counts_for_limits(view: &View, instance: &InstanceView) -> bool {
    let claim = instance
        .nodeclaim
        .as_deref()
        .and_then(|name| view.claims.get(name))
        .or_else(|| view.claims.values().find(|c| c.provider_id.as_deref() == Some(instance.provider_id.as_str())));
    let node = view.nodes.values().find(|n| n.provider_id == instance.provider_id);
    if claim.is_some_and(|c| c.deleting_since.is_some() || c.instance_terminating) {
        return false;
    }
    if node.is_some_and(|n| n.deleting || n.disrupted) {
        return false;
    }
    claim.is_some() || node.is_some()
}

#[cfg(test)]
#[path = "nodepool_limits_tests.rs"]
mod tests;
