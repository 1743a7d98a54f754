//! `dovetail` exits by failure class: an invalid scenario is exit 2, told apart from a
//! violated invariant (1) and a crash (3), so `dovetail sweep` and scripts can tell them
//! apart.

use std::path::PathBuf;
use std::process::Command;

fn dovetail(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dovetail")).args(args).output().expect("dovetail runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn temp_scenario(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("dovetail-exit-codes-{name}-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_invalid_scenario_exits_2_with_the_reason() {
    let path = temp_scenario("invalid", "name: broken\nduration: 1m\ncontroller: none\nbogus: 1\n");
    let (code, stderr) = dovetail(&["run", path.to_str().unwrap(), "--seed", "1"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("error: invalid input"), "{stderr}");
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_missing_scenario_file_exits_2() {
    let (code, stderr) = dovetail(&["run", "/nonexistent/dovetail-scenario.yaml"]);
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn a_sweep_of_an_invalid_scenario_exits_2_and_names_it() {
    let path = temp_scenario("sweep-invalid", "name: broken\nduration: nonsense\n");
    let out_dir = std::env::temp_dir().join(format!("dovetail-exit-codes-sweep-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["sweep", path.to_str().unwrap(), "--seeds", "1", "--jobs", "1", "--out"])
        .arg(&out_dir)
        .output()
        .expect("dovetail runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("invalid scenario:"), "{stdout}");
    assert!(stdout.contains("reproduce: dovetail run "), "{stdout}");
    std::fs::remove_file(&path).ok();
    std::fs::remove_dir_all(&out_dir).ok();
}
