//! `meta.k8s.io/v1` Table responses, so `kubectl get` and `kubectl get -w` print useful
//! columns for the simulated cluster (kubectl asks for tables and prints their cells).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::resources::ResourceType;
use dovetail_world::clock::{parse_rfc3339, sim_epoch};

/// A Table of `objects`, with the kind's printer columns; `now` is simulated time since
/// the epoch, for the AGE column.
pub fn table(rt: &ResourceType, objects: &[Arc<Value>], now: Duration) -> Value {
    let columns = columns(rt);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let cells: Vec<Value> = columns.iter().map(|c| cell(rt, c, o, now)).collect();
            let meta =
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]});
            json!({"cells": cells, "object": meta})
        })
        .collect();
    let defs: Vec<Value> = columns
        .iter()
        .map(|c| json!({"name": c.name, "type": c.ty, "format": if c.name == "Name" { "name" } else { "" }, "description": c.name, "priority": c.priority}))
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions": defs, "rows": rows})
}

struct Column {
    name: String,
    ty: &'static str,
    /// JSON path (`.spec.x`) for CRD columns; a built-in rule otherwise.
    path: Option<String>,
    priority: i64,
}

fn col(name: &str, priority: i64) -> Column {
    Column { name: name.into(), ty: "string", path: None, priority }
}

fn columns(rt: &ResourceType) -> Vec<Column> {
    let mut cols = vec![col("Name", 0)];
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => {
            cols.extend([col("Ready", 0), col("Status", 0), col("Restarts", 0), col("Age", 0), col("Node", 1)])
        }
        ("", "nodes") => cols.extend([
            col("Status", 0),
            col("Roles", 0),
            col("Age", 0),
            col("Version", 0),
            col("Instance-Type", 1),
            col("Zone", 1),
        ]),
        ("", "namespaces") => cols.extend([col("Status", 0), col("Age", 0)]),
        ("apps", "deployments") => {
            cols.extend([col("Ready", 0), col("Up-to-date", 0), col("Available", 0), col("Age", 0)])
        }
        _ => {
            if let Some(crd) = &rt.crd
                && let Some(version) = crd
                    .pointer("/spec/versions")
                    .and_then(Value::as_array)
                    .and_then(|vs| vs.iter().find(|v| v["name"].as_str() == Some(&rt.version)))
            {
                for c in version["additionalPrinterColumns"].as_array().into_iter().flatten() {
                    cols.push(Column {
                        name: c["name"].as_str().unwrap_or("").into(),
                        ty: match c["type"].as_str() {
                            Some("integer") => "integer",
                            Some("number") => "number",
                            Some("boolean") => "boolean",
                            Some("date") => "date",
                            _ => "string",
                        },
                        path: c["jsonPath"].as_str().map(String::from),
                        priority: c["priority"].as_i64().unwrap_or(0),
                    });
                }
            }
            if !cols.iter().any(|c| c.name == "Age") {
                cols.push(col("Age", 0));
            }
        }
    }
    cols
}

fn cell(rt: &ResourceType, c: &Column, o: &Value, now: Duration) -> Value {
    if let Some(path) = &c.path {
        return printer_cell(c.ty, json_path(o, path), now);
    }
    let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    match c.name.as_str() {
        "Name" => json!(s("/metadata/name")),
        "Age" => json!(age(o, now)),
        "Node" => json!(s("/spec/nodeName")),
        "Ready" if rt.plural == "pods" => {
            let total = o.pointer("/spec/containers").and_then(Value::as_array).map_or(0, Vec::len);
            let ready = o
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .map_or(0, |a| a.iter().filter(|c| c["ready"].as_bool() == Some(true)).count());
            json!(format!("{ready}/{total}"))
        }
        "Ready" => json!(format!(
            "{}/{}",
            o.pointer("/status/readyReplicas").and_then(Value::as_i64).unwrap_or(0),
            o.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)
        )),
        "Up-to-date" => json!(o.pointer("/status/updatedReplicas").and_then(Value::as_i64).unwrap_or(0)),
        "Available" => json!(o.pointer("/status/availableReplicas").and_then(Value::as_i64).unwrap_or(0)),
        "Restarts" => json!(0),
        "Status" if rt.plural == "pods" => {
            if o.pointer("/metadata/deletionTimestamp").is_some() {
                json!("Terminating")
            } else {
                json!(s("/status/phase"))
            }
        }
        "Status" if rt.plural == "nodes" => {
            let ready = o
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
                .map(|c| c["status"] == "True")
                .unwrap_or(false);
            let mut st = if ready { "Ready".to_string() } else { "NotReady".to_string() };
            if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
                st.push_str(",SchedulingDisabled");
            }
            json!(st)
        }
        "Status" => json!(s("/status/phase")),
        "Roles" => json!("<none>"),
        "Version" => json!(s("/status/nodeInfo/kubeletVersion")),
        "Instance-Type" => {
            json!(o.pointer("/metadata/labels/node.kubernetes.io~1instance-type").and_then(Value::as_str).unwrap_or(""))
        }
        "Zone" => {
            json!(o.pointer("/metadata/labels/topology.kubernetes.io~1zone").and_then(Value::as_str).unwrap_or(""))
        }
        _ => json!(""),
    }
}

