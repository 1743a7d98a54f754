//! The generated workloads: Deployments (replica steps and spikes, PDBs, zone and hostname
//! spread, pod (anti-)affinity, do-not-disrupt, priority classes, pinned NodePools),
//! DaemonSets and Jobs (a burst or Poisson arrivals).
//!
//! Every pod is hostable by at least one NodePool: a pod pins a pool only through
//! `karpenter.sh/nodepool`, node affinity is only ever preferred, and shapes fit the
//! smallest instance of every generated category. Required pod anti-affinity is per
//! hostname, which Karpenter satisfies with one node per replica.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::draw::{Dice, secs};
use crate::scenario::dist::{Cpu, Dist, Memory};
use crate::scenario::workloads::{
    DaemonSetSpec, DeploymentSpec, JobSpec, PdbSpec, PodTemplate, PriorityClassSpec, ReplicaStep, Replicas, Spike,
    Workload,
};
use dovetail_world::SimDuration;

/// The workloads and the most CPU (millicores) they can request at once.
pub struct Workloads {
    /// In install order: PriorityClasses first, PDBs after their Deployments.
    pub entries: Vec<Workload>,
    /// An upper bound on concurrent CPU requests.
    pub cpu_demand: u64,
}

const CPUS: &[&i64] = &[&100, &250, &500, &1000, &2000];
const MEMORIES: &[&i64] = &[&256, &512, &1024, &2048, &4096];
const PRIORITY_CLASS: &str = "high";

/// Draws the workloads of a story lasting `duration`, on NodePools named `pools`.
pub fn draw(dice: &mut Dice, duration: SimDuration, pools: &[String]) -> Workloads {
    let mut entries = Vec::new();
    let mut cpu_demand = 0u64;
    let priority = dice.chance(0.3);
    if priority {
        entries.push(Workload::PriorityClass(PriorityClassSpec { name: PRIORITY_CLASS.into(), value: 1000 }));
    }
    let minutes = duration.0.as_secs() / 60;
    for i in 0..dice.int(1, 3) {
        let name = format!("app-{i}");
        let (replicas, most) = replicas(dice, minutes);
        let mut spikes = Vec::new();
        let mut spike_most = 0;
        if dice.chance(0.2) {
            let add = dice.int(1, 4);
            spike_most = add;
            spikes.push(Spike {
                at: Some(secs(60 * u64::from(dice.int(1, (minutes as u32 / 2).max(1))))),
                per_hour: None,
                lasts: Dist::Fixed(secs(60 * u64::from(dice.int(1, 3)))),
                add: Dist::Fixed(add),
            });
        }
        let pod = pod(dice, &name, priority, pools, true);
        cpu_demand += u64::from(most + spike_most) * pod_cpu_max(&pod);
        entries.push(Workload::Deployment(DeploymentSpec {
            name: name.clone(),
            namespace: "default".into(),
            replicas,
            spikes,
            pod,
        }));
        if dice.chance(0.5) {
            let (max_unavailable, min_available) =
                if dice.chance(0.5) { (Some(json!(1)), None) } else { (None, Some(json!("50%"))) };
            entries.push(Workload::Pdb(PdbSpec {
                name: name.clone(),
                namespace: "default".into(),
                workload: Some(name),
                match_labels: None,
                max_unavailable,
                min_available,
            }));
        }
    }
    if dice.chance(0.3) {
        let pod = PodTemplate {
            cpu: Dist::Fixed(Cpu(i64::from(dice.int(5, 10)) * 10)),
            memory: Dist::Fixed(Memory((i64::from(dice.int(1, 2)) * 64) << 20)),
            ..plain_pod()
        };
        entries.push(Workload::DaemonSet(DaemonSetSpec { name: "logs".into(), namespace: "default".into(), pod }));
    }
    if dice.chance(0.5) {
        let (job, concurrent) = job(dice, minutes, priority, pools);
        cpu_demand += concurrent * pod_cpu_max(&job.pod);
        entries.push(Workload::Job(job));
    }
    Workloads { entries, cpu_demand }
}

/// A replica schedule and the most replicas it asks for.
fn replicas(dice: &mut Dice, minutes: u64) -> (Replicas, u32) {
    let first = dice.int(1, 8);
    if dice.chance(0.5) {
        return (Replicas::Constant(first), first);
    }
    let second = dice.int(0, 8);
    let at = secs(60 * u64::from(dice.int(1, (minutes as u32 / 2).max(1))));
    let steps = vec![ReplicaStep { at: secs(0), replicas: first }, ReplicaStep { at, replicas: second }];
    (Replicas::Steps(steps), first.max(second))
}

