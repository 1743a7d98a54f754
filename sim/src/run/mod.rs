//! Runs a scenario in a deterministic world and reports what happened.
//!
//! The world is a [`ScenarioWorld`], built by the world builder with the plan its seed
//! drew (see [`crate::world`]). The runner steps turmoil itself so that between steps it
//! can start and heal faults, move between phases, restart controller replicas that
//! exited, and sample the world every simulated second.

pub mod driver;
pub mod observe;
pub mod report;
pub mod steps;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub use report::Report;

use crate::apiserver::ApiServer;
use crate::controller_host::Replicas;
use crate::faults::{Faults, Layers};
use crate::invariants::{Checker, InvariantsReport, Phase};
use crate::scenario::plan::Plan;
use crate::scenario::{ControllerSpec, Loaded, SimDuration};
use crate::timeline::Timeline;
use crate::world::{ScenarioWorld, Stream, Trace, TraceEntry, World, reproduce_command};
use dovetail_fakecloud::cloud::{SharedCloud, lock};
use report::{CostSection, InvariantsSection, PendingSection, UnjoinedSection, ViolationReport, round};

/// A finished run.
pub struct Outcome {
    /// The report.
    pub report: Report,
    /// The full trace.
    pub trace: Trace,
    /// The run over simulated time, when [`RunOptions::timeline`] asked for it.
    pub timeline: Option<Timeline>,
}

/// Called with (simulated so far, total simulated) about every simulated second.
pub type Progress = Box<dyn FnMut(Duration, Duration)>;

/// Called once with the world's API server before the first step.
pub type OnStart = Box<dyn FnOnce(&ApiServer)>;

/// Hooks into a run.
#[derive(Default)]
pub struct RunOptions {
    /// Progress over simulated time (for progress bars).
    pub progress: Option<Progress>,
    /// Called once with the world's API server before the first step (`dovetail serve`
    /// also serves it on 127.0.0.1).
    pub on_start: Option<OnStart>,
    /// Called before every step with the simulated time; may block (`dovetail serve`'s
    /// real-time pacing and `--pause-at`). Deterministic runs leave it unset.
    pub before_step: Option<Box<dyn FnMut(Duration)>>,
    /// Record the run's [`Timeline`] (for `--html`). Recording only reads what the
    /// observation pass read anyway: the run itself is the same with or without it.
    pub timeline: bool,
}

/// Runs `loaded` with `seed`.
pub fn run(loaded: &Loaded, seed: u64) -> anyhow::Result<Outcome> {
    run_with(loaded, seed, &mut RunOptions::default())
}

/// Something the runner does at a simulated time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    FaultStart(usize),
    FaultStop(usize),
    Heal,
    Liveness,
    Upgrade(usize, usize),
}

/// Runs `loaded` with `seed`, calling the hooks in `options`.
pub fn run_with(loaded: &Loaded, seed: u64, options: &mut RunOptions) -> anyhow::Result<Outcome> {
    run_world(ScenarioWorld::build(loaded, seed)?, options)
}

