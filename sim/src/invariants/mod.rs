//! Invariants checked continuously while a scenario runs, from outside the controller.
//!
//! The [`Checker`] judges the store and the fake cloud as the run's one observation pass
//! reads them every simulated second (`crate::run::observe` hands it an [`Observation`]
//! per tick) and sees every mutating API request through the
//! server's audit hook ([`disruptions::Recorder`]), so it knows who evicted which pod and
//! what the cluster looked like just before. Nothing here reuses the controller's
//! scheduling or budget code: the helpers the invariants judge with are the independent
//! oracles of [`crate::oracle`]. Each invariant is one module:
//!
//! | name | module |
//! |---|---|
//! | `pdb` | [`pdb`] |
//! | `doNotDisrupt` | [`do_not_disrupt`] |
//! | `nodepoolLimits` | [`nodepool_limits`] |
//! | `disruptionBudgets` | [`disruption_budgets`] |
//! | `doubleLaunch` | [`double_launch`] |
//! | `leakedInstance` | [`leaked_instance`] |
//! | `stuckNodeClaim` | [`stuck_node_claim`] |
//! | `strandedPods` | [`stranded_pods`] |
//! | `runawayScaleUp` | [`runaway_scale_up`] |
//! | `overProvisioning` | [`over_provisioning`] |
//! | `churn` | [`churn`] |
//! | `convergence` | [`convergence`] |
//! | `launchConformance` | [`launch_conformance`] |
//! | `driftConvergence` | [`drift_convergence`] |
//! | `untakenMoves` | [`untaken_moves`] |
//! | `interruptionHandled` | [`interruption_handled`] |
//! | `consolidationLegality` | [`consolidation_legality`] |
//! | `expiryTiming` | [`expiry_timing`] |
//! | `drainConformance` | [`drain_conformance`] |
//! | `cloudReadRate` | [`cloud_read_rate`] |
//! | `noOpWrites` | [`no_op_writes`] |
//! | `consolidatableTiming` | [`consolidatable_timing`] |
//! | `initializationConformance` | [`initialization_conformance`] |
//! | `metricsConformance` | [`metrics_conformance`] |
//!
//! The cost section ([`cost`]: rate, LP bound, gap) is measured at the end, not judged.

pub mod churn;
pub mod cloud_read_rate;
pub mod consolidatable_timing;
pub mod consolidation_legality;
pub mod controller_writes;
pub mod convergence;
pub mod cost;
pub mod disruption_budgets;
pub mod disruptions;
pub mod do_not_disrupt;
pub mod double_launch;
pub mod drain_conformance;
pub mod drift_convergence;
pub mod expiry_timing;
pub mod initialization_conformance;
pub mod interruption_handled;
pub mod launch_conformance;
pub mod launch_reserved;
pub mod leaked_instance;
pub mod metrics_conformance;
pub mod no_op_writes;
pub mod nodepool_limits;
pub mod over_provisioning;
pub mod pdb;
pub mod pod_losses;
pub mod runaway_scale_up;
pub mod stranded_pods;
pub mod stuck_node_claim;
pub mod untaken_moves;

/// The oracles' old paths, still used by `tests/provisioning.rs` and `tests/disruption.rs`;
/// new code names [`crate::oracle`].
pub use crate::oracle::{cost_bound, resources};

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::FakeCloud;
use serde::{Serialize, Serializer};

pub use cost::CostSummary;
use disruptions::{Recorded, Recorder};

use crate::apiserver::ApiServer;
use crate::oracle::moves::{MoveInputs, Settings, assess};
use crate::oracle::view::{PodView, View};
use crate::scenario::invariants::InvariantConfig;

/// Where a run is: faults may be active, they have healed, or the cluster must converge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Faults are live; liveness invariants wait.
    Faults,
    /// Faults healed; liveness clocks run from here.
    Heal,
    /// The final window in which the cluster must converge.
    Liveness,
}

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// The invariant's name (e.g. `pdb`).
    pub invariant: String,
    /// Simulated time since the run started.
    #[serde(serialize_with = "serialize_duration")]
    pub at: Duration,
    /// The objects involved, as `Kind namespace/name` or `Kind name`.
    pub objects: Vec<String>,
    /// What happened.
    pub message: String,
    /// The trace position at (or just after) the event.
    pub trace_position: u64,
}

