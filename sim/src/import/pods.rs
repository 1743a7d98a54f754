//! A real pod template (`spec.template` of a Deployment, StatefulSet, DaemonSet or Job)
//! as the scenario format's [`PodTemplate`]: requests summed the scheduler's way, labels,
//! annotations, do-not-disrupt, priority class, node selector, tolerations, affinity,
//! topology spread and the termination grace period. Fields that change where or whether a
//! pod schedules but have no place in the format are listed as unsupported; fields with no
//! effect on scheduling or disruption (images, env, probes, ...) are not simulated and are
//! not listed one by one (the scenario's header says so).

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::FieldProblem;
use super::findings::{Class, Findings};
use super::requests;
use crate::scenario::dist::{Cpu, Dist, Memory};
use crate::scenario::workloads::PodTemplate;

/// The annotation Karpenter reads on pods.
pub const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";

/// Pod-spec keys the importer carries over.
const CARRIED: &[&str] = &[
    "containers",
    "initContainers",
    "overhead",
    "nodeSelector",
    "tolerations",
    "affinity",
    "topologySpreadConstraints",
    "priorityClassName",
    "terminationGracePeriodSeconds",
];

/// Pod-spec keys with no effect on scheduling or disruption in the simulation.
const INERT: &[&str] = &[
    "volumes",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "securityContext",
    "restartPolicy",
    "dnsPolicy",
    "dnsConfig",
    "imagePullSecrets",
    "enableServiceLinks",
    "hostname",
    "subdomain",
    "setHostnameAsFQDN",
    "shareProcessNamespace",
    "hostAliases",
    "readinessGates",
    "activeDeadlineSeconds",
    "hostIPC",
    "hostPID",
    "hostUsers",
    "os",
    "priority",
    "preemptionPolicy",
    "ephemeralContainers",
];

/// Labels the API server or a workload controller puts on templates; they name the live
/// object (a Job's uid) and are dropped.
const SERVER_LABELS: &[&str] = &[
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
    "pod-template-hash",
];

/// Converts `template` (the object's `spec.template`, found at `path`) for workload `name`
/// (pods labelled `app: <name>` in the scenario). `object` names it in findings.
pub fn template(
    template: &Value,
    path: &str,
    name: &str,
    object: &str,
    findings: &mut Findings,
) -> Result<PodTemplate, FieldProblem> {
    let spec_path = format!("{path}.spec");
    let spec = template.get("spec").ok_or_else(|| FieldProblem::new(&spec_path, "Required value"))?;
    if !spec.is_object() {
        return Err(FieldProblem::new(&spec_path, "must be a mapping"));
    }
    let containers = spec.get("containers").and_then(Value::as_array);
    if containers.is_none_or(Vec::is_empty) {
        return Err(FieldProblem::new(format!("{spec_path}.containers"), "Required value: a pod needs a container"));
    }
    let (req, others) = requests::pod(spec, &spec_path)?;
    for r in others {
        findings.unsupported(
            object,
            format!("{spec_path}.containers[*].resources[{r}]"),
            "only cpu and memory requests are simulated",
        );
    }
    let cpu = if req.cpu_milli > 0 {
        req.cpu_milli
    } else {
        findings.push(
            Class::Assumed,
            object,
            format!("{spec_path}.containers[*].resources.requests.cpu"),
            "none set; 1m (the format needs a positive request)",
        );
        1
    };
    let memory = if req.memory > 0 {
        req.memory
    } else {
        findings.push(
            Class::Assumed,
            object,
            format!("{spec_path}.containers[*].resources.requests.memory"),
            "none set; 1Mi (the format needs a positive request)",
        );
        1 << 20
    };
    unsupported_spec_fields(spec, &spec_path, object, findings);

    let mut labels = string_map(template.pointer("/metadata/labels"), &format!("{path}.metadata.labels"))?;
    for l in SERVER_LABELS {
        labels.remove(*l);
    }
    if let Some(app) = labels.get("app")
        && app != name
    {
        findings.push(
            Class::Changed,
            object,
            format!("{path}.metadata.labels.app"),
            format!("{app:?} became {name:?}: the format labels a workload's pods app: <workload name>"),
        );
        labels.remove("app");
    }
    labels.remove("app");
    let mut annotations =
        string_map(template.pointer("/metadata/annotations"), &format!("{path}.metadata.annotations"))?;
    let do_not_disrupt = annotations.remove(DO_NOT_DISRUPT).is_some_and(|v| v == "true");
    let node_selector = string_map(spec.get("nodeSelector"), &format!("{spec_path}.nodeSelector"))?;
    let tolerations = match spec.get("tolerations") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(FieldProblem::new(format!("{spec_path}.tolerations"), "must be a list")),
    };
    let spread = match spec.get("topologySpreadConstraints") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(FieldProblem::new(format!("{spec_path}.topologySpreadConstraints"), "must be a list")),
    };
    let affinity =
        spec.get("affinity").filter(|a| !a.is_null() && a.as_object().is_none_or(|m| !m.is_empty())).cloned();
    let priority_class_name = match spec.get("priorityClassName") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(FieldProblem::new(format!("{spec_path}.priorityClassName"), "must be a string")),
    };
    let termination_grace_period_seconds = match spec.get("terminationGracePeriodSeconds") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
            FieldProblem::new(format!("{spec_path}.terminationGracePeriodSeconds"), "must be a non-negative integer")
        })?),
    };
    Ok(PodTemplate {
        cpu: Dist::Fixed(Cpu(cpu)),
        memory: Dist::Fixed(Memory(memory)),
        labels,
        annotations,
        do_not_disrupt,
        priority_class_name,
        node_selector,
        tolerations,
        affinity,
        topology_spread_constraints: spread,
        termination_grace_period_seconds,
        host_port: None,
        gpu: None,
    })
}

