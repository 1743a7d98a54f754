//! Same scenario + same seed ⇒ byte-identical report and trace, in separate processes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/apiserver-smoke.yaml")
}

fn run(seed: u64, dir: &Path, tag: &str) -> (String, String) {
    let report = dir.join(format!("{tag}.json"));
    let trace = dir.join(format!("{tag}.trace"));
    let out = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["run", scenario().to_str().unwrap(), "--seed", &seed.to_string()])
        .arg("--report")
        .arg(&report)
        .arg("--trace")
        .arg(&trace)
        .output()
        .expect("dovetail runs");
    assert!(out.status.success(), "dovetail run failed: {}", String::from_utf8_lossy(&out.stderr));
    (std::fs::read_to_string(report).unwrap(), std::fs::read_to_string(trace).unwrap())
}

#[test]
fn same_seed_gives_byte_identical_reports_across_processes() {
    let dir = std::env::temp_dir().join(format!("dovetail-determinism-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (report_a, trace_a) = run(7, &dir, "a");
    let (report_b, trace_b) = run(7, &dir, "b");
    let (report_c, trace_c) = run(8, &dir, "c");
    assert_eq!(report_a, report_b, "same seed, different report");
    assert_eq!(trace_a, trace_b, "same seed, different trace");
    assert_ne!(trace_a, trace_c, "different seeds should differ (generateName suffixes and jittered times are seeded)");
    assert_ne!(report_a, report_c);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn smoke_trace_is_stable() {
    let loaded = dovetail_sim::scenario::Loaded::from_file(&scenario()).unwrap();
    let outcome = dovetail_sim::run::run(&loaded, 1).unwrap();
    assert!(outcome.report.failures.is_empty(), "{:?}", outcome.report.failures);
    insta::assert_snapshot!("apiserver_smoke_seed_1_trace", outcome.trace.render());
    let mut report = serde_json::to_value(&outcome.report).unwrap();
    report["reproduce"] = serde_json::json!("<path-dependent>");
    insta::assert_json_snapshot!("apiserver_smoke_seed_1_report", report);
}