impl Violation {
    /// The one command line that replays the run.
    pub fn reproduce_line(&self, scenario_path: impl AsRef<std::path::Path>, seed: u64) -> String {
        crate::world::reproduce_command(scenario_path.as_ref(), seed)
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}] at {} (trace #{}): {} [{}]",
            self.invariant,
            format_duration(self.at),
            self.trace_position,
            self.message,
            self.objects.join(", ")
        )
    }
}

/// `12m3s`, `1h0m5s`, `0s`, `1.5s` style simulated time.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let ms = d.subsec_millis();
    let sec = if ms > 0 { format!("{s}.{ms:03}s") } else { format!("{s}s") };
    match (h, m) {
        (0, 0) => sec,
        (0, m) => format!("{m}m{sec}"),
        (h, m) => format!("{h}h{m}m{sec}"),
    }
}

fn serialize_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_duration(*d))
}

/// What [`Checker::finish`] hands the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvariantsReport {
    /// Names of the invariants checked.
    pub checked: Vec<String>,
    /// Every violation, in the order found.
    pub violations: Vec<Violation>,
    /// Cost rate against the lower bound, at the end.
    pub cost: CostSummary,
}

/// One reading of the world, as the run's observation pass hands it to the checker.
pub struct Observation<'a> {
    /// Objects and instances now.
    pub view: &'a View,
    /// Pods now.
    pub pods: &'a [PodView],
    /// Whether the pods changed since the previous reading.
    pub pods_changed: bool,
    /// The cloud, locked.
    pub cloud: &'a FakeCloud,
    /// What the moves oracle reads from the store beyond the view.
    pub inputs: &'a MoveInputs,
}

/// What every invariant sees at a tick.
pub struct Ctx<'a> {
    /// Objects and instances now.
    pub view: &'a View,
    /// Pods now.
    pub pods: &'a [PodView],
    /// The cloud, locked.
    pub cloud: &'a FakeCloud,
    /// Requests recorded since the last tick.
    pub recorded: &'a Recorded,
    /// Thresholds.
    pub config: &'a InvariantConfig,
    /// Current phase.
    pub phase: Phase,
    /// When faults last healed (`None` while faults are live).
    pub healed_at: Option<Duration>,
    /// Time of the previous tick.
    pub previous: Duration,
    /// The drifted NodeClaims overdue and unblocked now, from the checker's one drift clock
    /// (empty when `driftConvergence` is off).
    pub drift_overdue: &'a [drift_convergence::Overdue],
    /// What only the end of the run knows (`None` at ticks).
    pub end: Option<&'a EndOfRun>,
    /// The watch-delivery delay the API server's faults impose now (zero without the fault).
    pub watch_delay: Duration,
    /// Whether the controller's `SpotToSpotConsolidation` gate is on at some time of the run.
    pub spot_to_spot_possible: bool,
    /// Whether the controller's `NodeRepair` gate is on at some time of the run.
    pub node_repair_possible: bool,
    /// Whether the controller's `ReservedCapacity` gate is on for the whole run.
    pub reserved_capacity_always: bool,
    /// When the controller could not reach the cloud or the API server: the planned
    /// partitions between them, (start, heal).
    pub controller_cut_off: &'a [(Duration, Duration)],
}

/// What [`Invariant::finish`] sees beyond a tick's [`Ctx`].
pub struct EndOfRun {
    /// The consolidation moves open at the end, each with when it opened ([`untaken_moves`]).
    pub open_moves: Vec<(crate::oracle::moves::Move, Duration)>,
    /// How long a move may stay open (validation + `untakenMoves.slack`).
    pub moves_allowance: Duration,
    /// Every controller start's `/metrics` text at the end: (host, OpenMetrics text).
    pub metrics: Vec<(String, String)>,
}

/// One invariant: sees each tick, may add violations; may judge once more at the end.
pub trait Invariant {
    /// The name in reports.
    fn name(&self) -> &'static str;
    /// Checks the state at a tick.
    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>);
    /// Checks once more at the end of the run.
    fn finish(&mut self, _ctx: &Ctx<'_>, _out: &mut Vec<Violation>) {}
}

