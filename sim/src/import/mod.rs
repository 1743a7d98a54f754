//! `dovetail import`: a cluster dump (`kubectl get nodepools,ec2nodeclasses,nodeoverlays,
//! deployments,statefulsets,daemonsets,jobs,pdbs,priorityclasses -A -o yaml`, or several
//! files of it) as a scenario the user can run: NodePools and EC2NodeClasses as
//! `manifests:` ([`manifests`]), workloads with their pod shapes, replicas, spread,
//! affinity, tolerations, PDBs and priorities as `workloads:`, and a default fault mix
//! ([`faults`]). What has no place in the format is listed ([`findings`]) on stderr and as
//! comments at the top of the scenario, never dropped silently. The result is loaded with
//! the scenario loader before it is returned. The same input gives the same bytes.

pub mod dump;
pub mod error;
pub mod faults;
pub mod findings;
pub mod live;
pub mod manifests;
pub mod names;
pub mod output;
pub mod pdbs;
pub mod pods;
pub mod priority_classes;
pub mod requests;
pub mod workloads;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub use error::ImportError;
pub use findings::{Class, Finding, Findings};

use dump::Item;
use names::Names;

/// One dump file's contents.
#[derive(Clone, Debug)]
pub struct Input {
    /// Where it came from (named in errors; its file name is written in the header).
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// How to import.
#[derive(Clone, Debug)]
pub struct Options {
    /// The scenario's name.
    pub name: String,
    /// Add the default fault mix.
    pub faults: bool,
}

/// An imported scenario.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The scenario file's text (header comments included); it loads.
    pub text: String,
    /// What was not carried over, changed or assumed.
    pub findings: Findings,
    /// Imported objects by kind.
    pub counts: BTreeMap<String, usize>,
}

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The dump is malformed.
    #[error("{0}")]
    Dump(#[from] ImportError),
    /// The scenario written from it does not load (a bug in the importer, or a value the
    /// loader refuses); the loader's message names the field.
    #[error("the imported scenario does not load: {0}")]
    Load(#[from] crate::scenario::LoadError),
}

const NODE_POOL: (&str, &str) = ("karpenter.sh", "NodePool");
const NODE_CLASS: (&str, &str) = ("karpenter.k8s.aws", "EC2NodeClass");

/// The API group of an `apiVersion`.
fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Imports `inputs` (module docs). `output` names the scenario in the loader's errors.
pub fn import(inputs: &[Input], options: &Options, output: &Path) -> Result<Imported, Failure> {
    let mut items: Vec<Item> = Vec::new();
    for input in inputs {
        items.extend(dump::parse(&input.path, &input.text)?);
    }
    let mut findings = Findings::default();
    let mut names = Names::default();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut manifests: Vec<(&Item, Value)> = Vec::new();
    let mut priority: Vec<crate::scenario::Workload> = Vec::new();
    let mut imported: Vec<workloads::Imported> = Vec::new();
    let mut pdb_items: Vec<&Item> = Vec::new();
    for item in &items {
        let api_version = item.object["apiVersion"].as_str().unwrap_or("");
        let kind = (group(api_version), item.kind());
        let object = item.label();
        match kind {
            NODE_POOL | NODE_CLASS => {
                let mut m = item.object.clone();
                manifests::strip(&mut m);
                if kind == NODE_CLASS {
                    manifests::fit_to_cloud(&mut m, &object, &mut findings);
                }
                if let Some((first, existing)) =
                    manifests.iter().find(|(i, _)| i.kind() == item.kind() && i.name() == item.name())
                {
                    if *existing != m {
                        return Err(item
                            .error(
                                "metadata.name",
                                format!(
                                    "a different {} named {} is already in {} {}",
                                    item.kind(),
                                    item.name(),
                                    first.file.display(),
                                    first.at
                                ),
                            )
                            .into());
                    }
                    findings.unsupported(
                        &object,
                        "*",
                        format!("the same object is also in {} {}: imported once", first.file.display(), first.at),
                    );
                    continue;
                }
                *counts.entry(item.kind().to_string()).or_default() += 1;
                manifests.push((item, m));
            }
            ("karpenter.sh", "NodeOverlay") => findings.unsupported(
                &object,
                "*",
                "the simulated controller runs with the NodeOverlay feature gate off (Karpenter's default)",
            ),
            ("scheduling.k8s.io", "PriorityClass") => {
                priority.push(priority_classes::convert(item, &mut names, &mut findings)?);
                *counts.entry("PriorityClass".into()).or_default() += 1;
            }
            ("apps", "Deployment" | "StatefulSet" | "DaemonSet") | ("batch", "Job") => {
                if let Some(w) = workloads::convert(item, &mut names, &mut findings)? {
                    imported.push(w);
                    *counts.entry(item.kind().to_string()).or_default() += 1;
                }
            }
            ("policy", "PodDisruptionBudget") => pdb_items.push(item),
            _ => findings.unsupported(&object, "*", "this kind is not imported"),
        }
    }
    let mut pdbs = Vec::new();
    for item in pdb_items {
        if let Some(p) = pdbs::convert(item, &imported, &mut names, &mut findings)? {
            pdbs.push(p);
            *counts.entry("PodDisruptionBudget".into()).or_default() += 1;
        }
    }
    if !manifests.iter().any(|(i, _)| i.kind() == NODE_POOL.1) {
        let files: Vec<String> = inputs.iter().map(|i| i.path.display().to_string()).collect();
        return Err(ImportError::file(
            files.join(", "),
            "no NodePool (karpenter.sh/v1) in the dump: nothing would launch nodes; add a file with your NodePools and EC2NodeClasses",
        )
        .into());
    }
    // Namespaces the workloads and PDBs live in, beyond those every cluster starts with:
    // the simulated API server refuses objects in a namespace that does not exist.
    let namespaces: std::collections::BTreeSet<&str> = imported
        .iter()
        .map(|w| w.namespace.as_str())
        .chain(pdbs.iter().filter_map(|p| match p {
            crate::scenario::Workload::Pdb(p) => Some(p.namespace.as_str()),
            _ => None,
        }))
        .filter(|ns| !crate::apiserver::store::INITIAL_NAMESPACES.contains(ns))
        .collect();
    let namespace_manifests: Vec<Value> = namespaces
        .iter()
        .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        .collect();
    let workloads: Vec<crate::scenario::Workload> =
        priority.into_iter().chain(imported.into_iter().map(|w| w.workload)).chain(pdbs).collect();
    let (fault_block, duration) = faults::block(options.faults);
    let files: Vec<String> = inputs
        .iter()
        .map(|i| i.path.file_name().map_or_else(|| i.path.display().to_string(), |n| n.to_string_lossy().into_owned()))
        .collect();
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let body = json!({
        "name": options.name,
        "description": format!("imported from {} ({})", files.join(", "), summary.join(", ")),
        "duration": duration.to_string(),
        "manifests": namespace_manifests.into_iter().chain(manifests.into_iter().map(|(_, m)| m)).collect::<Vec<_>>(),
        "workloads": serde_json::to_value(&workloads).expect("workload entries serialise"),
    });
    let yaml = serde_saphyr::to_string(&body).expect("a JSON value serialises as YAML");
    let mut header = format!(
        "Imported by `dovetail import` from {}.\n\
         Workloads keep their pod shapes (requests summed as kube-scheduler does), replicas, labels,\n\
         spread, affinity, tolerations, node selectors, priority classes and do-not-disrupt;\n\
         fields with no effect on scheduling or disruption in the simulation (images, commands,\n\
         env, probes, security contexts, volumes without claims, rollout strategies) are not\n\
         carried over and not listed below.\n",
        files.join(", ")
    );
    let listed = findings.render("");
    if listed.is_empty() {
        header.push_str("\nEverything else was carried over.\n");
    } else {
        header.push('\n');
        header.push_str(&listed);
    }
    let text = format!("{}\n{yaml}{fault_block}", output::comment(&header));
    output::validate(output, &text)?;
    Ok(Imported { text, findings, counts })
}
