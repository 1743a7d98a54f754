//! The seed's draws: every random value of a scenario resolved into one concrete plan.
//!
//! The runner plays the plan, and `Loaded::expanded` prints it (TigerBeetle style), so what
//! a seed did is readable before the run starts. Each workload and each fault entry draws
//! from its own stream (`Stream::Workload(i)`, `Stream::Fault(i)`), so editing
//! one entry does not change what the others drew.

use std::time::Duration;

use rand::Rng;
use serde::Serialize;

use super::dist::{Cpu, Dist, Memory};
use super::drawn_fault::DrawnFault;
use super::faults::FaultSpec;
use super::workloads::{Replicas, Workload};
use super::{ControllerSpec, Scenario};
use dovetail_world::{SimDuration, SimRng, Stream};

/// Everything one seed drew.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Scenario name.
    pub scenario: String,
    /// Root seed.
    pub seed: u64,
    /// Simulated time.
    pub duration: SimDuration,
    /// EC2 region.
    pub region: String,
    /// Zones the cluster's subnets span.
    pub zones: Vec<String>,
    /// The controller as configured.
    pub controller: ControllerSpec,
    /// Phase boundaries.
    pub phases: PhasePlan,
    /// Per random fault entry: live in this seed or not, and the rate drawn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub swarm: Vec<SwarmDraw>,
    /// Per workload entry (same order as the file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadPlan>,
    /// Every fault occurrence, by start time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<PlannedFault>,
}

/// Phase boundaries: faults until `faultsUntil`, heal until `livenessFrom`, then liveness.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhasePlan {
    /// End of the fault phase: every fault still active heals here.
    pub faults_until: SimDuration,
    /// Start of the liveness window, in which the cluster must have converged.
    pub liveness_from: SimDuration,
}

/// What a seed drew for one random fault entry.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwarmDraw {
    /// `faults[i]`.
    pub entry: String,
    /// The fault kind.
    pub kind: String,
    /// Whether the kind is live in this seed.
    pub live: bool,
    /// Occurrences per hour drawn.
    pub per_hour: f64,
}

/// A workload's draws.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum WorkloadPlan {
    /// A Deployment's shape and replica changes.
    Deployment {
        /// Name.
        name: String,
        /// CPU request per pod.
        cpu: Cpu,
        /// Memory request per pod.
        memory: Memory,
        /// Replica count from each time on.
        replicas: Vec<ReplicaChange>,
    },
    /// Job arrivals.
    Jobs {
        /// Name prefix.
        name: String,
        /// Every Job.
        jobs: Vec<PlannedJob>,
    },
    /// A DaemonSet's shape.
    DaemonSet {
        /// Name.
        name: String,
        /// CPU request per pod.
        cpu: Cpu,
        /// Memory request per pod.
        memory: Memory,
    },
    /// Created at the start, nothing drawn (PDBs, PriorityClasses).
    Fixed {
        /// Name.
        name: String,
    },
}

/// From `at` on, `replicas`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReplicaChange {
    /// When.
    pub at: SimDuration,
    /// How many.
    pub replicas: u32,
}

/// One Job.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedJob {
    /// Arrival.
    pub at: SimDuration,
    /// Object name.
    pub name: String,
    /// Pods that must succeed.
    pub completions: u32,
    /// Pods at a time.
    pub parallelism: u32,
    /// Run time per pod.
    pub run_for: SimDuration,
    /// CPU request per pod.
    pub cpu: Cpu,
    /// Memory request per pod.
    pub memory: Memory,
}

/// One fault occurrence.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFault {
    /// `faults[i]`.
    pub entry: String,
    /// Start.
    pub at: SimDuration,
    /// Heals at (none for instantaneous faults and immediate restarts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<SimDuration>,
    /// What, with every parameter drawn.
    pub fault: DrawnFault,
}

