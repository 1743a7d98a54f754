//! Field labels: which fields the real API server indexes for each kind, and the string
//! value a field label has on an object.

use serde_json::Value;

const META_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// The field labels the real API server accepts per built-in kind (the field label
/// conversion functions registered in `pkg/apis/*/v1/conversion.go`); other kinds accept
/// `metadata.name` and `metadata.namespace` (`runtime.DefaultMetaV1FieldSelectorConversion`).
pub fn supported_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            // Old v1 clients' name for spec.nodeName.
            "spec.host",
        ],
        "Node" => &["metadata.name", "spec.unschedulable"],
        "Namespace" => &["metadata.name", "status.phase"],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ],
        "Service" => &["metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"],
        "ReplicaSet" | "ReplicationController" => &["metadata.name", "metadata.namespace", "status.replicas"],
        "Job" => &["metadata.name", "metadata.namespace", "status.successful"],
        "Secret" => &["metadata.name", "metadata.namespace", "type"],
        _ => META_FIELDS,
    }
}

/// The string value a field label has on an object, as the registry's `GetAttrs` computes
/// it: absent fields are `""`, booleans and integers print in Go form, and some fields have
/// kind-specific sources or defaults (a Node's `spec.unschedulable` is `"false"` when unset,
/// a Pod's `status.podIP` is its first `podIPs` entry, an Event's `source` is
/// `source.component`, a Job's `status.successful` is `status.succeeded`).
pub fn field_value(kind: &str, object: &Value, field: &str) -> String {
    match (kind, field) {
        ("Node", "spec.unschedulable") | ("Pod", "spec.hostNetwork") => {
            path_string(object, field).unwrap_or_else(|| "false".to_string())
        }
        ("Pod", "spec.host") => path_string(object, "spec.nodeName").unwrap_or_default(),
        ("Pod", "status.podIP" | "status.podIPs") => object
            .pointer("/status/podIPs/0/ip")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| path_string(object, "status.podIP"))
            .unwrap_or_default(),
        ("Event", "source") => path_string(object, "source.component").unwrap_or_default(),
        ("Job", "status.successful") => path_string(object, "status.succeeded").unwrap_or_else(|| "0".to_string()),
        ("ReplicaSet" | "ReplicationController", "status.replicas") => {
            path_string(object, field).unwrap_or_else(|| "0".to_string())
        }
        _ => path_string(object, field).unwrap_or_default(),
    }
}

/// Looks up a dotted path and renders a scalar; objects, arrays and null count as absent.
fn path_string(object: &Value, field: &str) -> Option<String> {
    let mut current = object;
    for part in field.split('.') {
        current = current.get(part)?;
    }
    match current {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
