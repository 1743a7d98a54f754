//! Failing seeds, persisted and replayed first, like proptest's regression files.
//!
//! When `cargo test` finds a seed that breaks a scenario, the seed is appended to
//! `<dir>/<scenario>.seeds` (by default `scenarios/regressions/`). Commit the file: every
//! later run replays those seeds before the fixed ones, so a fixed bug stays fixed and a
//! flaky one is caught at once. The format is one seed per line, `#` starts a comment:
//!
//! ```text
//! # Seeds that failed scenarios/spot-storm.yaml. Replayed first by tests/scenarios.rs.
//! 17  # pdb-respected at 12m3s: PodDisruptionBudget default/web
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The reproduce line tests print beside a failing seed (the one format, from the world).
pub use crate::world::reproduce_command;

/// A number that changes with the git commit of `repo` and the UTC day, for tests that
/// rotate which stories or scenarios a run covers (so CI sweeps more of them over time),
/// with a phrase saying where it came from. Outside any simulation: it only picks what runs.
pub fn commit_and_day_hash(repo: &Path) -> (u64, String) {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "no-commit".into());
    #[allow(clippy::disallowed_methods)]
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let day = now.as_secs() / 86_400;
    // FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
    let hash = format!("{commit}/{day}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (hash, format!("commit {} and UTC day {day}", &commit[..commit.len().min(12)]))
}

/// The regression file of a scenario: `<dir>/<scenario stem>.seeds`.
pub fn seeds_file(dir: &Path, scenario: &str) -> PathBuf {
    dir.join(format!("{scenario}.seeds"))
}

/// A regression file line that is not a seed.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: `{text}` is not a seed (one unsigned integer per line, `#` comments)")]
pub struct BadLine {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// The offending text.
    pub text: String,
}

/// The seeds recorded for `scenario`, in file order; none if there is no file.
pub fn load(dir: &Path, scenario: &str) -> Result<Vec<u64>, BadLine> {
    let path = seeds_file(dir, scenario);
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(Vec::new()) };
    parse(&text, &path)
}

fn parse(text: &str, path: &Path) -> Result<Vec<u64>, BadLine> {
    let mut seeds = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let seed =
            body.parse::<u64>().map_err(|_| BadLine { path: path.into(), line: i + 1, text: body.to_string() })?;
        if !seeds.contains(&seed) {
            seeds.push(seed);
        }
    }
    Ok(seeds)
}

/// Records a failing seed with a one-line note (no-op if it is already recorded).
pub fn record(dir: &Path, scenario: &str, seed: u64, note: &str) -> std::io::Result<()> {
    let path = seeds_file(dir, scenario);
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    if parse(&existing, &path).is_ok_and(|s| s.contains(&seed)) {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    if existing.is_empty() {
        writeln!(
            f,
            "# Seeds that failed scenario `{scenario}`, replayed first by tests/scenarios.rs.\n\
             # Commit this file; delete a line only when its seed has passed for good."
        )?;
    }
    let note = note.replace(['\n', '\r'], " ");
    writeln!(f, "{seed}  # {}", note.chars().take(200).collect::<String>())
}

/// The seeds to run for a scenario: its recorded regressions first, then `fixed`, each once.
pub fn seeds_to_run(dir: &Path, scenario: &str, fixed: &[u64]) -> Result<Vec<u64>, BadLine> {
    let mut seeds = load(dir, scenario)?;
    for s in fixed {
        if !seeds.contains(s) {
            seeds.push(*s);
        }
    }
    Ok(seeds)
}

/// What makes a report a failure: invariant violations and failed steps, one line each.
pub fn problems(report: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(vs) = report.pointer("/invariants/violations").and_then(Value::as_array) {
        for v in vs {
            let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
            let objects: Vec<&str> =
                v.get("objects").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            out.push(format!("{} at {}: {} [{}]", s("invariant"), s("at"), s("message"), objects.join(", ")));
        }
    }
    if let Some(fs) = report.get("failures").and_then(Value::as_array) {
        out.extend(fs.iter().map(|f| f.as_str().map_or_else(|| f.to_string(), str::to_string)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dovetail-regressions-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn recorded_seeds_are_replayed_first_and_once() {
        let dir = temp_dir("replay");
        assert_eq!(seeds_to_run(&dir, "storm", &[1, 2, 3]).unwrap(), vec![1, 2, 3]);
        record(&dir, "storm", 17, "pdb at 12m3s:\nPod default/web-1").unwrap();
        record(&dir, "storm", 2, "stranded").unwrap();
        record(&dir, "storm", 17, "again").unwrap();
        assert_eq!(seeds_to_run(&dir, "storm", &[1, 2, 3]).unwrap(), vec![17, 2, 1, 3]);
        let text = std::fs::read_to_string(seeds_file(&dir, "storm")).unwrap();
        assert!(text.starts_with("# Seeds that failed scenario `storm`"), "{text}");
        assert!(text.contains("17  # pdb at 12m3s: Pod default/web-1\n"), "{text}");
        assert_eq!(text.matches("17 ").count(), 1, "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bad_line_names_file_and_line() {
        let e = parse("# header\n5\nfive # typo\n", Path::new("x.seeds")).unwrap_err();
        assert_eq!(e.to_string(), "x.seeds:3: `five` is not a seed (one unsigned integer per line, `#` comments)");
    }

    #[test]
    fn problems_lists_violations_and_failed_steps() {
        let report = serde_json::json!({
            "invariants": {"violations": [{
                "invariant": "pdb", "at": "12m3s", "objects": ["Pod default/web-1", "PodDisruptionBudget default/web"],
                "message": "2 of 3 ready, budget 2", "tracePosition": 88
            }]},
            "failures": ["at 10s: apply NodePool broken succeeded, expected HTTP 422"]
        });
        assert_eq!(
            problems(&report),
            vec![
                "pdb at 12m3s: 2 of 3 ready, budget 2 [Pod default/web-1, PodDisruptionBudget default/web]".to_string(),
                "at 10s: apply NodePool broken succeeded, expected HTTP 422".to_string(),
            ]
        );
        assert!(problems(&serde_json::json!({"scenario": "x"})).is_empty());
    }
}
