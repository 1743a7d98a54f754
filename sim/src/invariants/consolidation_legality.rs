//! `consolidationLegality`: every voluntary disruption the controller starts for reason
//! `Underutilized` or `Empty` is one Karpenter could have taken at that moment.
//!
//! The command is seen when its candidates first carry the `DisruptionReason` condition
//! (written right after validation, with the `karpenter.sh/disrupted` taint: core
//! `pkg/controllers/disruption/queue.go` `StartCommand`), and judged against the state of
//! the tick before, which is what the controller validated against. Its replacements are the
//! NodeClaims with a `DisruptionLaunching` Event created within [`REPLACEMENT_WINDOW`] of it
//! ([`crate::oracle::disruption_events`]). Only what the oracle knows for certain is
//! judged:
//!
//! - **Candidacy** (core `consolidation.go:100-134` `ShouldDisrupt`, `emptiness.go:42-59`):
//!   no candidate of a pool with `consolidateAfter: Never`; no `Underutilized` candidate of a
//!   `WhenEmpty` pool; no candidate whose NodeClaim or Node carried
//!   `karpenter.sh/do-not-disrupt` (`pkg/controllers/disruption/types.go` `NewCandidate`);
//!   no candidate whose Node was not initialized; and `Consolidatable` needs `consolidateAfter`
//!   since the last pod event (`pkg/controllers/nodeclaim/disruption/consolidation.go:63-80`).
//!   Only pod *arrivals* the oracle saw after it first saw the node count as pod events (a
//!   departure the controller may not count, e.g. a pod deleted without a grace period, is
//!   left out, so the clock errs early), and upstream's 10 s de-duplication of pod events
//!   (`nodeclaim/podevents/controller.go:44`) plus a second of observation is allowed. An
//!   arrival seen under delayed watch events does not count: upstream stamps the time when
//!   its informer delivers the pod (`Reconcile`, `c.clock.Now()`) and decides on that state
//!   (generated story 315805906: a pod bound at 252 s, 5 s-late events queued, marked 281 s).
//! - **Fit, for a delete** (`computeConsolidation`, `consolidation.go:171-186`: a command
//!   without a new NodeClaim needs every pod scheduled on the remaining nodes): the
//!   candidates' reschedulable pods' requests must fit in the free capacity of every other
//!   node added up, a bound no packing can beat. Not judged while pods were pending or a
//!   NodeClaim was in flight (upstream also packs onto in-flight claims), nor while faults
//!   are live (a lost `DisruptionLaunching` Event would make a replace look like a delete).
//! - **Price, for a replace** (`consolidation.go:199-221`, `filterByPrice`): the
//!   replacement's worst launch price is strictly below the candidates' summed price, so the
//!   instance it launched costs less than they do. Judged only when every candidate and the
//!   replacement are on-demand: on-demand prices are fixed, while the controller's spot
//!   prices come from its own periodic DescribeSpotPriceHistory (upstream refreshes them
//!   every 12 h), which the oracle cannot see.
//! - **Spot-to-spot** (`consolidation.go:201-214`, `264-267`): with the
//!   `SpotToSpotConsolidation` gate off, a command whose candidates are *all* spot is never
//!   replaced by a spot node (`allExistingAreSpot`); a mixed set, e.g. a multi-node command
//!   over a spot and an on-demand node of two pools, may be.
//! - **Spot-to-spot of one node** (`consolidation.go:307-315`, `MinInstanceTypesForSpotToSpotConsolidation`
//!   = 15 at l. 47-48): a command with a single spot candidate replaced by a spot node needs
//!   at least 15 cheaper spot instance types among the replacement's options (for several
//!   candidates there is no such rule, l. 291-304). The oracle cannot see prices the way the
//!   controller does, but it can bound the options from above: a new NodeClaim's options are
//!   the instance types of its NodePool that the pool's requirements allow (core
//!   `provisioning/scheduling/scheduler.go:159`, `filterInstanceTypesByRequirements` of
//!   `instanceTypes[np.Name]` into the template's `InstanceTypeOptions`), and after
//!   `Compatible` with `capacity-type In [spot]` (`consolidation.go:272-274`) only types with a
//!   spot offering remain. So the catalog's instance types that the NodePool's requirements
//!   allow with a spot offering in some allowed zone, available or not, bound the cheaper
//!   options; fewer than 15 makes the replace illegal, gate on or off. Judged only when no
//!   other NodeClaim was marked for the same reason within [`REPLACEMENT_WINDOW`], so a
//!   multi-node command whose marks straddle two ticks is not taken for a single one.
//!
//! Not judged (the oracle cannot know what the controller knew): PDBs at the decision (an
//! eviction can start within the same second), spot prices (so the 15-types rule only as the
//! upper bound above), and whether a multi-node command was the one upstream's search would
//! find.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use dovetail_fakecloud::{CapacityType, FakeCloud};

