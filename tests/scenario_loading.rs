//! Scenario files load strictly: unknown fields, kinds and values are errors that name the
//! file, the line and column, the field and the allowed values; the expanded scenario is a
//! pure function of the seed.

use std::path::{Path, PathBuf};

use dovetail_sim::scenario::{LoadError, Loaded};

fn load(text: &str) -> Result<Loaded, String> {
    Loaded::from_str(Path::new("scenarios/test.yaml"), text).map_err(|e| e.to_string())
}

const HEADER: &str = "name: t\nduration: 10m\n";

#[test]
fn an_unknown_field_names_file_line_column_and_the_allowed_fields() {
    let e = load(&format!("{HEADER}workloads:\n  - deployment:\n      name: web\n      replicas: 3\n      pod: {{cpu: 1, memory: 1Gi, doNotDisrupted: true}}\n")).unwrap_err();
    assert!(e.starts_with("scenarios/test.yaml: "), "{e}");
    assert!(e.contains("line 7"), "{e}");
    assert!(e.contains("column"), "{e}");
    assert!(e.contains("doNotDisrupted") && e.contains("doNotDisrupt"), "{e}");
}

#[test]
fn an_unknown_workload_kind_lists_the_kinds() {
    let e = load(&format!("{HEADER}workloads:\n  - deploymnet: {{name: web}}\n")).unwrap_err();
    assert!(e.contains("line 4"), "{e}");
    assert!(e.contains("deploymnet") && e.contains("deployment") && e.contains("daemonSet"), "{e}");
}

#[test]
fn a_misspelt_distribution_lists_the_forms() {
    let e = load(&format!(
        "{HEADER}workloads:\n  - deployment:\n      name: web\n      replicas: 3\n      pod:\n        cpu: {{unifrom: [1, 2]}}\n        memory: 1Gi\n"
    ))
    .unwrap_err();
    assert!(e.contains("line 8"), "{e}");
    assert!(e.contains("unifrom") && e.contains("uniform") && e.contains("choice"), "{e}");
}

#[test]
fn an_unknown_fault_field_is_an_error_with_its_location() {
    let e = load(&format!("{HEADER}faults:\n  - at: 1m\n    zoneOutag: {{zone: us-east-1a}}\n")).unwrap_err();
    assert!(e.contains("line 5"), "{e}");
    assert!(e.contains("zoneOutag") && e.contains("zoneOutage"), "{e}");
}

#[test]
fn semantic_errors_name_the_field_and_the_allowed_values() {
    let e =
        load(&format!("{HEADER}faults:\n  - at: 1m\n    for: 1m\n    zoneOutage: {{zone: us-east-9z}}\n")).unwrap_err();
    assert!(e.contains("faults[0].zoneOutage") && e.contains("us-east-9z") && e.contains("us-east-1a"), "{e}");
    let e = load(&format!("{HEADER}faults:\n  - at: 1m\n    leaderFailover: {{}}\n")).unwrap_err();
    assert!(e.contains("replicas: 2"), "{e}");
    let e =
        load(&format!("{HEADER}faults:\n  - at: 1m\n    partition: {{between: [controller, etcd]}}\n")).unwrap_err();
    assert!(e.contains("etcd") && e.contains("apiserver"), "{e}");
    let e = load(&format!("{HEADER}controller: nope\n")).unwrap_err();
    assert!(e.contains("line 3") && e.contains("none"), "{e}");
    let e = load(&format!("{HEADER}faults:\n  - at: 1m\n")).unwrap_err();
    assert!(e.contains("faults[0]: no fault kind set") && e.contains("spotInterruption"), "{e}");
}

#[test]
fn a_wrong_value_is_a_typed_error_naming_the_file_and_the_field() {
    let text = format!(
        "{HEADER}workloads:\n  - deployment: {{name: web, replicas: 1, pod: {{cpu: {{uniform: [2, 1]}}, memory: 1Gi}}}}\n"
    );
    let e = Loaded::from_str(Path::new("scenarios/test.yaml"), &text).unwrap_err();
    let LoadError::Field { path, error } = &e else { panic!("not a field error: {e}") };
    assert_eq!(path, Path::new("scenarios/test.yaml"));
    assert_eq!(error.field, "workloads[0] (web).pod.cpu.uniform");
    assert!(error.problem.contains("lower bound"), "{error}");
    assert!(e.to_string().starts_with("scenarios/test.yaml: workloads[0] (web).pod.cpu.uniform: "), "{e}");
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name)
}

#[test]
fn expanded_output_is_a_function_of_the_seed() {
    let loaded = Loaded::from_file(&scenario("steady-web.yaml")).unwrap();
    let a = loaded.expanded(3);
    assert_eq!(a, Loaded::from_file(&scenario("steady-web.yaml")).unwrap().expanded(3));
    assert_ne!(a, loaded.expanded(4));
    // Every value the seed drew is printed.
    for needle in ["seed: 3", "swarm:", "cpu:", "memory:", "replicas:", "at:"] {
        assert!(a.contains(needle), "{needle} missing from\n{a}");
    }
    let storm = Loaded::from_file(&scenario("spot-storm.yaml")).unwrap().expanded(1);
    assert!(storm.contains("kind: spotInterruption") && storm.contains("fraction:"), "{storm}");
}

#[test]
fn every_shipped_scenario_loads() {
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            Loaded::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
