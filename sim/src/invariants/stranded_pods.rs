//! `strandedPods`: after faults heal, a pending pod that some allowed offering could host
//! (a NodePool it tolerates, whose requirements and the pod's node selector and required
//! affinity agree, with room after DaemonSet overhead) is bound within `boundWithin`
//! (counted from the heal or its creation, whichever is later).

use std::collections::BTreeSet;
use std::time::Duration;

use super::{Ctx, Invariant, Violation, format_duration};
use crate::oracle::resources::{
    Offering, allowed_offerings, daemonset_overhead, pod_allows, pool_node_labels, tolerates_pool,
};
use crate::oracle::view::PodView;

/// Each NodePool's name with the offerings it allows.
pub type PoolOfferings = Vec<(String, Vec<Offering>)>;

/// The invariant; reports each pod once.
#[derive(Default)]
pub struct StrandedPods {
    reported: BTreeSet<String>,
    /// Offerings per pool, refreshed at most once a minute (prices and capacity drift).
    offerings: Option<(Duration, PoolOfferings)>,
}

impl StrandedPods {
    fn hosting_offering(&mut self, ctx: &Ctx<'_>, pod: &PodView) -> Option<String> {
        let now = ctx.view.now;
        if self.offerings.as_ref().is_none_or(|(at, _)| now >= *at + Duration::from_secs(60)) {
            self.offerings = Some((now, pool_offerings(ctx)));
        }
        let (_, per_pool) = self.offerings.as_ref()?;
        hosting_offering(ctx, per_pool, pod)
    }
}

/// The offerings each NodePool allows now.
pub fn pool_offerings(ctx: &Ctx<'_>) -> PoolOfferings {
    let now = ctx.view.now;
    ctx.view.pools.iter().map(|(name, p)| (name.clone(), allowed_offerings(ctx.cloud, &p.object, now))).collect()
}

/// An offering (`type/zone/capacity-type`) of a NodePool the pod tolerates whose labels
/// the pod's node selector and required affinity accept, with room for the pod after
/// DaemonSet overhead; `None` when no allowed offering could host it.
pub fn hosting_offering(ctx: &Ctx<'_>, per_pool: &PoolOfferings, pod: &PodView) -> Option<String> {
    let overhead = daemonset_pod_overhead(ctx);
    for (name, offerings) in per_pool {
        let pool = &ctx.view.pools.get(name)?.object;
        if !tolerates_pool(&pod.object, pool) {
            continue;
        }
        let extra = pool_node_labels(pool);
        for o in offerings {
            let mut labels = (*o.labels).clone();
            labels.extend(extra.clone());
            if !pod_allows(&pod.object, &labels) {
                continue;
            }
            let mut need = pod.requests;
            need.add(&overhead);
            if need.fits_in(&o.allocatable) {
                return Some(format!("{}/{}/{}", o.instance_type, o.zone, o.capacity_type.as_str()));
            }
        }
    }
    None
}

/// DaemonSet overhead a new node carries: one pod's requests per DaemonSet whose pods
/// have no node selector or affinity.
fn daemonset_pod_overhead(ctx: &Ctx<'_>) -> crate::oracle::resources::Resources {
    let mut seen = BTreeSet::new();
    let owners = ctx.pods.iter().filter(|p| p.daemonset).filter_map(|p| {
        let owner = p.object.pointer("/metadata/ownerReferences/0/uid")?.as_str()?.to_string();
        seen.insert(owner).then(|| serde_json::json!({"spec": {"template": {"spec": p.object["spec"].clone()}}}))
    });
    let owners: Vec<_> = owners.collect();
    daemonset_overhead(owners.iter())
}

/// A pod the scheduler should place: unbound, active, not a DaemonSet's, no scheduling gates.
pub fn waits_for_a_node(p: &PodView) -> bool {
    p.node_name.is_none()
        && p.active()
        && !p.daemonset
        && p.object.pointer("/spec/schedulingGates").and_then(|g| g.as_array()).is_none_or(|g| g.is_empty())
}

impl Invariant for StrandedPods {
    fn name(&self) -> &'static str {
        "strandedPods"
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let Some(healed) = ctx.healed_at else { return };
        let limit = ctx.config.stranded_pods.bound_within.0;
        let now = ctx.view.now;
        let overdue: Vec<&PodView> = ctx
            .pods
            .iter()
            .filter(|p| waits_for_a_node(p))
            .filter(|p| now.saturating_sub(p.created.max(healed)) > limit)
            .filter(|p| !self.reported.contains(&p.uid))
            .collect();
        for pod in overdue {
            let Some(offering) = self.hosting_offering(ctx, pod) else { continue };
            self.reported.insert(pod.uid.clone());
            out.push(Violation {
                invariant: self.name().into(),
                at: now,
                objects: vec![format!("Pod {}", pod.key)],
                message: format!(
                    "pod {} pending for {} after faults healed (limit {}) though offering {offering} could host it",
                    pod.key,
                    format_duration(now.saturating_sub(pod.created.max(healed))),
                    format_duration(limit)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}