use super::{Ctx, Invariant, Phase, Violation};
use crate::oracle::instance_price::{instance_price, per_hour};
use crate::oracle::offering_labels::shared_labels;
use crate::oracle::resources::{Resources, pool_requirements};
use crate::oracle::view::{PodView, View};
use dovetail_world::SimDuration;

/// The name in reports.
pub const NAME: &str = "consolidationLegality";

/// The disruption reasons of consolidation.
const REASONS: [&str; 2] = ["Underutilized", "Empty"];

/// Upstream de-duplicates pod events within 10 s; one more second for the observation tick.
pub const POD_EVENT_SLACK: Duration = Duration::from_secs(11);

/// A replacement is created right after its command's candidates are marked; a NodeClaim
/// with a `DisruptionLaunching` Event for the command's reason ("Launching NodeClaim:
/// <Reason>", core `disruption/events/events.go` `Launching`, l. 31–38) created this long
/// before or after the mark is the command's. The reason matters: a Drift replace may start
/// within seconds of an Empty delete in the same NodePool, and its replacement is not the
/// Empty command's.
pub const REPLACEMENT_WINDOW: Duration = Duration::from_secs(5);

/// How long after the mark the replacement's instance may take to appear for the price to
/// be judged.
pub const LAUNCH_WAIT: Duration = Duration::from_secs(600);

/// A single spot node is replaced by a spot node only with at least this many cheaper spot
/// instance types (core `consolidation.go:47-48`, `MinInstanceTypesForSpotToSpotConsolidation`).
pub const SPOT_TO_SPOT_MIN_TYPES: usize = 15;

/// One node's facts at a tick, kept for the tick after.
#[derive(Clone, Debug, Default)]
struct NodeFacts {
    /// Requests of its reschedulable pods (active, not DaemonSet).
    need: Resources,
    /// Allocatable less the requests of every active pod on it.
    free: Resources,
    /// The Node or its NodeClaim is annotated `karpenter.sh/do-not-disrupt`.
    do_not_disrupt: bool,
    /// Labelled initialized.
    initialized: bool,
}

/// The cluster at the previous tick.
#[derive(Clone, Debug, Default)]
struct Before {
    nodes: BTreeMap<String, NodeFacts>,
    /// Some pod was pending.
    pending: bool,
    /// Some NodeClaim was launched but not initialized, and not deleting.
    in_flight: bool,
    /// Some Node had reported no allocatable yet: the free capacity is unknown.
    unknown_capacity: bool,
}

/// A command seen, waiting for its replacement's instance.
#[derive(Clone, Debug)]
struct Command {
    at: Duration,
    /// The candidates' NodePools.
    nodepools: BTreeSet<String>,
    reason: String,
    claims: Vec<String>,
    /// Every candidate is on-demand, with their summed price.
    on_demand_price: Option<f64>,
    /// Every candidate is spot.
    all_spot: bool,
    /// The candidates' reschedulable pods' requests and every other node's free capacity
    /// at the tick before (`None` when not judged).
    fit: Option<(Resources, Resources)>,
    /// The replacement NodeClaim, once its launch Event is seen.
    replacement: Option<String>,
}