/// A CRD printer column's cell as kube-apiserver's table convertor writes it
/// (apiextensions-apiserver `pkg/registry/customresource/tableconvertor/tableconvertor.go`):
/// no value is an empty cell; a `date` column is the age of its timestamp; `integer`,
/// `number` and `boolean` columns keep their JSON type when the value has it; a string
/// column prints the value.
fn printer_cell(ty: &str, v: Option<&Value>, now: Duration) -> Value {
    match (ty, v) {
        (_, None | Some(Value::Null)) => Value::Null,
        ("date", Some(Value::String(s))) => match parse_rfc3339(s) {
            Some(t) => json!(human(now.saturating_sub(t.duration_since(sim_epoch()).unwrap_or_default()))),
            None => json!("<invalid>"),
        },
        ("integer", Some(n @ Value::Number(_))) if n.is_i64() => n.clone(),
        ("number", Some(n @ Value::Number(_))) => n.clone(),
        ("boolean", Some(b @ Value::Bool(_))) => b.clone(),
        (_, Some(Value::String(s))) => json!(s),
        (_, Some(other)) => json!(other.to_string()),
    }
}

/// Evaluates the simple JSONPath forms CRD printer columns use (`.a.b`, `.a[0].b`,
/// `.a[?(@.type=="Ready")].status`), with `\.` as a literal dot inside a field name the way
/// client-go's jsonpath reads it, so `.metadata.labels.karpenter\.sh/capacity-type` (Karpenter's
/// NodeClaim columns) finds the label.
fn json_path<'a>(o: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = o;
    let mut rest = path.trim_start_matches('.');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = r[end + 1..].trim_start_matches('.');
            if let Ok(i) = inner.parse::<usize>() {
                cur = cur.get(i)?;
            } else if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                // client-go jsonpath filters compare a field of each element with a literal.
                let (field, negate, want) = match filter.split_once("!=") {
                    Some((f, w)) => (f, true, w),
                    None => filter.split_once("==").map(|(f, w)| (f, false, w))?,
                };
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                let field = field.trim();
                cur = cur.as_array()?.iter().find(|e| {
                    let got = json_path(e, field).map(|v| match v {
                        Value::String(s) => s.clone(),
                        v => v.to_string(),
                    });
                    (got.as_deref() == Some(want)) != negate
                })?;
            } else {
                return None;
            }
            continue;
        }
        let (field, after) = field_name(rest);
        cur = cur.get(field.as_str())?;
        rest = after.strip_prefix('.').unwrap_or(after);
    }
    Some(cur)
}

/// The field name at the start of `path`, up to the first unescaped `.` or `[`, with each
/// `\.` read as a dot; and the rest of the path.
fn field_name(path: &str) -> (String, &str) {
    let mut name = String::new();
    let mut chars = path.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(|&(_, n)| n == '.') => {
                chars.next();
                name.push('.');
            }
            '.' | '[' => return (name, &path[i..]),
            c => name.push(c),
        }
    }
    (name, "")
}

/// kubectl's HumanDuration of the object's age.
fn age(o: &Value, now: Duration) -> String {
    let Some(created) = o.pointer("/metadata/creationTimestamp").and_then(Value::as_str).and_then(parse_rfc3339) else {
        return "<unknown>".into();
    };
    let created = created.duration_since(sim_epoch()).unwrap_or_default();
    human(now.saturating_sub(created))
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s}s"),
        120..600 => format!("{}m{}s", s / 60, s % 60).replace("m0s", "m"),
        600..10_800 => format!("{}m", s / 60),
        10_800..172_800 => format!("{}h{}m", s / 3600, (s % 3600) / 60).replace("h0m", "h"),
        _ => format!("{}d{}h", s / 86_400, (s % 86_400) / 3600).replace("d0h", "d"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_and_ages() {
        let o = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {"a": [{"b": 3}]}});
        assert_eq!(json_path(&o, ".status.conditions[?(@.type==\"Ready\")].status"), Some(&json!("True")));
        assert_eq!(json_path(&o, ".spec.a[0].b"), Some(&json!(3)));
        let claim = json!({"metadata": {"labels": {"karpenter.sh/capacity-type": "spot", "topology.kubernetes.io/zone": "us-east-1a"}}});
        assert_eq!(json_path(&claim, r".metadata.labels.karpenter\.sh/capacity-type"), Some(&json!("spot")));
        assert_eq!(json_path(&claim, r".metadata.labels.topology\.kubernetes\.io/zone"), Some(&json!("us-east-1a")));
        assert_eq!(
            json_path(&claim, ".metadata.labels.karpenter.sh/capacity-type"),
            None,
            "an unescaped dot is a path step"
        );
        let conds = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Drifted", "status": "False", "reason": {"code": 3}}]}});
        assert_eq!(json_path(&conds, ".status.conditions[?(@.type==\"Drifted\")].status"), Some(&json!("False")));
        assert_eq!(json_path(&conds, ".status.conditions[?(@.type!='Ready')].type"), Some(&json!("Drifted")));
        assert_eq!(json_path(&conds, ".status.conditions[?(@.reason.code==3)].type"), Some(&json!("Drifted")));
        assert_eq!(json_path(&conds, ".status.conditions[?(@.type==\"Gone\")].status"), None);
        let now = Duration::from_secs(3600);
        assert_eq!(printer_cell("date", Some(&json!("2026-01-01T00:30:00Z")), now), json!("30m"));
        assert_eq!(printer_cell("integer", Some(&json!(3)), now), json!(3));
        assert_eq!(printer_cell("string", Some(&json!(3)), now), json!("3"));
        assert_eq!(printer_cell("string", None, now), Value::Null);
        assert_eq!(human(Duration::from_secs(59)), "59s");
        assert_eq!(human(Duration::from_secs(300)), "5m");
        assert_eq!(human(Duration::from_secs(7200)), "120m");
        assert_eq!(human(Duration::from_secs(90_000)), "25h");
    }
}
