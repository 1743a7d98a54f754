//! `strandedPods`: after faults heal, a pending pod that some allowed offering could host
//! (a NodePool it tolerates, whose requirements and the pod's node selector and required
//! affinity agree, with room after DaemonSet overhead) is bound within `boundWithin`
//! (counted from the heal, its creation, or when it last became hostable, whichever is
//! latest: a pod no offering could host — its pool at its limits, say — is not Karpenter's
//! to place until one can, re-checked every [`RECHECK`]). A pod with a
//! `DoNotSchedule` zone spread is hostable only in a zone that keeps the skew as Karpenter
//! counts it ([`crate::oracle::zone_spread`], with the upstream lines): Karpenter leaves a
//! pod pending when only zones no pool of its can launch in would keep it. A pod whose
//! PersistentVolumeClaims allow only some zones (bound to a zonal volume, or a class's
//! `allowedTopologies`) is hostable only there ([`crate::oracle::volume_zones`]). An offering
//! whose capacity is more than what its NodePool's `spec.limits` leave is no host either:
//! Karpenter drops every instance type whose capacity exceeds the pool's remaining
//! resources (core `pkg/controllers/provisioning/scheduling/scheduler.go`
//! `filterByRemainingResources`, l. 1069–1085; the remainder is the limits minus each
//! state node's capacity, `updateRemainingResources`, l. 835–842).

use std::collections::BTreeSet;
use std::time::Duration;

use super::{Ctx, Invariant, Violation, format_duration};
use crate::actors::quantity::{parse_milli, parse_value};
use crate::oracle::resources::{
    NodeSelection, Offering, allowed_offerings, capacity, daemonset_overhead, pool_node_labels, pool_requirements,
    tolerates_pool, zone_priced,
};
use crate::oracle::view::PodView;
use crate::oracle::zone_spread::{self, usable_zones};

/// Each NodePool's name with the offerings it allows.
pub type PoolOfferings = Vec<(String, Vec<Offering>)>;

/// The invariant; reports each pod once.
#[derive(Default)]
pub struct StrandedPods {
    reported: BTreeSet<String>,
    /// Pod uid → since when it has been hostable without a break (as last re-checked).
    hostable_since: std::collections::BTreeMap<String, Duration>,
    /// When every waiting pod was last re-checked.
    checked_at: Option<Duration>,
    /// Offerings per pool, refreshed at most once a minute (prices and capacity drift).
    offerings: Option<(Duration, PoolOfferings)>,
}

impl StrandedPods {
    /// Refreshes the offerings cache when a minute old (at the first check of a tick that
    /// checks a pod, as before the pass value existed, so the refresh times are unchanged);
    /// the `pass`'s answers, found in the old offerings, are forgotten then.
    fn refresh_offerings(&mut self, ctx: &Ctx<'_>, pass: Option<&HostingPass<'_>>) {
        let now = ctx.view.now;
        if self.offerings.as_ref().is_none_or(|(at, _)| now >= *at + Duration::from_secs(60)) {
            self.offerings = Some((now, pool_offerings(ctx)));
            pass.inspect(|p| p.forget_answers());
        }
    }
}

/// How often each waiting pod's hostability is re-checked.
const RECHECK: Duration = Duration::from_secs(10);

/// The offerings each NodePool allows now.
pub fn pool_offerings(ctx: &Ctx<'_>) -> PoolOfferings {
    let now = ctx.view.now;
    ctx.view
        .pools
        .iter()
        .map(|(name, p)| (name.clone(), allowed_offerings(ctx.cloud, &ctx.view.overlays, &p.object, now)))
        .collect()
}