/// Steps a scenario's world to the end of its plan, calling the hooks in `options`.
///
/// # Errors
/// The simulation failed (a host crashed, or turmoil's time limit passed).
pub fn run_world(built: ScenarioWorld<'_>, options: &mut RunOptions) -> anyhow::Result<Outcome> {
    let ScenarioWorld { world, loaded, plan, driver: log, observed } = built;
    let loaded = &loaded;
    let seed = world.config.seed;
    let World { mut sim, server, trace, cloud, replicas, .. } = world;
    let total = plan.duration.0;

    let layers = Layers {
        server: server.clone(),
        cloud: cloud.clone(),
        controllers: replicas.as_ref().map(|r| r.hosts.clone()).unwrap_or_default(),
        trace: trace.clone(),
    };
    let mut faults = Faults::new(layers, Stream::FaultWiring.rng(seed));
    let mut events = timeline(&plan, loaded);
    events.reverse();
    let mut observer = observe::Observer::new(cloud.as_ref());
    if options.timeline {
        observer.record_timeline();
    }
    // The invariants are judged from outside the controller, over the API server's store
    // and the fake cloud; API-only scenarios have no cloud to judge.
    let invariant_config = loaded.scenario.invariants.clone().unwrap_or_default();
    let mut checker = cloud.as_ref().map(|_| Checker::new(&invariant_config, &server));
    if let (Some(checker), Some(r)) = (checker.as_mut(), replicas.as_ref()) {
        // consolidationLegality may call a spot-to-spot replace illegal only if the gate is
        // off at the start and no upgrade turns it on.
        let on = r.settings.lock().unwrap_or_else(|e| e.into_inner()).feature_gates.spot_to_spot_consolidation;
        let upgraded = matches!(&loaded.scenario.controller, ControllerSpec::Run(c) if c.upgrades.iter()
            .any(|u| u.feature_gates.as_ref().and_then(|g| g.spot_to_spot_consolidation) == Some(true)));
        checker.set_spot_to_spot_possible(on || upgraded);
        // A NotReady Node's late delete is a budget-exempt repair only with NodeRepair on.
        let repair = r.settings.lock().unwrap_or_else(|e| e.into_inner()).feature_gates.node_repair;
        let repair_upgraded = matches!(&loaded.scenario.controller, ControllerSpec::Run(c) if c.upgrades.iter()
            .any(|u| u.feature_gates.as_ref().and_then(|g| g.node_repair) == Some(true)));
        checker.set_node_repair_possible(repair || repair_upgraded);
        let reserved = r.settings.lock().unwrap_or_else(|e| e.into_inner()).feature_gates.reserved_capacity;
        let reserved_off = matches!(&loaded.scenario.controller, ControllerSpec::Run(c) if c.upgrades.iter()
            .any(|u| u.feature_gates.as_ref().and_then(|g| g.reserved_capacity) == Some(false)));
        checker.set_reserved_capacity_always(reserved && !reserved_off);
        let scraped = r.clone();
        checker.set_metrics_source(Box::new(move || scraped.scrape()));
        // The oracles price through the NodeOverlays when the controller starts with the
        // gate on (an upgrade turning it on or off later is not followed).
        if r.settings.lock().unwrap_or_else(|e| e.into_inner()).feature_gates.node_overlay {
            observer.price_through_node_overlays();
        }
    }
    if let Some(checker) = checker.as_mut() {
        let count = replicas.as_ref().map_or(0, |r| r.hosts.len());
        checker.set_controller_cut_off(controller_cut_off(&plan.faults, plan.phases.faults_until.0, count));
    }
    if let Some(checker) = checker.as_mut()
        && !plan.faults.is_empty()
        && plan.phases.faults_until.0 > Duration::ZERO
    {
        checker.set_phase(Phase::Faults, Duration::ZERO);
    }
    let mut restarts = 0u64;
    let mut next_sample = Duration::ZERO;
    if let Some(f) = options.on_start.take() {
        f(&server);
    }
    loop {
        let now = sim.elapsed();
        while events.last().is_some_and(|(at, _)| *at <= now) {
            let Some((_, event)) = events.pop() else { break };
            if let Some(checker) = checker.as_mut() {
                match event {
                    Event::Heal => checker.set_phase(Phase::Heal, now),
                    Event::Liveness => checker.set_phase(Phase::Liveness, now),
                    _ => {}
                }
            }
            handle(&mut sim, &mut faults, &plan, loaded, replicas.as_ref(), &trace, event, now);
        }
        if let Some(r) = &replicas {
            for host in r.take_exited() {
                restarts += 1;
                sim.bounce(host.as_str());
            }
        }
        if now >= next_sample {
            dovetail_world::cpu_meter::measure(("observer", "observer"), || {
                observer.sample(&server, cloud.as_ref(), checker.as_mut(), now)
            });
            if let Some(p) = options.progress.as_mut() {
                p(now.min(total), total);
            }
            next_sample += Duration::from_secs(1);
        }
        if now >= total {
            break;
        }
        if let Some(f) = options.before_step.as_mut() {
            f(now);
        }
        sim.step().map_err(|e| anyhow::anyhow!("simulation failed at {}: {e}", SimDuration(now)))?;
        // Between steps the runner is in no host: the cloud's faults act at the world's time.
        if let Some(cloud) = &cloud {
            dovetail_world::cpu_meter::measure(("fakecloud", "clock"), || cloud.stepped_to(sim.elapsed()));
        }
    }
    let end = sim.elapsed();
    if let (Some(checker), Some(r)) = (checker.as_mut(), replicas.as_ref()) {
        // The cost judgement at the end follows the gates the controller runs with then
        // (after any rolling upgrade).
        let settings = r.settings.lock().unwrap_or_else(|e| e.into_inner());
        checker.set_spot_to_spot_consolidation(settings.feature_gates.spot_to_spot_consolidation);
    }
    let judged = checker.zip(cloud.as_ref()).map(|(c, cloud)| observer.judge(&server, cloud, c, end));
    let report = assemble(
        loaded,
        seed,
        &plan,
        &server,
        cloud.as_ref(),
        &observer,
        &faults,
        &trace,
        &log,
        end,
        restarts,
        observed.load(Ordering::Relaxed),
        judged,
    );
    let timeline = observer.take_timeline().map(|recording| {
        let cloud = cloud.as_ref().map(lock);
        Timeline::assemble(recording, &report, &plan, cloud.as_deref(), &trace)
    });
    Ok(Outcome { report, trace, timeline })
}

