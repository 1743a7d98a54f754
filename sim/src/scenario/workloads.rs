//! `workloads:` — what runs on the cluster: Deployments with replica schedules, Poisson Job
//! arrivals, DaemonSets, PodDisruptionBudgets and PriorityClasses, with pod shapes as
//! distributions.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::dist::{Cpu, Dist, Memory};
use super::error::FieldError;
use dovetail_world::SimDuration;

/// One workload entry: a map with exactly one key naming its kind.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Workload {
    /// A Deployment whose replica count follows a schedule.
    Deployment(DeploymentSpec),
    /// Jobs arriving as a Poisson process (or a burst at one time).
    Job(JobSpec),
    /// A DaemonSet (one pod per node; counts as overhead for packing).
    DaemonSet(DaemonSetSpec),
    /// A PodDisruptionBudget.
    Pdb(PdbSpec),
    /// A PriorityClass pods can name.
    PriorityClass(PriorityClassSpec),
}

impl Workload {
    /// The workload's name.
    pub fn name(&self) -> &str {
        match self {
            Workload::Deployment(d) => &d.name,
            Workload::Job(j) => &j.name,
            Workload::DaemonSet(d) => &d.name,
            Workload::Pdb(p) => &p.name,
            Workload::PriorityClass(p) => &p.name,
        }
    }
}

fn default_namespace() -> String {
    "default".into()
}

/// A Deployment.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeploymentSpec {
    /// Name; pods get the label `app: <name>`.
    pub name: String,
    /// Namespace (`default`).
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// The replica schedule.
    pub replicas: Replicas,
    /// Extra replicas for a while, scheduled or random.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spikes: Vec<Spike>,
    /// The pods.
    pub pod: PodTemplate,
}

/// How many replicas a Deployment wants over time.
#[derive(Clone, Debug, PartialEq)]
pub enum Replicas {
    /// Always this many (`replicas: 10`).
    Constant(u32),
    /// Changes at times (`replicas: {steps: [{at: 0s, replicas: 10}, {at: 10m, replicas: 2}]}`).
    Steps(Vec<ReplicaStep>),
    /// A day curve (`replicas: {diurnal: {min: 2, max: 20, period: 24h, peakAt: 14h, every: 5m}}`).
    Diurnal(Diurnal),
}

/// From `at` on, `replicas` replicas.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplicaStep {
    /// When.
    pub at: SimDuration,
    /// How many.
    pub replicas: u32,
}

/// A cosine day curve between `min` and `max`, peaking at `peakAt` within each period,
/// re-evaluated every `every`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Diurnal {
    /// Trough replicas.
    pub min: u32,
    /// Peak replicas.
    pub max: u32,
    /// Curve period (`24h`).
    #[serde(default = "day")]
    pub period: SimDuration,
    /// Where in the period the peak falls (drawn per seed if a distribution; default half the period).
    #[serde(default)]
    pub peak_at: Option<Dist<SimDuration>>,
    /// How often the replica count is updated (`5m`).
    #[serde(default = "five_minutes")]
    pub every: SimDuration,
}

fn day() -> SimDuration {
    SimDuration(std::time::Duration::from_secs(86_400))
}

fn five_minutes() -> SimDuration {
    SimDuration(std::time::Duration::from_secs(300))
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
enum ReplicasForm {
    Steps(Vec<ReplicaStep>),
    Diurnal(Diurnal),
}

impl<'de> Deserialize<'de> for Replicas {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Replicas;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a replica count, {steps: [...]} or {diurnal: {...}}")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Replicas, E> {
                u32::try_from(v).map(Replicas::Constant).map_err(|_| E::custom("replicas: too many"))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Replicas, E> {
                u32::try_from(v).map(Replicas::Constant).map_err(|_| E::custom("replicas must not be negative"))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Replicas, A::Error> {
                Ok(match ReplicasForm::deserialize(de::value::MapAccessDeserializer::new(map))? {
                    ReplicasForm::Steps(s) => Replicas::Steps(s),
                    ReplicasForm::Diurnal(d) => Replicas::Diurnal(d),
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Replicas {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Replicas::Constant(n) => s.serialize_u32(*n),
            Replicas::Steps(steps) => ReplicasForm::Steps(steps.clone()).serialize(s),
            Replicas::Diurnal(d) => ReplicasForm::Diurnal(d.clone()).serialize(s),
        }
    }
}

/// Extra replicas for a while: at a fixed time (`at`) or as a Poisson process (`perHour`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spike {
    /// When (a scheduled spike).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SimDuration>,
    /// Spikes per hour (random spikes; the rate is drawn once per seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<Dist<f64>>,
    /// How long each spike lasts.
    #[serde(rename = "for")]
    pub lasts: Dist<SimDuration>,
    /// Replicas added.
    pub add: Dist<u32>,
}

/// Jobs: `perHour` arrivals (Poisson, rate drawn once per seed) between `from` and `until`,
/// or `count` Jobs at `at`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JobSpec {
    /// Name prefix; Job k is `<name>-<k>`, its pods are labelled `app: <name>`.
    pub name: String,
    /// Namespace (`default`).
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Poisson arrival rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<Dist<f64>>,
    /// Arrivals start (`0s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<SimDuration>,
    /// Arrivals stop (the end of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<SimDuration>,
    /// A burst instead: `count` Jobs at this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SimDuration>,
    /// Jobs in the burst (`1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// How long each pod runs before succeeding (drawn per Job).
    pub run_for: Dist<SimDuration>,
    /// Pods that must succeed per Job (`1`, drawn per Job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Dist<u32>>,
    /// Pods at a time (`completions`, drawn per Job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<Dist<u32>>,
    /// The pods (shape drawn per Job).
    pub pod: PodTemplate,
}

/// A DaemonSet.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DaemonSetSpec {
    /// Name.
    pub name: String,
    /// Namespace (`default`).
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// The pods (shape drawn per seed).
    pub pod: PodTemplate,
}

/// A PodDisruptionBudget over a workload's pods (`workload: web`) or explicit labels.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PdbSpec {
    /// Name.
    pub name: String,
    /// Namespace (`default`).
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Selects `app: <workload>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Or these labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// An integer or a percentage (`"20%"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<Value>,
    /// An integer or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<Value>,
}