/// The last pod arrival seen on a node: when, and whether watch events were being delayed
/// then (such an arrival does not start the consolidateAfter clock).
#[derive(Clone, Copy, Debug)]
struct Arrival {
    at: Duration,
    lagged: bool,
}

/// The invariant.
#[derive(Default)]
pub struct ConsolidationLegality {
    /// Claims already seen marked for a consolidation reason: when, and the reason.
    marked: BTreeMap<String, (Duration, String)>,
    /// Per node: its pods when first seen, and the last pod arrival seen since, with
    /// whether watch events were being delayed then ([`ConsolidationLegality::lagging`]).
    arrivals: BTreeMap<String, (BTreeSet<String>, Option<Arrival>)>,
    /// Whether the API server delays watch events at this tick (a `watchDelay` fault).
    lagging: bool,
    before: Option<Before>,
    commands: Vec<Command>,
    /// Launches already matched to a command (a replacement serves one command only).
    matched: BTreeSet<String>,
}

impl Invariant for ConsolidationLegality {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        self.lagging = !ctx.watch_delay.is_zero();
        self.observe(ctx.view, ctx.pods, ctx.cloud, ctx.spot_to_spot_possible, ctx.phase == Phase::Faults, out);
    }
}

impl ConsolidationLegality {
    /// Judges the commands started since the last tick and the replacements seen, then
    /// remembers this tick for the next.
    pub fn observe(
        &mut self,
        view: &View,
        pods: &[PodView],
        cloud: &FakeCloud,
        spot_to_spot: bool,
        faults_live: bool,
        out: &mut Vec<Violation>,
    ) {
        // One command per reason marked in a tick, whatever the candidates' pools: multi-node
        // consolidation takes its candidates from every NodePool at once (core
        // `pkg/controllers/disruption/multinodeconsolidation.go` `ComputeCommands` over all
        // candidates; `consolidation.go:201-214` then reads the whole set, e.g.
        // `allExistingAreSpot`). Two commands started within one tick are judged as one, which
        // only loosens the price and spot rules and is what upstream requires of the fit (the
        // second command's simulation already counts the first's candidates as leaving).
        let mut new: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for c in view.claims.values() {
            let Some(reason) = c.disruption_reason.as_deref().filter(|r| REASONS.contains(r)) else { continue };
            if !self.marked.contains_key(&c.name) {
                self.marked.insert(c.name.clone(), (view.now, reason.to_string()));
                new.entry(reason.to_string()).or_default().entry(c.nodepool.clone()).or_default().push(c.name.clone());
            }
        }
        self.marked.retain(|n, _| view.claims.contains_key(n));
        for (reason, by_pool) in new {
            for (nodepool, claims) in &by_pool {
                self.judge_candidacy(view, nodepool, &reason, claims, out);
            }
            if !faults_live {
                let nodepools = by_pool.keys().cloned().collect();
                let claims = by_pool.into_values().flatten().collect();
                self.judge_fit_later(view, cloud, nodepools, reason, claims);
            }
        }
        self.follow_commands(view, cloud, spot_to_spot, out);
        self.observe_arrivals(view, pods);
        self.before = Some(before(view, pods));
    }

