//! Deployments, StatefulSets, DaemonSets and Jobs as the scenario's workload entries.
//!
//! The format has no StatefulSet: one becomes a Deployment of the same pods and replica
//! count (listed, with its volume claim templates). A Job becomes one Job arriving at the
//! start with its completions and parallelism; how long its pods run is not in a dump, so
//! `runFor` is assumed. Completed Jobs hold no capacity and are listed, not replayed.

use std::collections::BTreeMap;

use serde_json::Value;

use super::dump::Item;
use super::error::{FieldProblem, ImportError};
use super::findings::{Class, Findings};
use super::names::Names;
use super::pods;
use crate::scenario::SimDuration;
use crate::scenario::dist::Dist;
use crate::scenario::workloads::{DaemonSetSpec, DeploymentSpec, JobSpec, Replicas, Workload};

/// How long an imported Job's pods run.
pub const DEFAULT_RUN_FOR: std::time::Duration = std::time::Duration::from_secs(600);

/// An imported workload and the labels its pods carried in the cluster (for PDB matching).
#[derive(Clone, Debug)]
pub struct Imported {
    /// The scenario entry.
    pub workload: Workload,
    /// Namespace.
    pub namespace: String,
    /// The pod template's labels in the dump (before the format's `app` label).
    pub original_labels: BTreeMap<String, String>,
}

/// Converts one workload object (Deployment, StatefulSet, DaemonSet, Job). `Ok(None)` for
/// an object that is listed and skipped (a completed Job).
pub fn convert(item: &Item, names: &mut Names, findings: &mut Findings) -> Result<Option<Imported>, ImportError> {
    let object = item.label();
    let kind = item.kind();
    let namespace = item.namespace().unwrap_or("default").to_string();
    let wrap = |e: FieldProblem| item.error(e.field, e.problem);
    let spec = item.object.get("spec").ok_or_else(|| item.error("spec", "Required value"))?;
    let template = spec.get("template").ok_or_else(|| item.error("spec.template", "Required value"))?;
    let original_labels: BTreeMap<String, String> = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default();
    let scenario_kind = match kind {
        "Job" => "job",
        "DaemonSet" => "daemonSet",
        _ => "deployment",
    };
    if kind == "Job" && job_finished(&item.object) {
        findings.unsupported(&object, "*", "finished (Complete or Failed): holds no capacity, not replayed");
        return Ok(None);
    }
    let name = names.claim(scenario_kind, item.name(), &namespace, &object, findings);
    let pod = pods::template(template, "spec.template", &name, &object, findings).map_err(wrap)?;
    let workload = match kind {
        "Deployment" | "StatefulSet" => {
            if kind == "StatefulSet" {
                findings.unsupported(
                    &object,
                    "kind",
                    "simulated as a Deployment of the same pods (no ordinal names or ordered start)",
                );
                if spec.get("volumeClaimTemplates").and_then(Value::as_array).is_some_and(|v| !v.is_empty()) {
                    findings.unsupported(
                        &object,
                        "spec.volumeClaimTemplates",
                        "volumes and their zone topology are not simulated",
                    );
                }
            }
            if spec.get("paused").and_then(Value::as_bool) == Some(true) {
                findings.unsupported(&object, "spec.paused", "rollouts are not simulated");
            }
            let replicas = match spec.get("replicas") {
                None | Some(Value::Null) => 1,
                Some(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
                    item.error("spec.replicas", format!("must be a non-negative integer (found {v})"))
                })?,
            };
            Workload::Deployment(DeploymentSpec {
                name,
                namespace: namespace.clone(),
                replicas: Replicas::Constant(replicas),
                spikes: Vec::new(),
                pod,
            })
        }
        "DaemonSet" => Workload::DaemonSet(DaemonSetSpec { name, namespace: namespace.clone(), pod }),
        "Job" => {
            let count = |field: &str| -> Result<Option<u32>, ImportError> {
                match spec.get(field) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()).map(Some).ok_or_else(|| {
                        item.error(format!("spec.{field}"), format!("must be a non-negative integer (found {v})"))
                    }),
                }
            };
            let parallelism = count("parallelism")?;
            // A work-queue Job (no completions) runs `parallelism` pods until one succeeds;
            // the format's closest is `parallelism` completions at once.
            let completions = count("completions")?.or(parallelism).unwrap_or(1);
            if spec.get("completions").is_none_or(Value::is_null) && parallelism.is_some_and(|p| p > 1) {
                findings.push(
                    Class::Assumed,
                    &object,
                    "spec.completions",
                    format!("unset (a work queue): {completions}, one per parallel pod"),
                );
            }
            findings.push(
                Class::Assumed,
                &object,
                "runFor",
                format!(
                    "{} per pod, starting at 0s (a dump has no run times or arrival schedule)",
                    SimDuration(DEFAULT_RUN_FOR)
                ),
            );
            if item
                .object
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|o| o.iter().any(|r| r.get("kind").and_then(Value::as_str) == Some("CronJob")))
            {
                findings.unsupported(
                    &object,
                    "metadata.ownerReferences",
                    "its CronJob's schedule is not in the dump: one run is replayed",
                );
            }
            Workload::Job(JobSpec {
                name,
                namespace: namespace.clone(),
                per_hour: None,
                from: None,
                until: None,
                at: Some(SimDuration(std::time::Duration::ZERO)),
                count: Some(1),
                run_for: Dist::Fixed(SimDuration(DEFAULT_RUN_FOR)),
                completions: Some(Dist::Fixed(completions)),
                parallelism: parallelism.map(Dist::Fixed),
                pod,
            })
        }
        other => return Err(item.error("kind", format!("{other} is not a workload kind"))),
    };
    Ok(Some(Imported { workload, namespace, original_labels }))
}

/// A Job whose `Complete` or `Failed` condition is true.
fn job_finished(job: &Value) -> bool {
    job.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| {
        cs.iter().any(|c| {
            matches!(c.get("type").and_then(Value::as_str), Some("Complete" | "Failed"))
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    })
}