/// Lists pod-spec fields that change scheduling but are not simulated.
fn unsupported_spec_fields(spec: &Value, path: &str, object: &str, findings: &mut Findings) {
    let Some(map) = spec.as_object() else { return };
    for (k, v) in map {
        if CARRIED.contains(&k.as_str()) || INERT.contains(&k.as_str()) || v.is_null() {
            continue;
        }
        let note = match k.as_str() {
            "schedulerName" if v.as_str() == Some("default-scheduler") => continue,
            "hostNetwork" if v.as_bool() != Some(true) => continue,
            "schedulerName" => "pods of another scheduler are scheduled by the simulated kube-scheduler",
            "nodeName" => "pinning to a node name is not simulated",
            "hostNetwork" => "host-network port conflicts are not simulated",
            "runtimeClassName" => "RuntimeClass overhead and scheduling are not simulated",
            "schedulingGates" => "scheduling gates are not simulated (the pods schedule at once)",
            "resourceClaims" => "dynamic resource allocation is not simulated",
            _ => "not in the scenario format",
        };
        findings.unsupported(object, format!("{path}.{k}"), note);
    }
    for (i, vol) in map.get("volumes").and_then(Value::as_array).map_or(&[][..], Vec::as_slice).iter().enumerate() {
        if vol.get("persistentVolumeClaim").is_some() || vol.get("ephemeral").is_some() {
            findings.unsupported(
                object,
                format!("{path}.volumes[{i}]"),
                "volumes and their zone topology are not simulated",
            );
        }
    }
    for list in ["containers", "initContainers"] {
        for (c, container) in map.get(list).and_then(Value::as_array).map_or(&[][..], Vec::as_slice).iter().enumerate()
        {
            for (p, port) in
                container.get("ports").and_then(Value::as_array).map_or(&[][..], Vec::as_slice).iter().enumerate()
            {
                if port.get("hostPort").is_some_and(|h| !h.is_null()) {
                    findings.unsupported(
                        object,
                        format!("{path}.{list}[{c}].ports[{p}].hostPort"),
                        "host ports are not simulated",
                    );
                }
            }
        }
    }
}

/// A `map[string]string` field (labels, annotations, nodeSelector).
fn string_map(v: Option<&Value>, path: &str) -> Result<BTreeMap<String, String>, FieldProblem> {
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(FieldProblem::new(
                    format!("{path}.{k}"),
                    format!("must be a string (found {})", super::dump::type_name(other)),
                )),
            })
            .collect(),
        Some(other) => {
            Err(FieldProblem::new(path, format!("must be a mapping (found {})", super::dump::type_name(other))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn carries_scheduling_fields_and_lists_the_rest() {
        let t = json!({
            "metadata": {"labels": {"app": "frontend", "tier": "web"}, "annotations": {DO_NOT_DISRUPT: "true", "x": "y"}},
            "spec": {
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}, "ports": [{"containerPort": 80, "hostPort": 80}]}],
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "priorityClassName": "high",
                "runtimeClassName": "gvisor",
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}],
            },
        });
        let mut f = Findings::default();
        let p = template(&t, "spec.template", "web", "Deployment/default/web", &mut f).unwrap();
        assert_eq!((p.cpu, p.memory), (Dist::Fixed(Cpu(500)), Dist::Fixed(Memory(1 << 30))));
        assert!(p.do_not_disrupt);
        assert_eq!(p.labels, BTreeMap::from([("tier".to_string(), "web".to_string())]));
        assert_eq!(p.annotations.len(), 1);
        assert_eq!(p.priority_class_name.as_deref(), Some("high"));
        let fields: Vec<&str> = f.all.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.template.spec.runtimeClassName",
                "spec.template.spec.volumes[0]",
                "spec.template.spec.containers[0].ports[0].hostPort",
                "spec.template.metadata.labels.app",
            ]
        );
    }

    #[test]
    fn a_template_without_containers_is_an_error_naming_the_field() {
        let mut f = Findings::default();
        let e = template(&json!({"spec": {}}), "spec.template", "w", "x", &mut f).unwrap_err();
        assert_eq!(e.field, "spec.template.spec.containers");
    }
}