/// A PriorityClass.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PriorityClassSpec {
    /// Name pods use in `priorityClassName`.
    pub name: String,
    /// Priority value.
    pub value: i32,
}

/// The pods of a workload. Kubernetes fields (`tolerations`, `affinity`,
/// `topologySpreadConstraints`) are pasted as in a pod spec; a spread constraint without a
/// `labelSelector` selects the workload's own pods.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodTemplate {
    /// CPU request.
    pub cpu: Dist<Cpu>,
    /// Memory request.
    pub memory: Dist<Memory>,
    /// Extra labels (`app: <name>` is always set).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Sets `karpenter.sh/do-not-disrupt: "true"`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub do_not_disrupt: bool,
    /// `priorityClassName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// `nodeSelector`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// `tolerations`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Value>,
    /// `affinity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Value>,
    /// `topologySpreadConstraints`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<Value>,
    /// `terminationGracePeriodSeconds` (30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<u32>,
    /// A TCP port the pod's container binds on its node (`ports: [{containerPort: p,
    /// hostPort: p}]`): two such pods never share a node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<u16>,
    /// `nvidia.com/gpu` the container requests (and limits to the same count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
}

impl Replicas {
    /// Checks step times are ordered and the curve's bounds.
    pub fn validate(&self) -> Result<(), FieldError> {
        match self {
            Replicas::Constant(_) => Ok(()),
            Replicas::Steps(steps) => {
                if steps.is_empty() {
                    return Err(FieldError::new("steps", "needs at least one step"));
                }
                if steps.windows(2).any(|w| w[0].at > w[1].at) {
                    return Err(FieldError::new("steps", "times must not decrease"));
                }
                Ok(())
            }
            Replicas::Diurnal(d) => {
                if d.min > d.max {
                    return Err(FieldError::new("diurnal", "min is above max"));
                }
                if d.every.0.is_zero() || d.period.0.is_zero() {
                    return Err(FieldError::new("diurnal", "period and every must be positive"));
                }
                d.peak_at.as_ref().map_or(Ok(()), |p| p.validate().map_err(|e| e.within("diurnal.peakAt")))
            }
        }
    }
}

impl PodTemplate {
    /// Checks the distributions.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.cpu.validate().map_err(|e| e.within("cpu"))?;
        self.memory.validate().map_err(|e| e.within("memory"))
    }
}

impl Workload {
    /// Checks what the types cannot.
    pub fn validate(&self) -> Result<(), FieldError> {
        match self {
            Workload::Deployment(d) => {
                d.replicas.validate().map_err(|e| e.within("replicas"))?;
                for (i, s) in d.spikes.iter().enumerate() {
                    if s.at.is_some() == s.per_hour.is_some() {
                        return Err(FieldError::new(format!("spikes[{i}]"), "set exactly one of `at` and `perHour`"));
                    }
                    s.lasts.validate().map_err(|e| e.within(format!("spikes[{i}].for")))?;
                    s.add.validate().map_err(|e| e.within(format!("spikes[{i}].add")))?;
                }
                d.pod.validate().map_err(|e| e.within("pod"))
            }
            Workload::Job(j) => {
                if j.per_hour.is_some() == j.at.is_some() {
                    return Err(FieldError::new(
                        "",
                        "set exactly one of `perHour` (Poisson arrivals) and `at` (a burst)",
                    ));
                }
                if j.per_hour.is_some() && j.count.is_some() {
                    return Err(FieldError::new("count", "goes with `at`, not `perHour`"));
                }
                if let Some(r) = &j.per_hour {
                    r.validate().map_err(|e| e.within("perHour"))?;
                }
                j.run_for.validate().map_err(|e| e.within("runFor"))?;
                j.pod.validate().map_err(|e| e.within("pod"))
            }
            Workload::DaemonSet(d) => d.pod.validate().map_err(|e| e.within("pod")),
            Workload::Pdb(p) => {
                if p.workload.is_some() == p.match_labels.is_some() {
                    return Err(FieldError::new("", "set exactly one of `workload` and `matchLabels`"));
                }
                if p.max_unavailable.is_some() == p.min_available.is_some() {
                    return Err(FieldError::new("", "set exactly one of `maxUnavailable` and `minAvailable`"));
                }
                for (field, v) in [("maxUnavailable", &p.max_unavailable), ("minAvailable", &p.min_available)] {
                    let Some(v) = v else { continue };
                    let ok = v.as_u64().is_some() || v.as_str().is_some_and(|s| s.ends_with('%'));
                    if !ok {
                        return Err(FieldError::new(
                            field,
                            format!("{v} is neither a non-negative integer nor a percentage like \"20%\""),
                        ));
                    }
                }
                Ok(())
            }
            Workload::PriorityClass(_) => Ok(()),
        }
    }
}
