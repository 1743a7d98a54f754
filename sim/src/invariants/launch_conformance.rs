//! `launchConformance`: every launched instance is one its NodeClaim and its NodePool allow,
//! and its Node carries the pool's taints.
//!
//! Judged once per claim, when the cloud's instance behind its providerID is first seen:
//! the instance's well-known labels as the catalog defines them
//! ([`crate::oracle::offering_labels::offering_labels`]: instance type, zone, capacity type,
//! arch/os, instance family, category, generation, size, cpu, memory, ...) satisfy every
//! requirement of the claim's `spec.requirements` and of the pool's
//! `spec.template.spec.requirements` on those labels (requirements on other keys only label
//! the node). When the claim turns Registered, its Node carries every taint of the pool's
//! template, and its startup taints while the Node is not yet Ready (core
//! `pkg/controllers/nodeclaim/lifecycle/registration.go` merges the claim's `taints` and
//! `startupTaints` into the Node before it sets Registered; nothing may remove a startup
//! taint before the node's agents are up). The pool is only held against claims
//! created under its current generation: a pool edited since (drift) is judged by the
//! claims launched after the edit. The pool's `limits` are `nodepoolLimits`' to judge.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Ctx, Invariant, Violation};
use crate::oracle::offering_labels::offering_labels;
use crate::oracle::resources::Requirement;
use crate::oracle::view::ClaimView;

/// The invariant.
#[derive(Default)]
pub struct LaunchConformance {
    /// Each claim's pool generation when the claim was first seen.
    generation: BTreeMap<String, Option<i64>>,
    launched: BTreeSet<String>,
    registered: BTreeSet<String>,
}

fn generation(pool: &Value) -> Option<i64> {
    pool["metadata"]["generation"].as_i64()
}

fn requirements(list: &[Value]) -> Vec<Requirement> {
    list.iter().filter_map(Requirement::from_json).collect()
}

/// `key=value:effect`, for messages and comparison.
fn taint_text(t: &Value) -> String {
    format!(
        "{}={}:{}",
        t["key"].as_str().unwrap_or_default(),
        t["value"].as_str().unwrap_or_default(),
        t["effect"].as_str().unwrap_or_default()
    )
}

fn taints(pool: &Value, field: &str) -> Vec<String> {
    pool.pointer(&format!("/spec/template/spec/{field}"))
        .and_then(Value::as_array)
        .map(|t| t.iter().map(taint_text).collect())
        .unwrap_or_default()
}

impl LaunchConformance {
    /// The pool, when the claim was created under its current generation.
    fn pool_for<'a>(&self, ctx: &'a Ctx<'_>, claim: &ClaimView) -> Option<&'a Value> {
        let pool = &ctx.view.pools.get(&claim.nodepool)?.object;
        let seen = self.generation.get(&claim.name).copied().flatten();
        (seen.is_some() && seen == generation(pool)).then_some(&**pool)
    }

    fn judge_launch(&self, ctx: &Ctx<'_>, claim: &ClaimView, out: &mut Vec<Violation>) {
        let Some(instance) = ctx.view.instance_of(claim) else { return };
        let catalog = ctx.cloud.catalog();
        let Some(info) = catalog.get(&instance.instance_type) else { return };
        let zone_id = catalog.zone(&instance.zone).map(|z| z.id.clone()).unwrap_or_default();
        let labels = offering_labels(info, &instance.zone, &zone_id, instance.capacity_type);
        let broken = |reqs: &[Requirement]| -> Vec<String> {
            reqs.iter()
                .filter(|r| labels.contains_key(&r.key) && !r.matches(&labels))
                .map(|r| format!("{} {} {:?} (is {})", r.key, r.operator, r.values, labels[&r.key]))
                .collect()
        };
        let mut problems: Vec<String> =
            broken(&requirements(&claim.requirements)).into_iter().map(|b| format!("NodeClaim requires {b}")).collect();
        if let Some(pool) = self.pool_for(ctx, claim) {
            let pool_reqs = pool
                .pointer("/spec/template/spec/requirements")
                .and_then(Value::as_array)
                .map(|r| requirements(r))
                .unwrap_or_default();
            problems.extend(broken(&pool_reqs).into_iter().map(|b| format!("NodePool requires {b}")));
        }
        if problems.is_empty() {
            return;
        }
        out.push(Violation {
            invariant: "launchConformance".into(),
            at: ctx.view.now,
            objects: vec![
                format!("NodeClaim {}", claim.name),
                format!("NodePool {}", claim.nodepool),
                format!("Instance {}", instance.id),
            ],
            message: format!(
                "instance {} ({} in {}, {}) does not satisfy its requirements: {}",
                instance.id,
                instance.instance_type,
                instance.zone,
                instance.capacity_type.as_str(),
                problems.join("; ")
            ),
            trace_position: ctx.view.trace_position,
        });
    }

    fn judge_node(&self, ctx: &Ctx<'_>, claim: &ClaimView, node_name: &str, out: &mut Vec<Violation>) {
        let (Some(node), Some(pool)) = (ctx.view.nodes.get(node_name), self.pool_for(ctx, claim)) else { return };
        let has: BTreeSet<String> = node.taints.iter().map(taint_text).collect();
        let mut missing: Vec<String> = taints(pool, "taints").into_iter().filter(|t| !has.contains(t)).collect();
        if !node.ready && !node.initialized {
            missing.extend(taints(pool, "startupTaints").into_iter().filter(|t| !has.contains(t)));
        }
        if missing.is_empty() {
            return;
        }
        out.push(Violation {
            invariant: "launchConformance".into(),
            at: ctx.view.now,
            objects: vec![
                format!("NodeClaim {}", claim.name),
                format!("NodePool {}", claim.nodepool),
                format!("Node {node_name}"),
            ],
            message: format!(
                "Node {node_name} registered without NodePool {}'s taints {}",
                claim.nodepool,
                missing.join(", ")
            ),
            trace_position: ctx.view.trace_position,
        });
    }
}

impl Invariant for LaunchConformance {
    fn name(&self) -> &'static str {
        "launchConformance"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let view = ctx.view;
        for claim in view.claims.values() {
            if !self.generation.contains_key(&claim.name) {
                let g = view.pools.get(&claim.nodepool).and_then(|p| generation(&p.object));
                self.generation.insert(claim.name.clone(), g);
            }
            if view.instance_of(claim).is_some() && self.launched.insert(claim.name.clone()) {
                self.judge_launch(ctx, claim, out);
            }
            if let Some(node) = claim.node_name.as_deref()
                && claim.registered
                && view.nodes.contains_key(node)
                && self.registered.insert(claim.name.clone())
            {
                self.judge_node(ctx, claim, node, out);
            }
        }
        self.generation.retain(|c, _| view.claims.contains_key(c));
        self.launched.retain(|c| view.claims.contains_key(c));
        self.registered.retain(|c| view.claims.contains_key(c));
    }
}