fn plain_pod() -> PodTemplate {
    PodTemplate {
        cpu: Dist::Fixed(Cpu(100)),
        memory: Dist::Fixed(Memory(128 << 20)),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        do_not_disrupt: false,
        priority_class_name: None,
        node_selector: BTreeMap::new(),
        tolerations: Vec::new(),
        affinity: None,
        topology_spread_constraints: Vec::new(),
        termination_grace_period_seconds: None,
        host_port: None,
        gpu: None,
    }
}

fn pod(dice: &mut Dice, app: &str, priority: bool, pools: &[String], long_running: bool) -> PodTemplate {
    let cpu = if dice.chance(0.3) {
        Dist::Choice(dice.subset(CPUS.len(), 2).into_iter().map(|i| Cpu(*CPUS[i])).collect())
    } else {
        Dist::Fixed(Cpu(*dice.pick(CPUS)))
    };
    let memory = Dist::Fixed(Memory(*dice.pick(MEMORIES) << 20));
    let mut pod = PodTemplate { cpu, memory, ..plain_pod() };
    pod.do_not_disrupt = dice.chance(0.2);
    if priority && dice.chance(0.5) {
        pod.priority_class_name = Some(PRIORITY_CLASS.into());
    }
    if pools.len() > 1 && dice.chance(0.3) {
        let pool = dice.int(0, pools.len() as u32 - 1) as usize;
        pod.node_selector.insert("karpenter.sh/nodepool".into(), pools[pool].clone());
    }
    if long_running {
        if dice.chance(0.3) {
            let when = dice.pick(&["DoNotSchedule", "ScheduleAnyway"]);
            pod.topology_spread_constraints
                .push(json!({"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": when}));
        }
        if dice.chance(0.15) {
            pod.topology_spread_constraints.push(
                json!({"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}),
            );
        }
        pod.affinity = affinity(dice, app);
    }
    if dice.chance(0.2) {
        pod.termination_grace_period_seconds = Some(dice.int(0, 60));
    }
    pod
}

fn affinity(dice: &mut Dice, app: &str) -> Option<Value> {
    let selector = json!({"matchLabels": {"app": app}});
    match dice.int(0, 5) {
        0 => Some(json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        ]}})),
        1 => Some(json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {"labelSelector": selector, "topologyKey": "topology.kubernetes.io/zone"}}
        ]}})),
        2 => Some(json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
            ]}}
        ]}})),
        _ => None,
    }
}

/// A Job entry and how many of its pods can run at once (an upper bound).
fn job(dice: &mut Dice, minutes: u64, priority: bool, pools: &[String]) -> (JobSpec, u64) {
    let pod = pod(dice, "batch", priority, pools, false);
    let run_for = if dice.chance(0.5) {
        Dist::Fixed(secs(60 * u64::from(dice.int(1, 3))))
    } else {
        Dist::Uniform(secs(30), secs(60 * u64::from(dice.int(1, 3))))
    };
    let parallelism = dice.int(1, 3);
    let mut spec = JobSpec {
        name: "batch".into(),
        namespace: "default".into(),
        per_hour: None,
        from: None,
        until: None,
        at: None,
        count: None,
        run_for,
        completions: Some(Dist::Fixed(parallelism)),
        parallelism: Some(Dist::Fixed(parallelism)),
        pod,
    };
    let concurrent = if dice.chance(0.5) {
        let count = dice.int(1, 12);
        spec.at = Some(secs(60 * u64::from(dice.int(1, (minutes as u32 / 2).max(1)))));
        spec.count = Some(count);
        count
    } else {
        let rate = f64::from(dice.int(10, 60));
        spec.per_hour = Some(Dist::Fixed(rate));
        spec.until = Some(secs(60 * (minutes / 2).max(1)));
        // Arrivals over at most 3 minutes of running time: a generous bound.
        (rate / 20.0).ceil() as u32 + 2
    };
    (spec, u64::from(concurrent * parallelism))
}

/// The largest CPU request a pod template can draw, in millicores.
fn pod_cpu_max(pod: &PodTemplate) -> u64 {
    u64::try_from(pod.cpu.max().0).unwrap_or(0)
}
