//! PriorityClasses as the scenario's `priorityClass` entries (name and value). The format
//! has no `globalDefault` or `preemptionPolicy`; they are listed.

use serde_json::Value;

use super::dump::Item;
use super::error::ImportError;
use super::findings::Findings;
use super::names::Names;
use crate::scenario::workloads::{PriorityClassSpec, Workload};

/// Converts one PriorityClass.
pub fn convert(item: &Item, names: &mut Names, findings: &mut Findings) -> Result<Workload, ImportError> {
    let object = item.label();
    let value = item
        .object
        .get("value")
        .ok_or_else(|| item.error("value", "Required value"))?
        .as_i64()
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| item.error("value", "must be a 32-bit integer"))?;
    if item.object.get("globalDefault").and_then(Value::as_bool) == Some(true) {
        findings.unsupported(
            &object,
            "globalDefault",
            "not in the scenario format: pods without a priorityClassName get priority 0",
        );
    }
    if let Some(p) =
        item.object.get("preemptionPolicy").and_then(Value::as_str).filter(|p| *p != "PreemptLowerPriority")
    {
        findings.unsupported(&object, "preemptionPolicy", format!("{p} is not in the scenario format"));
    }
    let name = names.claim("priorityClass", item.name(), "", &object, findings);
    Ok(Workload::PriorityClass(PriorityClassSpec { name, value }))
}