/// Draws the plan of `scenario` for `seed`; `zones` are the zones the run uses.
pub fn draw(scenario: &Scenario, zones: &[String], seed: u64) -> Plan {
    let duration = scenario.duration;
    let phases = PhasePlan {
        faults_until: scenario.phases.faults_until.unwrap_or(duration),
        liveness_from: scenario.phases.liveness_from.unwrap_or(duration),
    };
    let workloads = scenario
        .workloads
        .iter()
        .enumerate()
        .map(|(i, w)| draw_workload(w, duration.0, &mut Stream::Workload(i).rng(seed)))
        .collect();
    let mut swarm = Vec::new();
    let mut faults = Vec::new();
    for (i, f) in scenario.faults.iter().enumerate() {
        let mut rng = Stream::Fault(i).rng(seed);
        let entry = format!("faults[{i}]");
        let kind = f.kind().unwrap_or("?");
        let replicas = match &scenario.controller {
            ControllerSpec::None => 0,
            ControllerSpec::Run(c) => c.replicas,
        };
        let starts: Vec<Duration> = match (f.at, &f.per_hour) {
            (Some(at), _) => vec![at.0],
            (None, Some(rate)) => {
                let live = rng.random_bool(f.live.unwrap_or(0.5));
                let per_hour = rate.draw(&mut rng).max(0.0);
                swarm.push(SwarmDraw { entry: entry.clone(), kind: kind.to_string(), live, per_hour });
                if live {
                    poisson(&mut rng, per_hour, f.from.map_or(Duration::ZERO, |d| d.0), phases.faults_until.0)
                } else {
                    Vec::new()
                }
            }
            (None, None) => Vec::new(),
        };
        for at in starts {
            let fault = DrawnFault::draw(f, zones, replicas, &mut rng);
            let until = lasting(f, kind, &mut rng).map(|d| SimDuration((at + d).min(phases.faults_until.0)));
            let until = until.or_else(|| {
                (!FaultSpec::instantaneous(kind) && kind != "controllerCrash").then_some(phases.faults_until)
            });
            faults.push(PlannedFault { entry: entry.clone(), at: SimDuration(at), until, fault });
        }
    }
    // Stable: equal times keep file order.
    faults.sort_by_key(|f| f.at);
    Plan {
        scenario: scenario.name.clone(),
        seed,
        duration,
        region: scenario.region.clone(),
        zones: zones.to_vec(),
        controller: scenario.controller.clone(),
        phases,
        swarm,
        workloads,
        faults,
    }
}

/// How long one occurrence lasts, drawn; `leaderFailover` defaults to 30 s.
fn lasting(f: &FaultSpec, kind: &str, rng: &mut SimRng) -> Option<Duration> {
    match &f.lasts {
        Some(d) => Some(d.draw(rng).0),
        None if kind == "leaderFailover" => Some(Duration::from_secs(30)),
        None => None,
    }
}

/// Arrival times of a Poisson process with `per_hour` events per hour in `[from, until)`,
/// to whole milliseconds.
pub fn poisson(rng: &mut SimRng, per_hour: f64, from: Duration, until: Duration) -> Vec<Duration> {
    let mut out = Vec::new();
    if per_hour <= 0.0 {
        return out;
    }
    let mean = 3600.0 / per_hour;
    let mut t = from.as_secs_f64();
    loop {
        let u: f64 = rng.random();
        t += -(1.0 - u).ln() * mean;
        let at = Duration::from_millis((t * 1000.0).round() as u64);
        if at >= until {
            return out;
        }
        out.push(at);
    }
}

fn draw_workload(w: &Workload, duration: Duration, rng: &mut SimRng) -> WorkloadPlan {
    match w {
        Workload::Deployment(d) => {
            let cpu = d.pod.cpu.draw(rng);
            let memory = d.pod.memory.draw(rng);
            let replicas = replica_schedule(&d.replicas, &d.spikes, duration, rng);
            WorkloadPlan::Deployment { name: d.name.clone(), cpu, memory, replicas }
        }
        Workload::Job(j) => {
            let arrivals = match (&j.per_hour, j.at) {
                (Some(rate), _) => {
                    let per_hour = rate.draw(rng);
                    let from = j.from.map_or(Duration::ZERO, |d| d.0);
                    let until = j.until.map_or(duration, |d| d.0.min(duration));
                    poisson(rng, per_hour, from, until)
                }
                (None, Some(at)) => vec![at.0; j.count.unwrap_or(1) as usize],
                (None, None) => Vec::new(),
            };
            let jobs = arrivals
                .into_iter()
                .enumerate()
                .map(|(k, at)| {
                    let completions = j.completions.as_ref().map_or(1, |d| d.draw(rng)).max(1);
                    let parallelism = j.parallelism.as_ref().map_or(completions, |d| d.draw(rng)).max(1);
                    PlannedJob {
                        at: SimDuration(at),
                        name: format!("{}-{}", j.name, k + 1),
                        completions,
                        parallelism,
                        run_for: j.run_for.draw(rng),
                        cpu: j.pod.cpu.draw(rng),
                        memory: j.pod.memory.draw(rng),
                    }
                })
                .collect();
            WorkloadPlan::Jobs { name: j.name.clone(), jobs }
        }
        Workload::DaemonSet(d) => {
            WorkloadPlan::DaemonSet { name: d.name.clone(), cpu: d.pod.cpu.draw(rng), memory: d.pod.memory.draw(rng) }
        }
        Workload::Pdb(_) | Workload::PriorityClass(_) => WorkloadPlan::Fixed { name: w.name().to_string() },
    }
}

