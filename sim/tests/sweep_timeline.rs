//! `dovetail sweep` keeps one HTML timeline per failing seed, next to its report, and none
//! for a passing one; `dovetail run --html` writes the page and names it in its summary.

use std::path::{Path, PathBuf};
use std::process::Command;

/// spot-storm's cluster and workload without its faults, with `extra` appended.
fn scenario(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let storm = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/spot-storm.yaml"))
        .expect("spot-storm reads");
    let (cluster, _faults) = storm.split_once("\nfaults:").expect("spot-storm has faults");
    let cluster = cluster
        .lines()
        .map(|l| if l.starts_with("name:") { format!("name: {name}") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, format!("{cluster}\n{extra}")).expect("writing the scenario");
    path
}

#[test]
fn a_sweep_keeps_a_timeline_for_each_failing_seed_only() {
    let dir = std::env::temp_dir().join(format!("dovetail-sweep-timeline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Every pod waits longer than 1s for a node: strandedPods fires.
    let failing = scenario(&dir, "tight", "invariants: {strandedPods: {boundWithin: 1s}}\n");
    let passing = scenario(&dir, "calm", "");
    let out_dir = dir.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["sweep", "--seeds", "1", "--jobs", "1", "--out"])
        .arg(&out_dir)
        .arg(&failing)
        .arg(&passing)
        .output()
        .expect("dovetail sweep runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "one run violates an invariant:\n{stdout}\n{stderr}");
    let page = out_dir.join("tight/1.html");
    assert!(stdout.contains(&format!("timeline:  {}", page.display())), "the sweep names the page:\n{stdout}");
    let html = std::fs::read_to_string(&page).expect("the failing seed's timeline");
    assert!(html.contains("class=\"violation-marker\"") && html.contains("strandedPods"), "{}", page.display());
    assert!(out_dir.join("calm/1.json").is_file(), "the passing run has its report");
    assert!(!out_dir.join("calm/1.html").exists(), "the passing run's timeline is removed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_with_html_writes_the_page_and_names_it() {
    let dir = std::env::temp_dir().join(format!("dovetail-run-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = scenario(&dir, "calm", "");
    let page = dir.join("calm.html");
    let out = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["run", "--seed", "2", "--html"])
        .arg(&page)
        .arg(&path)
        .output()
        .expect("dovetail run runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("timeline     {}", page.display())), "{stdout}");
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("calm seed 2"), "{}", page.display());
    let _ = std::fs::remove_dir_all(&dir);
}
