//! Two separate `dovetail run` processes with the same full-world scenario and seed write
//! byte-identical reports.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(seed: u64, report: &Path) -> String {
    let scenario: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/spot-storm.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["run", scenario.to_str().unwrap(), "--seed", &seed.to_string()])
        .arg("--report")
        .arg(report)
        .output()
        .expect("dovetail runs");
    assert!(out.status.success(), "dovetail run failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("# expanded scenario") && stdout.contains("kind: spotInterruption"), "{stdout}");
    std::fs::read_to_string(report).unwrap()
}

#[test]
fn same_seed_same_report_across_processes() {
    let dir = std::env::temp_dir().join(format!("dovetail-scenario-determinism-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = run(5, &dir.join("a.json"));
    let b = run(5, &dir.join("b.json"));
    assert_eq!(a, b, "same seed, different reports");
    let report: serde_json::Value = serde_json::from_str(&a).unwrap();
    for field in
        ["traceFingerprint", "invariants", "cost", "pending", "launches", "interruptions", "disruptions", "apiCalls"]
    {
        assert!(report.get(field).is_some(), "{field} missing");
    }
    std::fs::remove_dir_all(&dir).ok();
}