/// The replica count over time: the base schedule plus spikes, as change points.
fn replica_schedule(
    replicas: &Replicas,
    spikes: &[super::workloads::Spike],
    duration: Duration,
    rng: &mut SimRng,
) -> Vec<ReplicaChange> {
    let peak = match replicas {
        Replicas::Diurnal(d) => d.peak_at.as_ref().map_or(d.period.0 / 2, |p| p.draw(rng).0),
        _ => Duration::ZERO,
    };
    // Spike intervals.
    let mut bumps: Vec<(Duration, Duration, u32)> = Vec::new();
    for s in spikes {
        let starts = match (s.at, &s.per_hour) {
            (Some(at), _) => vec![at.0],
            (None, Some(rate)) => {
                let r = rate.draw(rng);
                poisson(rng, r, Duration::ZERO, duration)
            }
            (None, None) => Vec::new(),
        };
        for at in starts {
            let lasts = s.lasts.draw(rng).0;
            bumps.push((at, at + lasts, s.add.draw(rng)));
        }
    }
    let base = |t: Duration| -> u32 {
        match replicas {
            Replicas::Constant(n) => *n,
            Replicas::Steps(steps) => steps.iter().take_while(|s| s.at.0 <= t).last().map_or(0, |s| s.replicas),
            Replicas::Diurnal(d) => {
                let phase = (t.as_secs_f64() - peak.as_secs_f64()) / d.period.0.as_secs_f64();
                let level = (1.0 + (2.0 * std::f64::consts::PI * phase).cos()) / 2.0;
                d.min + (f64::from(d.max - d.min) * level).round() as u32
            }
        }
    };
    let mut times: Vec<Duration> = vec![Duration::ZERO];
    match replicas {
        Replicas::Constant(_) => {}
        Replicas::Steps(steps) => times.extend(steps.iter().map(|s| s.at.0)),
        Replicas::Diurnal(d) => {
            let mut t = d.every.0;
            while t < duration {
                times.push(t);
                t += d.every.0;
            }
        }
    }
    for (a, b, _) in &bumps {
        times.push(*a);
        times.push(*b);
    }
    times.retain(|t| *t < duration);
    times.sort();
    times.dedup();
    let mut out: Vec<ReplicaChange> = Vec::new();
    for t in times {
        let extra: u32 = bumps.iter().filter(|(a, b, _)| *a <= t && t < *b).map(|(_, _, n)| n).sum();
        let n = base(t) + extra;
        if out.last().is_none_or(|l| l.replicas != n) {
            out.push(ReplicaChange { at: SimDuration(t), replicas: n });
        }
    }
    out
}

impl<T: super::dist::Sample> Dist<T> {
    /// Draws if set, else `default`.
    pub fn draw_or(d: Option<&Dist<T>>, default: T, rng: &mut SimRng) -> T {
        d.map_or(default, |d| d.draw(rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dovetail_world::derive_rng;

    #[test]
    fn poisson_arrivals_have_the_right_rate() {
        let mut rng = derive_rng(3, "t");
        let n = poisson(&mut rng, 60.0, Duration::ZERO, Duration::from_secs(36_000)).len();
        assert!((500..700).contains(&n), "{n} arrivals in 10 h at 60/h");
    }

    #[test]
    fn diurnal_curve_peaks_where_asked() {
        let y = "{diurnal: {min: 2, max: 10, period: 1h, peakAt: 30m, every: 15m}}";
        let r: Replicas = serde_saphyr::from_str(y).unwrap();
        let s = replica_schedule(&r, &[], Duration::from_secs(3600), &mut derive_rng(1, "t"));
        let at = |m: u64| s.iter().take_while(|c| c.at.0 <= Duration::from_secs(m * 60)).last().unwrap().replicas;
        assert_eq!((at(0), at(15), at(30), at(45)), (2, 6, 10, 6));
    }
}