/// What every pod's hostability check in one pass (one tick, or the end of the run) shares:
/// the cluster state it reads does not change within the pass, so it is computed once
/// rather than per waiting pod (before, every 10 s, each waiting pod recomputed the zone
/// universe — `priced_offerings` of every pool —, the placed pods, the DaemonSet overhead
/// and each pool's remaining limits, a scan of every instance per pool).
pub struct HostingPass<'a> {
    ctx: &'a Ctx<'a>,
    /// DaemonSet overhead a new node carries ([`daemonset_pod_overhead`]).
    overhead: crate::oracle::resources::Resources,
    /// Pool name → what its limits leave ([`remaining_under_limits`]).
    remaining: std::collections::BTreeMap<&'a str, Remaining>,
    /// Karpenter's zone universe and the placed pods, built at the first pod with a
    /// `DoNotSchedule` zone spread ([`spread_zones`]).
    spread: std::cell::OnceCell<(BTreeSet<String>, Vec<zone_spread::Placed<'a>>)>,
    /// Each pod shape's answer in this pass ([`PodShape`]): a Deployment's waiting replicas
    /// share one, so the scan over every pool's offerings (and the spread's count over the
    /// placed pods) runs once per shape instead of once per pod (issue 21: the scan was
    /// 15-21% of the r-tenth cut).
    answers: std::cell::RefCell<std::collections::BTreeMap<PodShape, Option<String>>>,
}

/// Everything of a pod [`hosting_offering`] reads: its `spec` (requests, node selector,
/// affinity, tolerations, topology spreads), `metadata.namespace` and `metadata.labels`
/// (the spread's selector and its count of the placed pods), as JSON text. Two pods with
/// the same text get the same answer from the same pass.
type PodShape = String;

/// The shape of `pod` ([`PodShape`]).
fn pod_shape(pod: &PodView) -> PodShape {
    let meta = &pod.object["metadata"];
    serde_json::to_string(&(&pod.object["spec"], &meta["namespace"], &meta["labels"])).unwrap_or_default()
}

/// CPU (millicores) and memory (bytes) a pool's limits leave; `None` for no limit.
type Remaining = (Option<f64>, Option<f64>);

impl<'a> HostingPass<'a> {
    /// The shared state of a pass over `ctx`.
    pub fn new(ctx: &'a Ctx<'a>) -> Self {
        let remaining = ctx
            .view
            .pools
            .iter()
            .map(|(name, p)| (name.as_str(), remaining_under_limits(ctx, name, &p.object)))
            .collect();
        Self {
            ctx,
            overhead: daemonset_pod_overhead(ctx),
            remaining,
            spread: std::cell::OnceCell::new(),
            answers: Default::default(),
        }
    }

    /// Forgets the answers so far: the offerings they were found in have been refreshed.
    fn forget_answers(&self) {
        self.answers.borrow_mut().clear();
    }
}

/// An offering (`type/zone/capacity-type`) of a NodePool the pod tolerates whose labels
/// the pod's node selector and required affinity accept, with room for the pod after
/// DaemonSet overhead; `None` when no allowed offering could host it. Answered once per pod
/// shape in a pass ([`HostingPass::answers`]); `per_pool` must be the same in one pass.
pub fn hosting_offering(pass: &HostingPass<'_>, per_pool: &PoolOfferings, pod: &PodView) -> Option<String> {
    let shape = pod_shape(pod);
    if let Some(answer) = pass.answers.borrow().get(&shape) {
        return answer.clone();
    }
    let answer = scan_offerings(pass, per_pool, pod);
    pass.answers.borrow_mut().insert(shape, answer.clone());
    answer
}