    /// The candidacy rules, against the tick before.
    fn judge_candidacy(&self, view: &View, nodepool: &str, reason: &str, claims: &[String], out: &mut Vec<Violation>) {
        let pool = view.pools.get(nodepool).map(|p| p.object.as_ref());
        let disruption = pool.map(|p| &p["spec"]["disruption"]);
        let consolidate_after = disruption.and_then(|d| d["consolidateAfter"].as_str());
        let when_empty = disruption.is_some_and(|d| d["consolidationPolicy"] == "WhenEmpty");
        for name in claims {
            let Some(claim) = view.claims.get(name) else { continue };
            let node = claim.node_name.clone().unwrap_or_default();
            let facts = self.before.as_ref().and_then(|b| b.nodes.get(&node));
            let mut broken = Vec::new();
            if consolidate_after == Some("Never") {
                broken.push(format!("NodePool {nodepool} has consolidateAfter: Never"));
            }
            if when_empty && reason == "Underutilized" {
                broken.push(format!("NodePool {nodepool} consolidates only empty nodes (WhenEmpty)"));
            }
            if let Some(f) = facts {
                if f.do_not_disrupt {
                    broken.push("the Node or NodeClaim was annotated karpenter.sh/do-not-disrupt".into());
                }
                if !f.initialized {
                    broken.push("the Node was not initialized".into());
                }
            }
            let after = consolidate_after.filter(|a| *a != "Never").and_then(|a| SimDuration::parse(a).ok());
            let arrival = self.arrivals.get(&node).and_then(|(_, a)| *a).filter(|a| !a.lagged).map(|a| a.at);
            if let (Some(after), Some(arrival)) = (after, arrival)
                && view.now + POD_EVENT_SLACK < arrival + after.0
            {
                broken.push(format!(
                    "a pod arrived at {}s and consolidateAfter is {}s: not Consolidatable before {}s",
                    arrival.as_secs(),
                    after.0.as_secs(),
                    (arrival + after.0).as_secs() - POD_EVENT_SLACK.as_secs()
                ));
            }
            for rule in broken {
                out.push(violation(
                    view,
                    vec![format!("NodeClaim {name}"), format!("Node {node}"), format!("NodePool {nodepool}")],
                    format!("the controller disrupted NodeClaim {name} for {reason}, but {rule}"),
                ));
            }
        }
    }

    /// Records a command with what its fit and price are judged against: the candidates'
    /// pods and the other nodes' free capacity at the tick before, and the candidates' price.
    fn judge_fit_later(
        &mut self,
        view: &View,
        cloud: &FakeCloud,
        nodepools: BTreeSet<String>,
        reason: String,
        claims: Vec<String>,
    ) {
        // The candidates of one command are marked one API write after another, so under a
        // slow API server a command's marks can straddle ticks (generated story 47951154: a
        // four-node command judged as a one-node replace and a three-node delete). Marks for
        // the same reason within [`REPLACEMENT_WINDOW`] of a command still waiting for its
        // replacement join it; judging two commands as one only loosens the price and spot
        // rules, and the fit is what upstream requires of the later one anyway.
        let joinable = self
            .commands
            .iter()
            .position(|c| c.reason == reason && c.replacement.is_none() && view.now <= c.at + REPLACEMENT_WINDOW);
        let (at, nodepools, claims) = match joinable {
            Some(i) => {
                let earlier = self.commands.remove(i);
                let mut all = earlier.claims;
                all.extend(claims);
                (earlier.at, earlier.nodepools.into_iter().chain(nodepools).collect(), all)
            }
            None => (view.now, nodepools, claims),
        };
        let mut price = Some(0.0);
        let mut all_spot = true;
        let mut nodes = BTreeSet::new();
        for name in &claims {
            let claim = view.claims.get(name);
            nodes.extend(claim.and_then(|c| c.node_name.clone()));
            match claim.and_then(|c| view.instance_of(c)) {
                Some(i) if i.capacity_type == CapacityType::OnDemand => {
                    all_spot = false;
                    let p = instance_price(cloud, &view.overlays, i);
                    price = price.zip(p).map(|(a, b)| a + b);
                }
                Some(_) => price = None,
                None => {
                    price = None;
                    all_spot = false;
                }
            }
        }
        let fit = self.before.as_ref().filter(|b| !b.pending && !b.in_flight && !b.unknown_capacity).and_then(|b| {
            let mut need = Resources::default();
            let mut free = Resources::default();
            for node in &nodes {
                need.add(&b.nodes.get(node)?.need);
            }
            for (name, f) in &b.nodes {
                if !nodes.contains(name) {
                    free.add(&non_negative(&f.free));
                }
            }
            Some((need, free))
        });
        self.commands.push(Command {
            at,
            nodepools,
            reason,
            claims,
            on_demand_price: price,
            all_spot,
            fit,
            replacement: None,
        });
    }

