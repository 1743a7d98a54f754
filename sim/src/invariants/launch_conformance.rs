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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::launch_reserved::{ReservationClock, SETTLE, missed_reservation};
use super::{Ctx, Invariant, Violation};
use crate::apiserver::ApiServer;
use crate::apiserver::store::Store;
use crate::oracle::offering_labels::offering_labels;
use crate::oracle::resources::Requirement;
use crate::oracle::view::ClaimView;

/// The invariant.
pub struct LaunchConformance {
    /// Each claim's pool generation when the claim was first seen.
    generation: BTreeMap<String, Option<i64>>,
    launched: BTreeSet<String>,
    registered: BTreeSet<String>,
    /// The store, for the EC2NodeClasses' reservation selectors ([`super::launch_reserved`]).
    store: Arc<Mutex<Store>>,
    reservations: ReservationClock,
    /// Claims launched on-demand whose reserved-capacity judgement waits for [`SETTLE`]:
    /// claim → launch time.
    awaiting_reserved: BTreeMap<String, Duration>,
}

impl LaunchConformance {
    /// Reads EC2NodeClasses from `server`'s store when a launch is judged.
    pub fn new(server: &ApiServer) -> Self {
        Self {
            generation: BTreeMap::new(),
            launched: BTreeSet::new(),
            registered: BTreeSet::new(),
            store: server.store.clone(),
            reservations: ReservationClock::default(),
            awaiting_reserved: BTreeMap::new(),
        }
    }
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
        let mut labels = offering_labels(info, &instance.zone, &zone_id, instance.capacity_type);
        if instance.reserved {
            // Karpenter labels a launch into a reservation `reserved` (aws
            // `reserved_capacity_resolver.go` l. 88-92); EC2 bills it as on-demand.
            labels.insert("karpenter.sh/capacity-type".into(), "reserved".into());
        }
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

    /// [`super::launch_reserved`]: an on-demand launch that a free, selected reservation of
    /// the same type and zone should have taken.
    fn judge_reserved(&self, ctx: &Ctx<'_>, claim: &ClaimView, out: &mut Vec<Violation>) {
        let Some(instance) = ctx.view.instance_of(claim) else { return };
        let Some(pool) = self.pool_for(ctx, claim) else { return };
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let Some(id) = missed_reservation(&self.reservations, &store, ctx.cloud, claim, pool, instance) else { return };
        out.push(Violation {
            invariant: "launchConformance".into(),
            at: ctx.view.now,
            objects: vec![
                format!("NodeClaim {}", claim.name),
                format!("NodePool {}", claim.nodepool),
                format!("Instance {}", instance.id),
            ],
            message: format!(
                "instance {} ({} in {}) launched on-demand for NodeClaim {}, which allows reserved capacity, while \
                 capacity reservation {id} of that type and zone, selected by its EC2NodeClass, had a free slot \
                 from 2 minutes before the launch on: Karpenter launches into the reservation first (priced at \
                 on-demand / 10^7)",
                instance.id, instance.instance_type, instance.zone, claim.name
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
        self.reservations.sample(ctx.cloud, view.now);
        for claim in view.claims.values() {
            if !self.generation.contains_key(&claim.name) {
                let g = view.pools.get(&claim.nodepool).and_then(|p| generation(&p.object));
                self.generation.insert(claim.name.clone(), g);
            }
            if let Some(instance) = view.instance_of(claim)
                && self.launched.insert(claim.name.clone())
            {
                self.judge_launch(ctx, claim, out);
                if ctx.reserved_capacity_always {
                    self.awaiting_reserved.insert(claim.name.clone(), instance.launched);
                }
            }
            if let Some(node) = claim.node_name.as_deref()
                && claim.registered
                && view.nodes.contains_key(node)
                && self.registered.insert(claim.name.clone())
            {
                self.judge_node(ctx, claim, node, out);
            }
        }
        let due: Vec<String> = self
            .awaiting_reserved
            .iter()
            .filter(|(_, launched)| view.now >= **launched + SETTLE)
            .map(|(c, _)| c.clone())
            .collect();
        for name in due {
            self.awaiting_reserved.remove(&name);
            if let Some(claim) = view.claims.get(&name) {
                self.judge_reserved(ctx, claim, out);
            }
        }
        self.awaiting_reserved.retain(|c, _| view.claims.contains_key(c));
        self.generation.retain(|c, _| view.claims.contains_key(c));
        self.launched.retain(|c| view.claims.contains_key(c));
        self.registered.retain(|c| view.claims.contains_key(c));
    }
}
