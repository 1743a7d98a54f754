//! `dovetail import`: cluster dumps become scenarios that load, run end to end with the
//! invariants judged, list what they could not carry over, fail clearly on bad input, and
//! come out byte-identical from the same input.

use std::path::{Path, PathBuf};
use std::process::Command;

use dovetail_sim::import::{self, Class, Input, Options};
use dovetail_sim::run::run;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/import").join(name)
}

/// `shared/data/karpenter-examples`, found the way the fake cloud finds `shared/data/ec2`
/// (beside the clone, or `$DOVETAIL_EC2_DATA/..`).
fn examples_dir() -> PathBuf {
    dovetail_fakecloud::data_dir().expect("shared/data/ec2").join("../karpenter-examples")
}

fn input(path: &Path) -> Input {
    Input { path: path.into(), text: std::fs::read_to_string(path).unwrap() }
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dovetail-import-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Imports `files` into `dir/<name>.yaml` through the library and loads the result.
fn import_to(dir: &Path, name: &str, files: &[PathBuf]) -> (import::Imported, PathBuf) {
    let out = dir.join(format!("{name}.yaml"));
    let inputs: Vec<Input> = files.iter().map(|f| input(f)).collect();
    let imported = import::import(&inputs, &Options { name: name.into(), faults: true }, &out)
        .unwrap_or_else(|e| panic!("importing {files:?}: {e}"));
    import::output::write_atomic(&out, &imported.text).unwrap();
    (imported, out)
}

fn example_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .expect("shared/data/karpenter-examples")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_fixture_cluster_imports_runs_and_lists_what_it_cannot_simulate() {
    let dir = scratch("fixture");
    let (imported, out) = import_to(&dir, "my-cluster", &[fixture("karpenter.yaml"), fixture("workloads.yaml")]);
    let unsupported: Vec<String> = imported.findings.of(Class::Unsupported).map(ToString::to_string).collect();
    for expected in [
        "NodeOverlay/spot-discount: *:",
        "PodDisruptionBudget/shop/shop-all: spec.selector.matchExpressions:",
        "PodDisruptionBudget/shop/cache: spec.unhealthyPodEvictionPolicy:",
        "StatefulSet/shop/cache: kind:",
        "StatefulSet/shop/cache: spec.volumeClaimTemplates:",
        "DaemonSet/monitoring/node-exporter: spec.template.spec.hostNetwork:",
        "DaemonSet/monitoring/node-exporter: spec.template.spec.containers[0].ports[0].hostPort:",
        "Job/shop/migrate-v3: *:",
    ] {
        assert!(unsupported.iter().any(|u| u.starts_with(expected)), "{expected} not listed in {unsupported:#?}");
    }
    // Everything listed is also at the top of the file, as comments.
    for u in &unsupported {
        assert!(imported.text.contains(&format!("#   {u}\n")), "{u} is not in the header");
    }
    let text = &imported.text;
    assert!(!text.contains("managedFields") && !text.contains("resourceVersion") && !text.contains("last-applied"));
    assert!(!text.contains("status:"), "status stripped");
    assert!(text.contains("karpenter.sh/discovery: dovetail"), "selectors fitted to the simulated cloud");
    // checkout: max(app 1 CPU, init 1.5 CPU) = 1500m; web: 500m + 100m = 600m.
    assert!(text.contains("cpu: 1500m"), "{text}");
    assert!(text.contains("cpu: 600m"), "{text}");
    assert!(text.contains("doNotDisrupt: true"));
    assert!(text.contains("workload: web") && text.contains("workload: cache"), "PDBs matched to their workloads");
    assert_eq!(imported.counts.get("Deployment"), Some(&2));
    assert_eq!(imported.counts.get("StatefulSet"), Some(&1));
    assert_eq!(imported.counts.get("Job"), Some(&1), "the completed Job is not replayed");

    let loaded = dovetail_sim::scenario::Loaded::from_file(&out).unwrap();
    let report = run(&loaded, 1).unwrap().report;
    eprintln!("{}", report.summary());
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert!(!report.invariants.checked.is_empty(), "invariants were judged");
    assert!(report.invariants.violations.is_empty(), "{:#?}", report.invariants.violations);
    assert!(report.launches >= 1, "no instance launched");
    // 6 web + 3 checkout + 3 cache + 4 report Job pods at least (plus DaemonSet pods).
    assert!(report.pending.pods >= 16, "{:?}", report.pending);
    assert_eq!(report.faults.get("spotInterruption"), Some(&1), "{:?}", report.faults);
}

#[test]
fn every_upstream_example_with_the_workload_dump_imports_and_loads() {
    let dir = scratch("examples");
    let files = example_files();
    assert!(files.len() >= 20, "{files:?}");
    for f in &files {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let (imported, out) = import_to(&dir, &stem, &[f.clone(), fixture("workloads.yaml")]);
        assert!(imported.counts.get("NodePool").is_some_and(|n| *n >= 1), "{stem}: {:?}", imported.counts);
        assert!(imported.counts.get("EC2NodeClass").is_some_and(|n| *n >= 1), "{stem}: {:?}", imported.counts);
        dovetail_sim::scenario::Loaded::from_file(&out).unwrap_or_else(|e| panic!("{stem}: {e}"));
    }
}

#[test]
fn upstream_examples_run_end_to_end_with_the_workload_dump() {
    let dir = scratch("examples-run");
    let only = std::env::var("DOVETAIL_IMPORT_EXAMPLES").ok();
    let mut ran = 0;
    let mut failed = Vec::new();
    for f in example_files() {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some(only) = &only
            && !only.split(',').any(|o| o == stem || o == "all")
        {
            continue;
        }
        if only.is_none() && !RUN_BY_DEFAULT.contains(&stem.as_str()) {
            continue;
        }
        let (_, out) = import_to(&dir, &stem, &[f.clone(), fixture("workloads.yaml")]);
        let loaded = dovetail_sim::scenario::Loaded::from_file(&out).unwrap();
        let report = run(&loaded, 1).unwrap().report;
        eprintln!("{stem}: {}", report.summary());
        if !report.failures.is_empty() || report.invariants.checked.is_empty() || report.launches == 0 {
            failed.push(format!(
                "{stem}: failures {:?}, {} invariants checked, {} launches",
                report.failures,
                report.invariants.checked.len(),
                report.launches
            ));
        }
        ran += 1;
    }
    assert!(ran >= 1, "no example selected");
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The examples run by default (each is a 41-minute simulated run, about 35 s of wall time
/// in the dev profile): the plain one, one whose AMI alias the importer rewrites, and
/// `instance-store-ephemeral-storage`, whose pool requires `instance-local-nvme Gt 300`. That
/// one found a controller bug (session 8): types without local NVMe were unconstrained on the
/// label instead of `DoesNotExist` (aws `computeRequirements`), so the controller launched
/// them and drifted each claim at once (33 `Drifted` disruptions, churn fired); it now runs
/// clean. Set `DOVETAIL_IMPORT_EXAMPLES=all` (or a comma-separated list of stems) for the
/// others; measured (session 8, seed 1, before the fix) on the first 12 in name order, the other
/// 11 passed with 18 invariants checked and none violated.
const RUN_BY_DEFAULT: &[&str] = &["general-purpose", "bottlerocket", "instance-store-ephemeral-storage"];

#[test]
fn importing_twice_gives_the_same_bytes_through_the_command_line() {
    let dir = scratch("twice");
    let mut outputs = Vec::new();
    for n in 0..2 {
        let out = dir.join(format!("run{n}/my-cluster.yaml"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_dovetail"))
            .arg("import")
            .arg(fixture("karpenter.yaml"))
            .arg(fixture("workloads.yaml"))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        assert!(stderr.contains("NodeOverlay/spot-discount"), "findings on stderr: {stderr}");
        assert!(stderr.contains("dovetail run"), "{stderr}");
        outputs.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(outputs[0], outputs[1]);
}

#[test]
fn a_malformed_dump_names_file_item_and_field_and_writes_nothing() {
    let dir = scratch("bad");
    let bad = dir.join("bad-dump.yaml");
    let good = std::fs::read_to_string(fixture("workloads.yaml")).unwrap();
    std::fs::write(&bad, good.replacen("cpu: 500m", "cpu: half-a-core", 1)).unwrap();
    let out = dir.join("never.yaml");
    let o = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .arg("import")
        .arg(fixture("karpenter.yaml"))
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "bad-dump.yaml: items[0] (Deployment default/web): spec.template.spec.containers[0].resources.requests.cpu"
        ),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary left behind");

    // Not YAML at all, and a dump without NodePools.
    std::fs::write(&bad, "items: [\n").unwrap();
    let e = import::import(&[input(&bad)], &Options { name: "x".into(), faults: true }, &out).unwrap_err();
    assert!(e.to_string().contains("bad-dump.yaml: not valid YAML"), "{e}");
    let e = import::import(&[input(&fixture("workloads.yaml"))], &Options { name: "x".into(), faults: true }, &out)
        .unwrap_err();
    assert!(e.to_string().contains("no NodePool"), "{e}");
}
