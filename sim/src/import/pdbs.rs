//! PodDisruptionBudgets as the scenario's `pdb` entries. A PDB whose `matchLabels` select
//! the pods of exactly one imported workload in its namespace becomes
//! `workload: <name>` (the format's own label); otherwise its `matchLabels` are kept as they
//! are, which select the same imported pods because their labels are carried over.

use std::collections::BTreeMap;

use serde_json::Value;

use super::dump::Item;
use super::error::ImportError;
use super::findings::{Class, Findings};
use super::names::Names;
use super::workloads::Imported;
use crate::scenario::workloads::{PdbSpec, Workload};

/// Converts one PDB; `Ok(None)` when it cannot be expressed (listed).
pub fn convert(
    item: &Item,
    workloads: &[Imported],
    names: &mut Names,
    findings: &mut Findings,
) -> Result<Option<Workload>, ImportError> {
    let object = item.label();
    let namespace = item.namespace().unwrap_or("default").to_string();
    let spec = item.object.get("spec").ok_or_else(|| item.error("spec", "Required value"))?;
    let budget = |field: &str| -> Result<Option<Value>, ImportError> {
        match spec.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v @ Value::Number(n)) if n.as_u64().is_some() => Ok(Some(v.clone())),
            Some(Value::String(s)) if s.ends_with('%') && s[..s.len() - 1].parse::<u32>().is_ok() => {
                Ok(Some(Value::String(s.clone())))
            }
            Some(v) => Err(item.error(
                format!("spec.{field}"),
                format!("{v} is neither a non-negative integer nor a percentage like \"20%\""),
            )),
        }
    };
    let (max_unavailable, min_available) = (budget("maxUnavailable")?, budget("minAvailable")?);
    if max_unavailable.is_some() && min_available.is_some() {
        return Err(item.error("spec", "minAvailable and maxUnavailable are both set (the API server refuses this)"));
    }
    if max_unavailable.is_none() && min_available.is_none() {
        findings.unsupported(&object, "spec", "neither minAvailable nor maxUnavailable is set: not imported");
        return Ok(None);
    }
    if let Some(p) = spec.get("unhealthyPodEvictionPolicy").filter(|v| !v.is_null()) {
        findings.unsupported(&object, "spec.unhealthyPodEvictionPolicy", format!("{p} is not in the scenario format"));
    }
    let selector = spec.get("selector");
    if selector.and_then(|s| s.get("matchExpressions")).and_then(Value::as_array).is_some_and(|e| !e.is_empty()) {
        findings.unsupported(
            &object,
            "spec.selector.matchExpressions",
            "the format takes matchLabels only: not imported",
        );
        return Ok(None);
    }
    let match_labels: BTreeMap<String, String> = match selector.and_then(|s| s.get("matchLabels")) {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|s| (k.clone(), s.to_string()))
                    .ok_or_else(|| item.error(format!("spec.selector.matchLabels.{k}"), "must be a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(item.error("spec.selector.matchLabels", "must be a mapping")),
    };
    let matched: Vec<&Imported> = workloads
        .iter()
        .filter(|w| w.namespace == namespace && match_labels.iter().all(|(k, v)| w.original_labels.get(k) == Some(v)))
        .collect();
    let name = names.claim("pdb", item.name(), &namespace, &object, findings);
    let (workload, labels) = if let [only] = matched.as_slice()
        && !match_labels.is_empty()
    {
        (Some(only.workload.name().to_string()), None)
    } else {
        if matched.is_empty() {
            findings.push(
                Class::Changed,
                &object,
                "spec.selector",
                "selects no imported workload's pods: kept as it is",
            );
        } else if match_labels.contains_key("app") {
            findings.push(
                Class::Changed,
                &object,
                "spec.selector.matchLabels.app",
                "imported pods are labelled app: <workload name>: check it still selects them",
            );
        }
        (None, Some(match_labels))
    };
    Ok(Some(Workload::Pdb(PdbSpec { name, namespace, workload, match_labels: labels, max_unavailable, min_available })))
}