    /// Finds each command's replacement; judges fit once its window closed without one, and
    /// price and spot-to-spot once the replacement's instance is known.
    fn follow_commands(&mut self, view: &View, cloud: &FakeCloud, spot_to_spot: bool, out: &mut Vec<Violation>) {
        // A replacement may come from any NodePool: the disruption simulation schedules the
        // candidates' pods against every managed pool (core
        // `pkg/controllers/provisioning/provisioner.go` `NewScheduler`, l. 272). One in a
        // candidate's own pool is preferred, and a launch is matched to one command only.
        self.matched.retain(|name| view.claims.contains_key(name));
        let taken = &mut self.matched;
        let marked = &self.marked;
        self.commands.retain_mut(|cmd| {
            if cmd.replacement.is_none() {
                let launches: Vec<&str> = view
                    .disruption_events
                    .iter()
                    .filter(|l| l.is_launch() && l.disruption_reason() == Some(cmd.reason.as_str()))
                    .filter(|l| l.at + REPLACEMENT_WINDOW >= cmd.at && l.at <= cmd.at + REPLACEMENT_WINDOW)
                    .map(|l| l.node_claim.as_str())
                    .filter(|name| !taken.contains(*name) && view.claims.contains_key(*name))
                    .collect();
                let same_pool =
                    launches.iter().find(|n| view.claims.get(**n).is_some_and(|c| cmd.nodepools.contains(&c.nodepool)));
                cmd.replacement = same_pool.or(launches.first()).map(|n| n.to_string());
                taken.extend(cmd.replacement.clone());
            }
            match &cmd.replacement {
                None if view.now <= cmd.at + REPLACEMENT_WINDOW => true,
                None => {
                    judge_fit(cmd, view, out);
                    false
                }
                Some(r) => {
                    let claim = view.claims.get(r);
                    let Some(instance) = claim.and_then(|c| view.instance_of(c)) else {
                        return claim.is_some() && view.now <= cmd.at + LAUNCH_WAIT;
                    };
                    // One spot node replaced by spot with the gate maybe on: wait out the window,
                    // so a second candidate marked a tick later is seen (a multi-node command).
                    let single_spot =
                        cmd.claims.len() == 1 && cmd.all_spot && instance.capacity_type == CapacityType::Spot;
                    if single_spot && spot_to_spot && view.now <= cmd.at + REPLACEMENT_WINDOW {
                        return true;
                    }
                    // A lone candidate: no other claim marked for the reason around it.
                    let lone = cmd.claims.len() == 1
                        && !marked.iter().any(|(name, (at, reason))| {
                            !cmd.claims.contains(name)
                                && *reason == cmd.reason
                                && *at + REPLACEMENT_WINDOW >= cmd.at
                                && *at <= cmd.at + REPLACEMENT_WINDOW
                        });
                    let replacement = Replacement { name: r, instance, lone };
                    judge_replacement(cmd, &replacement, cloud, spot_to_spot, view, out);
                    false
                }
            }
        });
    }