/// [`hosting_offering`] without the pass's answers: the first offering, in pool and
/// offering order, that hosts `pod`.
fn scan_offerings(pass: &HostingPass<'_>, per_pool: &PoolOfferings, pod: &PodView) -> Option<String> {
    let ctx = pass.ctx;
    let zones = spread_zones(pass, pod);
    // A pod whose claims are bound to zonal volumes runs only in their zones (kube-scheduler
    // VolumeBinding; Karpenter adds the volume's zone to the claim it launches).
    let volume_zones = crate::oracle::volume_zones::allowed_zones(&ctx.view.claim_zones, &pod.object);
    // The pod's constraints are parsed once, and each offering's labels are looked up
    // through the pool's labels (which take precedence, as a node's would) instead of
    // merging the two maps per offering: the same answer without a map clone per offering.
    let selection = NodeSelection::of(&pod.object);
    let mut need = pod.requests;
    need.add(&pass.overhead);
    for (name, offerings) in per_pool {
        let pool = &ctx.view.pools.get(name)?.object;
        if !tolerates_pool(&pod.object, pool) {
            continue;
        }
        let extra = pool_node_labels(pool);
        let remaining = pass.remaining.get(name.as_str()).copied().unwrap_or((None, None));
        for o in offerings {
            if zones.as_ref().is_some_and(|zs| !zs.contains(&o.zone))
                || volume_zones.as_ref().is_some_and(|zs| !zs.contains(&o.zone))
            {
                continue;
            }
            if !need.fits_in(&o.allocatable) || !within(remaining, ctx, &o.instance_type) {
                continue;
            }
            if selection.allows(|k| extra.get(k).or_else(|| o.labels.get(k)).map(String::as_str)) {
                return Some(format!("{}/{}/{}", o.instance_type, o.zone, o.capacity_type.as_str()));
            }
        }
    }
    None
}

/// What `pool`'s `spec.limits` on CPU (millicores) and memory (bytes) leave after the
/// capacity of its live instances Karpenter's state counts
/// ([`super::nodepool_limits::counts_for_limits`]); `None` for a resource without a limit.
fn remaining_under_limits(ctx: &Ctx<'_>, name: &str, pool: &serde_json::Value) -> Remaining {
    let limit = |resource: &str| -> Option<f64> {
        let v = pool.pointer(&format!("/spec/limits/{resource}"))?;
        let text = v.as_str().map(str::to_string).or_else(|| v.as_i64().map(|n| n.to_string()))?;
        let parsed = if resource == "cpu" { parse_milli(&text) } else { parse_value(&text) };
        parsed.ok().map(|v| v as f64)
    };
    let (cpu, memory) = (limit("cpu"), limit("memory"));
    if cpu.is_none() && memory.is_none() {
        return (None, None);
    }
    let mut used = crate::oracle::resources::Resources::default();
    for i in ctx.view.instances.iter().filter(|i| i.live && i.nodepool.as_deref() == Some(name)) {
        if !super::nodepool_limits::counts_for_limits(ctx.view, i) {
            continue;
        }
        if let Some(info) = ctx.cloud.catalog().get(&i.instance_type) {
            used.add(&capacity(info));
        }
    }
    (cpu.map(|c| c - used.cpu), memory.map(|m| m - used.memory))
}

/// Whether an instance type's capacity fits what the pool's limits leave.
fn within(remaining: Remaining, ctx: &Ctx<'_>, instance_type: &str) -> bool {
    ctx.cloud.catalog().get(instance_type).is_none_or(|info| fits_remaining(&capacity(info), remaining))
}

/// Whether `capacity` is at most what is `remaining` (CPU, memory) under a pool's limits.
fn fits_remaining(capacity: &crate::oracle::resources::Resources, remaining: Remaining) -> bool {
    remaining.0.is_none_or(|r| capacity.cpu <= r) && remaining.1.is_none_or(|r| capacity.memory <= r)
}

/// The zones the pod's `DoNotSchedule` zone spreads leave it ([`usable_zones`]), over
/// Karpenter's universe of zones ([`zone_universe`]); `None` without such a spread.
fn spread_zones(pass: &HostingPass<'_>, pod: &PodView) -> Option<BTreeSet<String>> {
    if zone_spread::zone_spreads(&pod.object).is_empty() {
        return None;
    }
    let (universe, placed) = pass.spread.get_or_init(|| (zone_universe(pass.ctx), placed_pods(pass.ctx)));
    usable_zones(&pod.object, universe, placed)
}