/// The continuous checker a run drives: `new`, then `set_phase` / `tick` as simulated
/// time passes, then `finish`.
pub struct Checker {
    config: InvariantConfig,
    recorder: Arc<Recorder>,
    invariants: Vec<Box<dyn Invariant>>,
    violations: Vec<Violation>,
    phase: Phase,
    healed_at: Option<Duration>,
    last_tick: Duration,
    cost: cost::Cost,
    spot_to_spot: bool,
    /// The gate is on at some time of the run (initial settings or an upgrade).
    spot_to_spot_possible: bool,
    /// `NodeRepair` is on at some time of the run (initial settings or an upgrade).
    node_repair_possible: bool,
    /// `ReservedCapacity` is on at the start and no upgrade turns it off.
    reserved_capacity_always: bool,
    controller_cut_off: Vec<(Duration, Duration)>,
    demand: cost::DemandClock,
    moves: untaken_moves::UntakenMoves,
    /// The drifted claims' clocks, advanced once per tick for every invariant that reads them.
    drift: drift_convergence::DriftClock,
    /// The server's faults, to read the watch delay in force.
    api_faults: Arc<std::sync::Mutex<crate::apiserver::ApiFaults>>,
    /// Scrapes the controller's `/metrics` (every start of every replica) at the end.
    metrics_source: Option<MetricsSource>,
}

/// Scrapes the controller's metrics: (host, OpenMetrics text) per controller start.
pub type MetricsSource = Box<dyn Fn() -> Vec<(String, String)>>;

impl Checker {
    /// A checker of the world around `server`; installs its audit observer on the server.
    /// The run starts healed (phase `Heal` at time zero) until told otherwise.
    pub fn new(config: &InvariantConfig, server: &ApiServer) -> Self {
        let recorder = Arc::new(Recorder::new(config));
        server.audit.lock().unwrap_or_else(|e| e.into_inner()).observe(recorder.clone());
        let mut invariants: Vec<Box<dyn Invariant>> = Vec::new();
        let c = config;
        if c.pdb.enabled {
            invariants.push(Box::new(pdb::PdbRespected::default()));
        }
        if c.do_not_disrupt.enabled {
            invariants.push(Box::new(do_not_disrupt::DoNotDisruptRespected::default()));
        }
        if c.nodepool_limits.enabled {
            invariants.push(Box::new(nodepool_limits::NodePoolLimits::default()));
        }
        if c.disruption_budgets.enabled {
            invariants.push(Box::new(disruption_budgets::DisruptionBudgets::default()));
        }
        if c.double_launch.enabled {
            invariants.push(Box::new(double_launch::DoubleLaunch::default()));
        }
        if c.leaked_instance.enabled {
            invariants.push(Box::new(leaked_instance::LeakedInstance::default()));
        }
        if c.stuck_node_claim.enabled {
            invariants.push(Box::new(stuck_node_claim::StuckNodeClaim::default()));
        }
        if c.stranded_pods.enabled {
            invariants.push(Box::new(stranded_pods::StrandedPods::default()));
        }
        if c.runaway_scale_up.enabled {
            invariants.push(Box::new(runaway_scale_up::RunawayScaleUp::default()));
        }
        if c.over_provisioning.enabled {
            invariants.push(Box::new(over_provisioning::OverProvisioning::default()));
        }
        if c.churn.enabled {
            invariants.push(Box::new(churn::ChurnBounded::default()));
        }
        if c.convergence.enabled {
            invariants.push(Box::new(convergence::Convergence::default()));
        }
        if c.launch_conformance.enabled {
            invariants.push(Box::new(launch_conformance::LaunchConformance::new(server)));
        }
        if c.drift_convergence.enabled {
            invariants.push(Box::new(drift_convergence::DriftConvergence::default()));
        }
        if c.consolidation_legality.enabled {
            invariants.push(Box::new(consolidation_legality::ConsolidationLegality::default()));
        }
        if c.expiry_timing.enabled {
            invariants.push(Box::new(expiry_timing::ExpiryTiming::default()));
        }
        if c.interruption_handled.enabled {
            invariants.push(Box::new(interruption_handled::InterruptionHandled::default()));
        }
        if c.drain_conformance.enabled {
            invariants.push(Box::new(drain_conformance::DrainConformance::new(c, server)));
        }
        if c.cloud_read_rate.enabled {
            invariants.push(Box::new(cloud_read_rate::CloudReadRate::default()));
        }
        if c.no_op_writes.enabled {
            invariants.push(Box::new(no_op_writes::NoOpWrites::new(c, server)));
        }
        if c.consolidatable_timing.enabled {
            invariants.push(Box::new(consolidatable_timing::ConsolidatableTiming::new(server)));
        }
        if c.metrics_conformance.enabled {
            invariants.push(Box::new(metrics_conformance::MetricsConformance));
        }
        if c.initialization_conformance.enabled {
            invariants.push(Box::new(initialization_conformance::InitializationConformance::new(c, server)));
        }
        Self {
            config: config.clone(),
            recorder,
            invariants,
            violations: Vec::new(),
            phase: Phase::Heal,
            healed_at: Some(Duration::ZERO),
            last_tick: Duration::ZERO,
            cost: cost::Cost::new(config.cost.clone()),
            spot_to_spot: false,
            spot_to_spot_possible: false,
            node_repair_possible: false,
            reserved_capacity_always: false,
            controller_cut_off: Vec::new(),
            demand: cost::DemandClock::default(),
            moves: untaken_moves::UntakenMoves::new(config.untaken_moves.clone()),
            drift: drift_convergence::DriftClock::default(),
            api_faults: server.faults.clone(),
            metrics_source: None,
        }
    }