    /// Notes pod arrivals on nodes seen before (see the module docs: arrivals only).
    fn observe_arrivals(&mut self, view: &View, pods: &[PodView]) {
        let mut on: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for p in pods.iter().filter(|p| p.active() && !p.daemonset) {
            if let Some(n) = p.node_name.as_deref() {
                on.entry(n).or_default().insert(p.uid.clone());
            }
        }
        self.arrivals.retain(|name, _| view.nodes.contains_key(name));
        for name in view.nodes.keys() {
            let now_on = on.remove(name.as_str()).unwrap_or_default();
            match self.arrivals.get_mut(name) {
                None => {
                    self.arrivals.insert(name.clone(), (now_on, None));
                }
                Some((seen, last)) => {
                    if now_on.iter().any(|uid| !seen.contains(uid)) {
                        *last = Some(Arrival { at: view.now, lagged: self.lagging });
                    }
                    *seen = now_on;
                }
            }
        }
    }
}

/// The facts of every node at this tick, for judging a command seen at the next.
fn before(view: &View, pods: &[PodView]) -> Before {
    let mut nodes: BTreeMap<String, NodeFacts> = view
        .nodes
        .iter()
        .map(|(name, n)| {
            let claim_dnd = view.claims.values().any(|c| c.node_name.as_deref() == Some(name) && c.do_not_disrupt);
            let facts = NodeFacts {
                need: Resources::default(),
                free: n.allocatable,
                do_not_disrupt: n.do_not_disrupt || claim_dnd,
                initialized: n.initialized,
            };
            (name.clone(), facts)
        })
        .collect();
    let mut pending = false;
    for p in pods.iter().filter(|p| p.active()) {
        match p.node_name.as_deref().and_then(|n| nodes.get_mut(n)) {
            Some(f) => {
                f.free = f.free.minus(&p.requests);
                if !p.daemonset {
                    f.need.add(&p.requests);
                }
            }
            None => pending |= p.node_name.is_none() && !p.daemonset,
        }
    }
    let in_flight = view.claims.values().any(|c| !c.initialized && c.deleting_since.is_none());
    let unknown_capacity = view.nodes.values().any(|n| n.allocatable.pods <= 0.0 || n.allocatable.cpu <= 0.0);
    Before { nodes, pending, in_flight, unknown_capacity }
}

/// `r` with every negative component (an over-committed node) raised to zero.
fn non_negative(r: &Resources) -> Resources {
    Resources { cpu: r.cpu.max(0.0), memory: r.memory.max(0.0), pods: r.pods.max(0.0) }
}

/// Whether `need` exceeds `free` in some component beyond rounding.
fn exceeds(need: &Resources, free: &Resources) -> bool {
    let over = |n: f64, f: f64| n > f + 1e-6 * f.abs().max(1.0);
    over(need.cpu, free.cpu) || over(need.memory, free.memory) || over(need.pods, free.pods)
}

/// `1500m CPU, 3.0 GiB, 7 pods`.
fn describe(r: &Resources) -> String {
    format!("{:.0}m CPU, {:.1} GiB, {:.0} pods", r.cpu, r.memory / (1024.0 * 1024.0 * 1024.0), r.pods)
}

/// A delete command: the candidates' pods fit in the others' free capacity added up.
fn judge_fit(cmd: &Command, view: &View, out: &mut Vec<Violation>) {
    let Some((need, free)) = &cmd.fit else { return };
    if !exceeds(need, free) {
        return;
    }
    out.push(violation(
        view,
        objects(cmd),
        format!(
            "the controller deleted NodeClaim(s) {} for {} without a replacement, but their pods need {} while every other node together had {} free",
            cmd.claims.join(", "),
            cmd.reason,
            describe(need),
            describe(free)
        ),
    ));
}

/// A command's replacement NodeClaim and its instance.
struct Replacement<'a> {
    name: &'a str,
    instance: &'a crate::oracle::view::InstanceView,
    /// The command has one candidate and no other claim was marked for its reason near it.
    lone: bool,
}

