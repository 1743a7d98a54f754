//! A pod's CPU and memory requests as the scheduler counts them (kube-scheduler's
//! `computePodResourceRequest`, `pkg/scheduler/framework/plugins/noderesources/fit.go`,
//! and `resourcehelper.PodRequests`): the app containers' sum plus the restartable
//! (sidecar) init containers, against the largest single init container (plus the sidecars
//! started before it), plus the pod overhead. A container's missing request defaults to its
//! limit, as the API server's defaulting does.

use serde_json::Value;

use super::error::FieldProblem;
use crate::actors::quantity::{parse_milli, parse_value};

/// Milli-CPU and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// Milli-CPU.
    pub cpu_milli: i64,
    /// Bytes.
    pub memory: i64,
}

impl Requests {
    fn add(self, o: Requests) -> Requests {
        Requests { cpu_milli: self.cpu_milli + o.cpu_milli, memory: self.memory + o.memory }
    }

    fn max(self, o: Requests) -> Requests {
        Requests { cpu_milli: self.cpu_milli.max(o.cpu_milli), memory: self.memory.max(o.memory) }
    }
}

/// One container's CPU and memory request (`path` names it in errors). Resources other
/// than CPU and memory are returned by name for the caller to list.
pub fn container(c: &Value, path: &str) -> Result<(Requests, Vec<String>), FieldProblem> {
    let resources = c.get("resources");
    let requests = resources.and_then(|r| r.get("requests"));
    let limits = resources.and_then(|r| r.get("limits"));
    let read = |name: &str, milli: bool| -> Result<i64, FieldProblem> {
        let (v, section) = match requests.and_then(|r| r.get(name)) {
            Some(v) => (v, "requests"),
            None => match limits.and_then(|l| l.get(name)) {
                Some(v) => (v, "limits"),
                None => return Ok(0),
            },
        };
        let field = format!("{path}.resources.{section}.{name}");
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                return Err(FieldProblem::new(
                    field,
                    format!("must be a quantity (found {})", super::dump::type_name(other)),
                ));
            }
        };
        let parsed = if milli { parse_milli(&text) } else { parse_value(&text) };
        match parsed {
            Ok(n) if n >= 0 => Ok(n),
            Ok(_) => Err(FieldProblem::new(field, format!("{text:?} is negative"))),
            Err(e) => Err(FieldProblem::new(field, e.to_string())),
        }
    };
    let r = Requests { cpu_milli: read("cpu", true)?, memory: read("memory", false)? };
    let mut others: Vec<String> = Vec::new();
    for section in [requests, limits].into_iter().flatten() {
        if let Some(m) = section.as_object() {
            for k in m.keys() {
                if k != "cpu" && k != "memory" && !others.contains(k) {
                    others.push(k.clone());
                }
            }
        }
    }
    Ok((r, others))
}

/// The pod's effective requests (module docs) and the other resources it asks for.
pub fn pod(spec: &Value, path: &str) -> Result<(Requests, Vec<String>), FieldProblem> {
    let mut others = Vec::new();
    let mut app = Requests::default();
    for (i, c) in list(spec, "containers").iter().enumerate() {
        let (r, o) = container(c, &format!("{path}.containers[{i}]"))?;
        app = app.add(r);
        others.extend(o);
    }
    let mut sidecars = Requests::default();
    let mut init_peak = Requests::default();
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let (r, o) = container(c, &format!("{path}.initContainers[{i}]"))?;
        others.extend(o);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            app = app.add(r);
            sidecars = sidecars.add(r);
            init_peak = init_peak.max(sidecars);
        } else {
            init_peak = init_peak.max(sidecars.add(r));
        }
    }
    let mut total = app.max(init_peak);
    if let Some(overhead) = spec.get("overhead") {
        let (r, o) = container(&serde_json::json!({"resources": {"requests": overhead}}), path)
            .map_err(|e| FieldProblem::new(e.field.replace(".resources.requests", ".overhead"), e.problem))?;
        total = total.add(r);
        others.extend(o);
    }
    others.sort();
    others.dedup();
    Ok((total, others))
}

fn list<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(cpu: &str, mem: &str) -> Value {
        json!({"resources": {"requests": {"cpu": cpu, "memory": mem}}})
    }

    #[test]
    fn app_containers_sum_and_an_init_container_counts_when_larger() {
        let spec =
            json!({"containers": [req("250m", "256Mi"), req("500m", "256Mi")], "initContainers": [req("2", "64Mi")]});
        let (r, _) = pod(&spec, "spec").unwrap();
        assert_eq!(r, Requests { cpu_milli: 2000, memory: 512 << 20 });
    }

    #[test]
    fn sidecars_add_to_the_app_and_to_later_init_containers() {
        let mut sidecar = req("100m", "100Mi");
        sidecar["restartPolicy"] = json!("Always");
        let spec = json!({
            "containers": [req("1", "1Gi")],
            "initContainers": [sidecar, req("1950m", "10Mi")],
            "overhead": {"cpu": "10m"},
        });
        let (r, _) = pod(&spec, "spec").unwrap();
        // app 1 + sidecar 0.1 = 1.1 < init 1.95 + sidecar 0.1 = 2.05; plus 10m overhead.
        assert_eq!(r.cpu_milli, 2060);
        assert_eq!(r.memory, (1 << 30) + (100 << 20));
    }

    #[test]
    fn limits_stand_in_for_missing_requests_and_other_resources_are_named() {
        let c = json!({"resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}}});
        let (r, others) = container(&c, "c").unwrap();
        assert_eq!(r, Requests { cpu_milli: 2000, memory: 0 });
        assert_eq!(others, ["nvidia.com/gpu"]);
        let bad = json!({"resources": {"requests": {"cpu": "lots"}}});
        let e = container(&bad, "spec.containers[0]").unwrap_err();
        assert_eq!(e.field, "spec.containers[0].resources.requests.cpu");
    }
}
