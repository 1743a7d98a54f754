//! Turns workloads and their draws into the Kubernetes objects the driver applies, each at
//! its time: Deployments re-applied with each replica change, one Job per arrival,
//! DaemonSets, PDBs and PriorityClasses at the start.

use std::time::Duration;

use serde_json::{Value, json};

use super::dist::{Cpu, Memory};
use super::plan::{Plan, WorkloadPlan};
use super::workloads::{PodTemplate, Workload};
use crate::actors::workloads::RUN_DURATION;

/// An object to apply at a time.
#[derive(Clone, Debug)]
pub struct Timed {
    /// When.
    pub at: Duration,
    /// The manifest (server-side applied by name).
    pub object: Value,
}

/// Every workload object of the plan, in time order (stable: equal times keep file order,
/// PriorityClasses and PDBs first).
pub fn workload_objects(workloads: &[Workload], plan: &Plan) -> Vec<Timed> {
    let mut out = Vec::new();
    for (w, p) in workloads.iter().zip(&plan.workloads) {
        match (w, p) {
            (Workload::PriorityClass(pc), _) => out.push(Timed {
                at: Duration::ZERO,
                object: json!({
                    "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": pc.name}, "value": pc.value,
                }),
            }),
            (Workload::Pdb(pdb), _) => {
                let labels = match (&pdb.workload, &pdb.match_labels) {
                    (Some(w), _) => json!({"app": w}),
                    (None, Some(l)) => json!(l),
                    (None, None) => json!({}),
                };
                let mut spec = json!({"selector": {"matchLabels": labels}});
                if let Some(v) = &pdb.max_unavailable {
                    spec["maxUnavailable"] = v.clone();
                }
                if let Some(v) = &pdb.min_available {
                    spec["minAvailable"] = v.clone();
                }
                out.push(Timed {
                    at: Duration::ZERO,
                    object: json!({
                        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": pdb.name, "namespace": pdb.namespace}, "spec": spec,
                    }),
                });
            }
            _ => {}
        }
    }
    for (w, p) in workloads.iter().zip(&plan.workloads) {
        match (w, p) {
            (Workload::DaemonSet(d), WorkloadPlan::DaemonSet { cpu, memory, .. }) => out.push(Timed {
                at: Duration::ZERO,
                object: json!({
                    "apiVersion": "apps/v1", "kind": "DaemonSet",
                    "metadata": {"name": d.name, "namespace": d.namespace},
                    "spec": {
                        "selector": {"matchLabels": {"app": d.name}},
                        "template": pod_template(&d.name, &d.pod, *cpu, *memory, None),
                    },
                }),
            }),
            (Workload::Deployment(d), WorkloadPlan::Deployment { cpu, memory, replicas, .. }) => {
                for change in replicas {
                    out.push(Timed {
                        at: change.at.0,
                        object: json!({
                            "apiVersion": "apps/v1", "kind": "Deployment",
                            "metadata": {"name": d.name, "namespace": d.namespace},
                            "spec": {
                                "replicas": change.replicas,
                                "selector": {"matchLabels": {"app": d.name}},
                                "template": pod_template(&d.name, &d.pod, *cpu, *memory, None),
                            },
                        }),
                    });
                }
            }
            (Workload::Job(j), WorkloadPlan::Jobs { jobs, .. }) => {
                for job in jobs {
                    let mut template =
                        pod_template(&j.name, &j.pod, job.cpu, job.memory, Some(job.run_for.to_string()));
                    template["spec"]["restartPolicy"] = json!("Never");
                    out.push(Timed {
                        at: job.at.0,
                        object: json!({
                            "apiVersion": "batch/v1", "kind": "Job",
                            "metadata": {"name": job.name, "namespace": j.namespace},
                            "spec": {
                                "completions": job.completions,
                                "parallelism": job.parallelism,
                                "template": template,
                            },
                        }),
                    });
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|t| t.at);
    out
}

/// A pod template with the workload's label, requests and scheduling constraints.
fn pod_template(name: &str, pod: &PodTemplate, cpu: Cpu, memory: Memory, run_for: Option<String>) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert("app".into(), json!(name));
    for (k, v) in &pod.labels {
        labels.insert(k.clone(), json!(v));
    }
    let mut annotations = serde_json::Map::new();
    for (k, v) in &pod.annotations {
        annotations.insert(k.clone(), json!(v));
    }
    if pod.do_not_disrupt {
        annotations.insert("karpenter.sh/do-not-disrupt".into(), json!("true"));
    }
    if let Some(d) = run_for {
        annotations.insert(RUN_DURATION.into(), json!(d));
    }
    let mut spec = json!({
        "containers": [{
            "name": "app",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu.to_string(), "memory": memory.to_string()}},
        }],
    });
    if let Some(gpus) = pod.gpu {
        spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = json!(gpus.to_string());
        spec["containers"][0]["resources"]["limits"] = json!({"nvidia.com/gpu": gpus.to_string()});
    }
    if let Some(port) = pod.host_port {
        spec["containers"][0]["ports"] = json!([{"containerPort": port, "hostPort": port, "protocol": "TCP"}]);
    }
    if let Some(p) = &pod.priority_class_name {
        spec["priorityClassName"] = json!(p);
    }
    if !pod.node_selector.is_empty() {
        spec["nodeSelector"] = json!(pod.node_selector);
    }
    if !pod.tolerations.is_empty() {
        spec["tolerations"] = json!(pod.tolerations);
    }
    if let Some(a) = &pod.affinity {
        spec["affinity"] = a.clone();
    }
    if !pod.topology_spread_constraints.is_empty() {
        let constraints: Vec<Value> = pod
            .topology_spread_constraints
            .iter()
            .map(|c| {
                let mut c = c.clone();
                if c.get("labelSelector").is_none() {
                    c["labelSelector"] = json!({"matchLabels": {"app": name}});
                }
                c
            })
            .collect();
        spec["topologySpreadConstraints"] = json!(constraints);
    }
    if let Some(g) = pod.termination_grace_period_seconds {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    let mut metadata = json!({"labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    json!({"metadata": metadata, "spec": spec})
}