/// How many instance types of `cloud`'s catalog `pool`'s requirements allow with a spot
/// offering in some zone they allow (available or not): an upper bound on the spot options
/// a replacement from `pool` can have.
fn spot_types_allowed(cloud: &FakeCloud, pool: &serde_json::Value) -> usize {
    let requirements = pool_requirements(pool);
    let catalog = cloud.catalog();
    let zones = catalog.zones();
    catalog
        .types()
        .filter(|t| t.supports(CapacityType::Spot.as_str()))
        .filter(|t| {
            zones.iter().any(|z| {
                catalog.is_offered(&t.name, &z.name) && {
                    let labels = shared_labels(t, &z.name, &z.id, CapacityType::Spot);
                    requirements.iter().all(|r| r.allows_labels(&labels))
                }
            })
        })
        .count()
}

/// A replace command: spot-to-spot only with the gate on, and of one node only with at least
/// [`SPOT_TO_SPOT_MIN_TYPES`] spot types; an on-demand replacement of on-demand candidates
/// costs less than they do.
fn judge_replacement(
    cmd: &Command,
    replacement: &Replacement<'_>,
    cloud: &FakeCloud,
    spot_to_spot: bool,
    view: &View,
    out: &mut Vec<Violation>,
) {
    let Replacement { name: replacement, instance, lone } = *replacement;
    let mut objs = objects(cmd);
    objs.push(format!("NodeClaim {replacement}"));
    if instance.capacity_type == CapacityType::Spot && cmd.all_spot && !spot_to_spot {
        out.push(violation(
            view,
            objs,
            format!(
                "the controller replaced spot NodeClaim(s) {} ({}) with spot NodeClaim {replacement} ({}) while SpotToSpotConsolidation is off",
                cmd.claims.join(", "),
                cmd.reason,
                instance.instance_type
            ),
        ));
        return;
    }
    let pool = view.claims.get(replacement).and_then(|c| view.pools.get(&c.nodepool));
    if let (Some(pool), CapacityType::Spot, true, true) = (pool, instance.capacity_type, cmd.all_spot, lone) {
        let allowed = spot_types_allowed(cloud, &pool.object);
        if allowed < SPOT_TO_SPOT_MIN_TYPES {
            let pool_object = format!("NodePool {}", pool.name);
            if !objs.contains(&pool_object) {
                objs.push(pool_object);
            }
            out.push(violation(
                view,
                objs,
                format!(
                    "the controller replaced the single spot NodeClaim {} ({}) with spot NodeClaim {replacement} ({}), but NodePool {} allows only {allowed} instance types with a spot offering: spot-to-spot consolidation of one node needs at least {SPOT_TO_SPOT_MIN_TYPES} cheaper spot types",
                    cmd.claims.join(", "),
                    cmd.reason,
                    instance.instance_type,
                    pool.name
                ),
            ));
        }
        return;
    }
    let (Some(candidates), CapacityType::OnDemand) = (cmd.on_demand_price, instance.capacity_type) else { return };
    let Some(price) = instance_price(cloud, &view.overlays, instance).filter(|p| *p >= candidates) else { return };
    out.push(violation(
        view,
        objs,
        format!(
            "the controller replaced on-demand NodeClaim(s) {} ({}) for {} with NodeClaim {replacement}, a {}{} at {}: a replacement must cost strictly less (reserved capacity is priced at on-demand / 10^7)",
            cmd.claims.join(", "),
            per_hour(candidates),
            cmd.reason,
            if instance.reserved { "reserved " } else { "" },
            instance.instance_type,
            per_hour(price),
        ),
    ));
}

fn objects(cmd: &Command) -> Vec<String> {
    let mut objs: Vec<String> = cmd.claims.iter().map(|c| format!("NodeClaim {c}")).collect();
    objs.extend(cmd.nodepools.iter().map(|p| format!("NodePool {p}")));
    objs
}

fn violation(view: &View, objects: Vec<String>, message: String) -> Violation {
    Violation { invariant: NAME.into(), at: view.now, objects, message, trace_position: view.trace_position }
}

#[cfg(test)]
#[path = "consolidation_legality_tests.rs"]
mod tests;