    /// Tells the checker whether the controller runs with the `SpotToSpotConsolidation`
    /// feature gate: with it off, Karpenter may only delete a spot node, never replace it
    /// (see [`crate::oracle::moves`]).
    pub fn set_spot_to_spot_consolidation(&mut self, on: bool) {
        self.spot_to_spot = on;
    }

    /// Tells the checker whether the `SpotToSpotConsolidation` gate is on at any time of the
    /// run (consolidationLegality judges a spot-to-spot replace only when it never is).
    pub fn set_spot_to_spot_possible(&mut self, on: bool) {
        self.spot_to_spot_possible = on;
    }

    /// Tells the checker whether the `NodeRepair` gate is on at any time of the run (only
    /// then is a NotReady Node's late delete a repair that budgets do not govern).
    pub fn set_node_repair_possible(&mut self, on: bool) {
        self.node_repair_possible = on;
    }

    /// Whether `ReservedCapacity` is on for the whole run (launchConformance holds on-demand
    /// launches against free reservations only then).
    pub fn set_reserved_capacity_always(&mut self, on: bool) {
        self.reserved_capacity_always = on;
    }

    /// The windows in which the controller is partitioned from the cloud or the API server.
    pub fn set_controller_cut_off(&mut self, windows: Vec<(Duration, Duration)>) {
        self.controller_cut_off = windows;
    }

    /// Enters `phase` at `now`. Leaving `Faults` starts the liveness clocks.
    pub fn set_phase(&mut self, phase: Phase, now: Duration) {
        match phase {
            Phase::Faults => self.healed_at = None,
            Phase::Heal | Phase::Liveness => {
                if self.healed_at.is_none() {
                    self.healed_at = Some(now);
                }
            }
        }
        self.phase = phase;
    }

    /// Checks the world as `seen` (about every simulated second).
    pub fn tick(&mut self, seen: &Observation<'_>) {
        let recorded = self.recorder.drain();
        if seen.pods_changed {
            self.demand.observe(seen.pods, seen.view.now);
        }
        let drift_overdue = self.drift_overdue(seen);
        let ctx = Ctx {
            view: seen.view,
            pods: seen.pods,
            cloud: seen.cloud,
            recorded: &recorded,
            config: &self.config,
            phase: self.phase,
            healed_at: self.healed_at,
            previous: self.last_tick,
            drift_overdue: &drift_overdue,
            end: None,
            watch_delay: self.api_faults.lock().unwrap_or_else(|e| e.into_inner()).watch_delay,
            spot_to_spot_possible: self.spot_to_spot_possible,
            node_repair_possible: self.node_repair_possible,
            reserved_capacity_always: self.reserved_capacity_always,
            controller_cut_off: &self.controller_cut_off,
        };
        for inv in &mut self.invariants {
            inv.tick(&ctx, &mut self.violations);
        }
        let mut untaken = Vec::new();
        self.moves.tick(seen, seen.inputs, self.spot_to_spot, self.phase, self.healed_at, &mut untaken);
        if self.config.untaken_moves.enabled {
            self.violations.extend(untaken);
        }
        self.last_tick = seen.view.now;
    }