/// The runner's events in time order (stable: equal times keep this order).
fn timeline(plan: &Plan, loaded: &Loaded) -> Vec<(Duration, Event)> {
    let mut events = Vec::new();
    for (i, f) in plan.faults.iter().enumerate() {
        events.push((f.at.0, Event::FaultStart(i)));
        if let Some(until) = f.until {
            events.push((until.0, Event::FaultStop(i)));
        }
    }
    if plan.phases.faults_until < plan.duration {
        events.push((plan.phases.faults_until.0, Event::Heal));
    }
    if plan.phases.liveness_from < plan.duration {
        events.push((plan.phases.liveness_from.0, Event::Liveness));
    }
    if let ControllerSpec::Run(c) = &loaded.scenario.controller {
        for (i, u) in c.upgrades.iter().enumerate() {
            for r in 0..usize::from(c.replicas) {
                events.push((u.at.0 + Duration::from_secs(30) * r as u32, Event::Upgrade(i, r)));
            }
        }
    }
    events.sort_by_key(|(at, _)| *at);
    events
}

#[allow(clippy::too_many_arguments)]
fn handle(
    sim: &mut turmoil::Sim<'_>,
    faults: &mut Faults,
    plan: &Plan,
    loaded: &Loaded,
    replicas: Option<&Replicas>,
    trace: &Trace,
    event: Event,
    now: Duration,
) {
    let phase = |name: &str| {
        trace.record(TraceEntry { at: now, source: "runner", verb: "phase".into(), subject: name.into() });
    };
    match event {
        Event::FaultStart(i) => {
            let f = &plan.faults[i];
            faults.start(sim, i, &f.fault, now);
            if f.until.is_none() {
                // Instant restarts: crash and start again at once.
                faults.stop(sim, i, now);
            }
        }
        Event::FaultStop(i) => faults.stop(sim, i, now),
        Event::Heal => {
            faults.heal_all(sim, now);
            // The invariant checker's phase moves to Heal here.
            phase("heal");
        }
        // The invariant checker's phase moves to Liveness here.
        Event::Liveness => phase("liveness"),
        Event::Upgrade(i, r) => {
            let (ControllerSpec::Run(c), Some(replicas)) = (&loaded.scenario.controller, replicas) else { return };
            if r == 0 {
                let mut settings = replicas.settings.lock().unwrap_or_else(|e| e.into_inner());
                c.upgrades[i].apply_to(&mut settings);
            }
            if let Some(host) = replicas.hosts.get(r) {
                faults.bounce_controller(sim, host, now);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    loaded: &Loaded,
    seed: u64,
    plan: &Plan,
    server: &ApiServer,
    cloud: Option<&SharedCloud>,
    observer: &observe::Observer,
    faults: &Faults,
    trace: &Trace,
    log: &driver::DriverLog,
    end: Duration,
    restarts: u64,
    watch_events: u64,
    judged: Option<InvariantsReport>,
) -> Report {
    let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
    let mut objects = BTreeMap::new();
    for t in store.registry().iter() {
        let n = store.count(&t.key());
        if n > 0 {
            objects.insert(t.group_resource(), n);
        }
    }
    let resource_version = store.resource_version();
    // Why every node is still there and every pending pod pending, at the end (a world
    // with Karpenter only: without it there is nothing to explain).
    let explanation =
        matches!(loaded.scenario.controller, ControllerSpec::Run(_)).then(|| crate::explain::explain(&store, end));
    drop(store);
    let mut api_calls: BTreeMap<String, u64> = BTreeMap::new();
    let mut fault_effects: BTreeMap<String, u64> = BTreeMap::new();
    for e in trace.entries() {
        if e.source == "apiserver" {
            let resource = e.subject.split_whitespace().next().unwrap_or_default();
            *api_calls.entry(format!("kube {} {resource}", e.verb)).or_default() += 1;
        } else if e.source == "fault"
            && let Some(code) = e.verb.strip_prefix("api-")
        {
            let resource = e.subject.split_whitespace().nth(1).unwrap_or_default();
            *fault_effects.entry(format!("kube {code} {resource}")).or_default() += 1;
        } else if e.source == "kubelet" && e.verb == "register-refused" {
            *fault_effects.entry("kubelet register refused".into()).or_default() += 1;
        }
    }
    let (mut cost, mut launches, mut unjoined) = (CostSection::default(), 0, UnjoinedSection::default());
    if let Some(cloud) = cloud {
        let c = lock(cloud);
        unjoined = unjoined_section(&c);
        for call in &c.ledger().calls {
            // The wire server names non-EC2 calls `Service.Operation`.
            let name = match call.action.split_once('.') {
                Some((service, op)) => format!("{} {op}", service.to_ascii_lowercase()),
                None => format!("ec2 {}", call.action),
            };
            if INJECTED_EC2_ERRORS.contains(&call.outcome.as_str()) {
                *fault_effects.entry(format!("{} {}", name, call.outcome)).or_default() += 1;
            }
            *api_calls.entry(name).or_default() += 1;
        }
        for (what, n) in [("sqs lost", c.sqs().lost), ("sqs duplicated", c.sqs().duplicated)] {
            if n > 0 {
                fault_effects.insert(what.into(), n);
            }
        }
        launches = c.ledger().records.len() as u64;
        let r = c.cost_report();
        let summary = judged.as_ref().map(|j| j.cost.clone()).unwrap_or_default();
        cost = CostSection {
            rate_per_hour: round(r.rate_usd_per_hour, 4),
            lower_bound_per_hour: round(summary.lower_bound_per_hour, 4),
            gap: round(summary.gap.unwrap_or(0.0), 4),
            settled: summary.quiescent,
            untaken_moves: summary.untaken.iter().map(|m| m.describe()).collect(),
            untaken_saving_per_hour: round(summary.untaken.iter().map(|m| m.saving_per_hour).sum(), 4),
            kept: crate::invariants::cost::describe_kept(&summary.kept),
            total: round(r.total_usd, 4),
        };
    }
    let p = observer.pending(end);
    let pending = PendingSection {
        pods: p.pods,
        p50_seconds: round(p.p50_seconds, 3),
        p99_seconds: round(p.p99_seconds, 3),
        max_seconds: round(p.max_seconds, 3),
    };
    let invariants = judged.map_or_else(InvariantsSection::default, |j| InvariantsSection {
        checked: j.checked,
        violations: j
            .violations
            .into_iter()
            .map(|v| ViolationReport {
                invariant: v.invariant,
                at: SimDuration(v.at),
                objects: v.objects,
                message: v.message,
                trace_position: v.trace_position,
            })
            .collect(),
    });
    Report {
        scenario: loaded.scenario.name.clone(),
        seed,
        simulated: plan.duration,
        reproduce: reproduce_command(&loaded.path, seed),
        trace_fingerprint: trace.fingerprint(),
        trace_entries: trace.len(),
        invariants,
        cost,
        pending,
        unjoined,
        launches,
        interruptions: observer.interruptions(),
        disruptions: observer.disruptions(),
        api_calls,
        faults: faults.started.clone(),
        fault_effects,
        controller_restarts: restarts,
        resource_version,
        objects,
        watch_events_observed: watch_events,
        actions: log.actions.load(Ordering::Relaxed),
        failures: log.failures.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        explanation,
    }
}

/// EC2 error codes only the fault knobs produce (throttling and 5xx).
const INJECTED_EC2_ERRORS: [&str; 3] = ["RequestLimitExceeded", "InternalError", "ServiceUnavailable"];

/// What the instances EKS refused to admit cost (see `dovetail_fakecloud::NodeAuth`).
fn unjoined_section(c: &dovetail_fakecloud::FakeCloud) -> UnjoinedSection {
    let mut out = UnjoinedSection::default();
    for (id, refusal) in c.node_auth().refusals() {
        out.instances += 1;
        out.never_joined += u64::from(refusal.joined_at.is_none());
        out.cost += c.cost_of_instance(id);
        if let Some(r) = c.ledger().records.get(id) {
            let until = refusal.joined_at.or(r.end).unwrap_or_else(|| c.now());
            out.max_seconds_without_node =
                out.max_seconds_without_node.max(until.saturating_sub(r.start).as_secs_f64());
        }
    }
    out.cost = round(out.cost, 4);
    out
}

/// The planned windows in which the controller is cut off, as (start, heal): partitions
/// between it (any replica, or the leader) and the cloud or the API server, and crashes that
/// leave no replica running. While one lasts the controller can neither receive the
/// interruption queue's messages nor delete what they name. `faults_until` heals open-ended
/// faults.
fn controller_cut_off(
    faults: &[crate::scenario::plan::PlannedFault],
    faults_until: Duration,
    replicas: usize,
) -> Vec<(Duration, Duration)> {
    use crate::scenario::drawn_fault::DrawnFault;
    let controller = |e: &str| e == "controller" || e == "leader";
    let remote = |e: &str| e == "aws" || e == "apiserver";
    faults
        .iter()
        .filter(|f| match &f.fault {
            DrawnFault::Partition { between: [a, b] } => (controller(a) && remote(b)) || (controller(b) && remote(a)),
            // Every replica down (a crash of `controller` takes them all; of the leader, all
            // there is when it runs alone): no replica can act until they restart.
            DrawnFault::ControllerCrash { target } => target == "controller" || replicas <= 1,
            DrawnFault::LeaderFailover => replicas <= 1,
            _ => false,
        })
        .map(|f| (f.at.0, f.until.map_or(faults_until, |u| u.0)))
        .collect()
}

#[cfg(test)]
mod cut_off_tests {
    use std::time::Duration;

    use super::controller_cut_off;
    use crate::scenario::drawn_fault::DrawnFault;
    use crate::scenario::plan::PlannedFault;
    use dovetail_world::SimDuration;

    fn crash(target: &str) -> PlannedFault {
        PlannedFault {
            entry: "faults[0]".into(),
            at: SimDuration(Duration::from_secs(71)),
            until: Some(SimDuration(Duration::from_secs(120))),
            fault: DrawnFault::ControllerCrash { target: target.into() },
        }
    }

    #[test]
    fn a_crash_cuts_the_controller_off_only_when_no_replica_is_left() {
        let until = Duration::from_secs(600);
        let window = vec![(Duration::from_secs(71), Duration::from_secs(120))];
        assert_eq!(controller_cut_off(&[crash("controller")], until, 2), window);
        assert_eq!(controller_cut_off(&[crash("leader")], until, 1), window);
        assert!(controller_cut_off(&[crash("leader")], until, 2).is_empty(), "the other replica takes over");
    }
}