/// Every zone any NodePool's allowed instance types are offered in (available or not) or its
/// requirements name.
/// The zones of every pool's priced offerings ([`crate::oracle::resources::priced_offerings`])
/// and of its `In` zone requirements. Each catalog zone not yet in the universe is asked
/// whether some offering of the pool is priced there ([`zone_priced`]), which stops at the
/// first one: the same set as listing every offering, without the listing.
pub(crate) fn zone_universe(ctx: &Ctx<'_>) -> BTreeSet<String> {
    let mut universe = BTreeSet::new();
    for p in ctx.view.pools.values() {
        let requirements = pool_requirements(&p.object);
        for zone in ctx.cloud.catalog().zones() {
            if !universe.contains(&zone.name) && zone_priced(ctx.cloud, &requirements, &zone.name, ctx.view.now) {
                universe.insert(zone.name.clone());
            }
        }
        for r in requirements {
            if r.key == crate::oracle::first_fit::ZONE_KEY && r.operator == "In" {
                universe.extend(r.values);
            }
        }
    }
    universe
}

/// The active non-DaemonSet pods bound to a node, with that node's labels.
fn placed_pods<'a>(ctx: &'a Ctx<'a>) -> Vec<zone_spread::Placed<'a>> {
    ctx.pods
        .iter()
        .filter(|p| p.active() && !p.daemonset)
        .filter_map(|p| {
            let node_labels = node_labels_of_bound(ctx, p)?;
            Some(zone_spread::Placed {
                namespace: p.object["metadata"]["namespace"].as_str().unwrap_or("default"),
                labels: p.object["metadata"]["labels"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect(),
                node_labels,
            })
        })
        .collect()
}

/// The labels of the Node `p` is bound to, when it is bound to one the view knows.
pub(crate) fn node_labels_of_bound<'a>(
    ctx: &'a Ctx<'a>,
    p: &PodView,
) -> Option<&'a std::collections::BTreeMap<String, String>> {
    ctx.view.nodes.get(p.node_name.as_deref()?).map(|node| &node.labels)
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
        let mut pass: Option<HostingPass<'_>> = None;
        if self.checked_at.is_none_or(|at| now >= at + RECHECK) {
            // A pod first found hostable now may have been since it was created, if that
            // was after the previous check.
            let previous = self.checked_at.replace(now).unwrap_or_default();
            let waiting: Vec<&PodView> =
                ctx.pods.iter().filter(|p| waits_for_a_node(p) && !self.reported.contains(&p.uid)).collect();
            if !waiting.is_empty() {
                self.refresh_offerings(ctx, pass.as_ref());
            }
            let per_pool = self.offerings.as_ref().map(|(_, o)| o);
            let mut since = std::collections::BTreeMap::new();
            for pod in waiting {
                let pass = pass.get_or_insert_with(|| HostingPass::new(ctx));
                if per_pool.and_then(|o| hosting_offering(pass, o, pod)).is_some() {
                    let first = pod.created.max(previous);
                    since.insert(pod.uid.clone(), self.hostable_since.get(&pod.uid).copied().unwrap_or(first));
                }
            }
            self.hostable_since = since;
        }
        let clock = |p: &PodView, hostable: Duration| p.created.max(healed).max(hostable);
        let overdue: Vec<&PodView> = ctx
            .pods
            .iter()
            .filter(|p| waits_for_a_node(p))
            .filter(|p| self.hostable_since.get(&p.uid).is_some_and(|h| now.saturating_sub(clock(p, *h)) > limit))
            .filter(|p| !self.reported.contains(&p.uid))
            .collect();
        if !overdue.is_empty() {
            self.refresh_offerings(ctx, pass.as_ref());
        }
        for pod in overdue {
            let pass = pass.get_or_insert_with(|| HostingPass::new(ctx));
            let per_pool = self.offerings.as_ref().map(|(_, o)| o);
            let Some(offering) = per_pool.and_then(|o| hosting_offering(pass, o, pod)) else { continue };
            self.reported.insert(pod.uid.clone());
            out.push(Violation {
                invariant: self.name().into(),
                at: now,
                objects: vec![format!("Pod {}", pod.key)],
                message: format!(
                    "pod {} pending for {} after faults healed and while hostable (limit {}) though offering \
                     {offering} could host it",
                    pod.key,
                    format_duration(now.saturating_sub(clock(pod, self.hostable_since[&pod.uid]))),
                    format_duration(limit)
                ),
                trace_position: ctx.view.trace_position,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{fits_remaining, pod_shape};
    use crate::oracle::resources::Resources;
    use crate::oracle::view::read_pod;

    /// Two replicas of one workload (other name, uid, creation time) share a shape, so a
    /// pass answers for both at once; another label or namespace (the spread counts by
    /// them) or other requests make another shape.
    #[test]
    fn replicas_share_a_shape_and_labels_or_requests_do_not() {
        let pod = |name: &str, ns: &str, app: &str, cpu: &str| {
            read_pod(&std::sync::Arc::new(serde_json::json!({
                "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
                    "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": app}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
            })))
        };
        let a = pod_shape(&pod("web-1", "default", "web", "1"));
        assert_eq!(a, pod_shape(&pod("web-2", "default", "web", "1")));
        assert_ne!(a, pod_shape(&pod("web-1", "other", "web", "1")));
        assert_ne!(a, pod_shape(&pod("web-1", "default", "api", "1")));
        assert_ne!(a, pod_shape(&pod("web-1", "default", "web", "2")));
    }

    /// Story 716913162: pool-0's limit of 11 CPUs with 10 in use leaves 1000m, so a 4-CPU
    /// c1.xlarge is no host (Karpenter filters it out); with the limit unset or room left (the
    /// excuse does not apply) it is.
    #[test]
    fn an_instance_type_larger_than_what_the_limits_leave_hosts_nothing() {
        let xlarge = Resources { cpu: 4000.0, memory: 7.0 * 1024.0 * 1024.0 * 1024.0, pods: 58.0 };
        assert!(!fits_remaining(&xlarge, (Some(1000.0), None)));
        assert!(!fits_remaining(&xlarge, (None, Some(1024.0 * 1024.0 * 1024.0))));
        assert!(fits_remaining(&xlarge, (None, None)));
        assert!(fits_remaining(&xlarge, (Some(4000.0), Some(8.0 * 1024.0 * 1024.0 * 1024.0))));
    }

    /// [`super::zone_priced`] finds the zones of `priced_offerings` without listing them:
    /// per zone, for a pool over the catalog, one narrowed to a family, and one whose
    /// requirements no offering meets.
    #[test]
    fn zone_priced_agrees_with_the_zones_of_the_priced_offerings() {
        use crate::oracle::resources::{pool_requirements, priced_offerings, zone_priced};
        use dovetail_fakecloud::{Catalog, CloudConfig, FakeCloud};
        use std::collections::BTreeSet;
        let config = CloudConfig::new(1, dovetail_world::clock::sim_epoch());
        let cloud = FakeCloud::new(config, Catalog::load("us-east-1").expect("the shipped catalog"));
        let now = std::time::Duration::from_secs(600);
        let pools = [
            serde_json::json!({"spec": {"template": {"spec": {}}}}),
            serde_json::json!({"spec": {"template": {"spec": {"requirements": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}}}}),
            serde_json::json!({"spec": {"template": {"spec": {"requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["no-such-type"]}]}}}}),
        ];
        for pool in &pools {
            let listed: BTreeSet<String> =
                priced_offerings(&cloud, &Default::default(), pool, now).into_iter().map(|(o, _)| o.zone).collect();
            let requirements = pool_requirements(pool);
            let asked: BTreeSet<String> = cloud
                .catalog()
                .zones()
                .iter()
                .filter(|z| zone_priced(&cloud, &requirements, &z.name, now))
                .map(|z| z.name.clone())
                .collect();
            assert_eq!(asked, listed, "{pool}");
        }
    }
}