    /// Advances the drift clock to `seen` (when `driftConvergence` is on).
    fn drift_overdue(&mut self, seen: &Observation<'_>) -> Vec<drift_convergence::Overdue> {
        if !self.config.drift_convergence.enabled {
            return Vec::new();
        }
        self.drift.overdue(seen.view, seen.pods, &self.config, self.healed_at)
    }

    /// Where `metricsConformance` reads the controller's metrics at the end of the run.
    pub fn set_metrics_source(&mut self, source: MetricsSource) {
        self.metrics_source = Some(source);
    }

    /// Violations found so far.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Names of the invariants this checker runs.
    pub fn checked(&self) -> Vec<String> {
        let mut names: Vec<String> = self.invariants.iter().map(|i| i.name().to_string()).collect();
        if self.config.untaken_moves.enabled {
            names.push(untaken_moves::NAME.into());
        }
        names
    }

    /// Final checks (churn) over the world as `seen` at the end (ticked already), the cost
    /// measurement with the moves still open, and the report.
    pub fn finish(mut self, seen: &Observation<'_>) -> InvariantsReport {
        let recorded = Recorded::default();
        let end = EndOfRun {
            open_moves: self.moves.open_at_end(seen, self.spot_to_spot, self.phase, self.healed_at),
            moves_allowance: self.moves.allowance(),
            metrics: self.metrics_source.as_ref().map(|scrape| scrape()).unwrap_or_default(),
        };
        let drift_overdue = self.drift_overdue(seen);
        let ctx = Ctx {
            view: seen.view,
            pods: seen.pods,
            cloud: seen.cloud,
            recorded: &recorded,
            config: &self.config,
            phase: self.phase,
            healed_at: self.healed_at,
            previous: self.last_tick,
            drift_overdue: &drift_overdue,
            end: Some(&end),
            watch_delay: self.api_faults.lock().unwrap_or_else(|e| e.into_inner()).watch_delay,
            spot_to_spot_possible: self.spot_to_spot_possible,
            node_repair_possible: self.node_repair_possible,
            reserved_capacity_always: self.reserved_capacity_always,
            controller_cut_off: &self.controller_cut_off,
        };
        for inv in &mut self.invariants {
            inv.finish(&ctx, &mut self.violations);
        }
        let summary = if self.config.cost.enabled {
            let settings = Settings {
                inputs: seen.inputs,
                clock: self.moves.clock(),
                spot_to_spot: self.spot_to_spot,
                offerings: self.moves.offerings(),
                discovered: self.moves.discovered(),
            };
            let moves = assess(seen.view, seen.pods, seen.cloud, &settings);
            self.cost.measure(&ctx, &seen.inputs.overhead, &moves, self.demand.since())
        } else {
            CostSummary::default()
        };
        let checked = self.checked();
        // Deterministic order: by time, then by trace position and name.
        self.violations
            .sort_by(|a, b| (a.at, a.trace_position, &a.invariant).cmp(&(b.at, b.trace_position, &b.invariant)));
        let mut seen = BTreeSet::new();
        self.violations.retain(|v| seen.insert((v.invariant.clone(), v.objects.clone(), v.message.clone())));
        InvariantsReport { checked, violations: self.violations, cost: summary }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_like_go() {
        assert_eq!(format_duration(Duration::from_secs(723)), "12m3s");
        assert_eq!(format_duration(Duration::from_secs(3605)), "1h0m5s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.500s");
        let v = Violation {
            invariant: "pdb".into(),
            at: Duration::from_secs(61),
            objects: vec!["Pod default/web-1".into()],
            message: "m".into(),
            trace_position: 7,
        };
        assert_eq!(v.reproduce_line("scenarios/x.yaml", 3), "dovetail run scenarios/x.yaml --seed 3");
        let json = serde_json::to_value(&v).expect("serializes");
        assert_eq!(json["at"], "1m1s");
        assert_eq!(json["tracePosition"], 7);
    }
}
