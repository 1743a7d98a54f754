//! What a sweep ran and how each run ended, kept as `<out>/sweep.json` next to the reports,
//! and the summary printed from it.
//!
//! A sweep split across machines (`--shard i/n`, e.g. a Kubernetes Indexed Job) leaves one
//! output directory per shard. The record is what lets `dovetail sweep --merge` put them
//! back together and prove the pieces cover the sweep exactly once: each shard names the
//! whole sweep (every scenario and seed), its slice, and the verdict of every run it did, so
//! a missing shard, a shard given twice or a run done twice is seen rather than silently
//! summed. A run that crashed writes no report, so only the record keeps its verdict.
//! Nothing in it depends on the wall clock: the same runs give the same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use dovetail_sim::world::reproduce_command;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::failure::Failure;
use super::gap_stats::GapStats;

/// The record's file name inside a sweep's `--out` directory.
pub const RECORD_FILE: &str = "sweep.json";

/// `--shard i/n` as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ShardRecord {
    /// 0-based slice index.
    pub index: usize,
    /// How many slices.
    pub count: usize,
}

/// One scenario of the sweep: its report directory name and the file it was read from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ScenarioRecord {
    /// The file stem: reports go to `<out>/<name>/<seed>.json`.
    pub name: String,
    /// The scenario file as the sweep was given it (the reproduce line names it).
    pub path: PathBuf,
}

/// How one run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// No violation, no failed step.
    Passed,
    /// The report has violations or failed steps (exit 1): the summary lines.
    Failed(Vec<String>),
    /// The scenario is invalid (exit 2): what is wrong.
    Invalid(String),
    /// The run crashed, timed out or exited without a report: what happened.
    Crashed(String),
}

impl Verdict {
    /// The exit code this verdict would give `dovetail run` (0 when it passed).
    pub fn exit_code(&self) -> u8 {
        match self {
            Verdict::Passed => 0,
            Verdict::Failed(_) => Failure::INVARIANT,
            Verdict::Invalid(_) => Failure::INVALID_INPUT,
            Verdict::Crashed(_) => Failure::CRASH,
        }
    }

    /// The lines printed under `FAIL`, none when it passed.
    fn lines(&self) -> Vec<String> {
        match self {
            Verdict::Passed => Vec::new(),
            Verdict::Failed(lines) => lines.clone(),
            Verdict::Invalid(why) => vec![format!("invalid scenario: {why}")],
            Verdict::Crashed(why) => vec![format!("crashed: {why}")],
        }
    }
}

/// One run of the sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The scenario's name (its report directory).
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub verdict: Verdict,
}

/// `<out>/sweep.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// This directory's slice; `None` for a whole sweep (or a merged one).
    pub shard: Option<ShardRecord>,
    /// Every seed of the whole sweep, not only this slice's.
    pub seeds: Vec<u64>,
    /// Every scenario of the whole sweep, in sweep order.
    pub scenarios: Vec<ScenarioRecord>,
    /// The runs this directory holds, by (scenario, seed).
    pub runs: Vec<RunRecord>,
}

impl SweepRecord {
    /// Writes `<out>/sweep.json` (through a temporary file, so a reader never sees half).
    ///
    /// # Errors
    /// The directory cannot be written.
    pub fn write(&self, out: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        let path = out.join(RECORD_FILE);
        let tmp = out.join(format!("{RECORD_FILE}.tmp"));
        let json = serde_json::to_string_pretty(self)?;
        std::fs::write(&tmp, format!("{json}\n")).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
    }

    /// Reads `<dir>/sweep.json`.
    ///
    /// # Errors
    /// The file is missing (the directory is not a finished sweep's `--out`) or malformed;
    /// the message names the file and, for bad JSON, the field.
    pub fn read(dir: &Path) -> anyhow::Result<SweepRecord> {
        let path = dir.join(RECORD_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {}: is {} the --out directory of a finished `dovetail sweep`? (it writes {RECORD_FILE} when all its runs are done)",
                path.display(),
                dir.display()
            )
        })?;
        let de = &mut serde_json::Deserializer::from_str(&text);
        serde_path_to_error::deserialize(de)
            .map_err(|e| anyhow::anyhow!("{}: field `{}`: {}", path.display(), e.path(), e.inner()))
    }

    /// The scenario file of `name`, if the sweep had it.
    pub fn path_of(&self, name: &str) -> Option<&Path> {
        self.scenarios.iter().find(|s| s.name == name).map(|s| s.path.as_path())
    }
}

/// A run and the directory holding its report.
pub struct Located<'a> {
    /// The run.
    pub run: &'a RunRecord,
    /// Its scenario file.
    pub path: &'a Path,
    /// The sweep directory its report is in (`<dir>/<scenario>/<seed>.json`).
    pub dir: &'a Path,
}

/// `<dir>/<scenario>/<seed>.json`.
pub fn report_path(dir: &Path, scenario: &str, seed: u64) -> PathBuf {
    dir.join(scenario).join(format!("{seed}.json"))
}

/// The summary a sweep prints for its runs, sorted by (scenario, seed): every failing
/// seed with its reason, reproduce line and timeline, the cost gap over the reports, and
/// the count of runs. Deterministic: the wall time is printed apart by the caller.
pub fn summary(runs: &[Located<'_>]) -> String {
    let mut runs: Vec<&Located<'_>> = runs.iter().collect();
    runs.sort_by(|a, b| (&a.run.scenario, a.run.seed).cmp(&(&b.run.scenario, b.run.seed)));
    let mut s = String::new();
    let mut failed = 0;
    for r in &runs {
        let lines = r.run.verdict.lines();
        if lines.is_empty() {
            continue;
        }
        failed += 1;
        let report = report_path(r.dir, &r.run.scenario, r.run.seed);
        let _ = writeln!(s, "FAIL {} seed {}", r.run.scenario, r.run.seed);
        for line in lines.iter().take(5) {
            let _ = writeln!(s, "    {line}");
        }
        if lines.len() > 5 {
            let _ = writeln!(s, "    ... {} more in {}", lines.len() - 5, report.display());
        }
        let _ = writeln!(s, "    reproduce: {}", reproduce_command(r.path, r.run.seed));
        let html = report.with_extension("html");
        if html.is_file() {
            let _ = writeln!(s, "    timeline:  {}", html.display());
        }
    }
    s.push_str(&gap_lines(&runs));
    let _ = writeln!(s, "{} runs, {} passed, {failed} failed", runs.len(), runs.len() - failed);
    s
}

/// The worst exit code among the runs (0 when all passed).
pub fn worst_exit(runs: &[Located<'_>]) -> u8 {
    runs.iter().map(|r| r.run.verdict.exit_code()).max().unwrap_or(0)
}

/// The sweep's result as a [`Failure`]: a crash (exit 3) over an invalid scenario (2)
/// over a violated invariant (1).
pub fn outcome(runs: &[Located<'_>]) -> Result<(), Failure> {
    let failed = runs.iter().filter(|r| r.run.verdict != Verdict::Passed).count();
    match worst_exit(runs) {
        0 => Ok(()),
        Failure::INVARIANT => Err(Failure::Invariant),
        Failure::INVALID_INPUT => {
            Err(Failure::invalid(anyhow::anyhow!("{failed} runs failed; some scenarios are invalid")))
        }
        _ => Err(Failure::crash(anyhow::anyhow!("{failed} runs failed; some crashed or timed out"))),
    }
}

/// The cost gap over the runs' reports (a quality metric, never a failure): one line for
/// all runs, one per scenario.
fn gap_lines(runs: &[&Located<'_>]) -> String {
    let mut all = Vec::new();
    let mut per: BTreeMap<&str, Vec<(String, f64)>> = BTreeMap::new();
    for r in runs {
        let path = report_path(r.dir, &r.run.scenario, r.run.seed);
        let report = std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
        if let Some(gap) = report.as_ref().and_then(GapStats::gap_of) {
            let run = format!("{} seed {}", r.run.scenario, r.run.seed);
            all.push((run.clone(), gap));
            per.entry(&r.run.scenario).or_default().push((run, gap));
        }
    }
    let Some(total) = GapStats::of(all) else { return String::new() };
    let mut text = format!("cost gap to the LP bound: {total}\n");
    for (stem, gaps) in per {
        if let Some(s) = GapStats::of(gaps) {
            let _ = writeln!(text, "  {stem}: {s}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_a_bad_one_names_its_field() {
        let dir = std::env::temp_dir().join(format!("dovetail-sweep-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let record = SweepRecord {
            shard: Some(ShardRecord { index: 1, count: 2 }),
            seeds: vec![1, 2],
            scenarios: vec![ScenarioRecord { name: "calm".into(), path: "scenarios/calm.yaml".into() }],
            runs: vec![
                RunRecord { scenario: "calm".into(), seed: 2, verdict: Verdict::Failed(vec!["pdb at 1s".into()]) },
                RunRecord { scenario: "calm".into(), seed: 1, verdict: Verdict::Crashed("signal".into()) },
            ],
        };
        record.write(&dir).unwrap();
        assert_eq!(SweepRecord::read(&dir).unwrap(), record);
        std::fs::write(dir.join(RECORD_FILE), r#"{"shard": null, "seeds": ["x"], "scenarios": [], "runs": []}"#)
            .unwrap();
        let e = SweepRecord::read(&dir).unwrap_err().to_string();
        assert!(e.contains("sweep.json") && e.contains("seeds[0]"), "{e}");
        let missing = SweepRecord::read(&dir.join("nowhere")).unwrap_err().to_string();
        assert!(missing.contains("finished `dovetail sweep`"), "{missing}");
        let located: Vec<Located<'_>> =
            record.runs.iter().map(|run| Located { run, path: Path::new("scenarios/calm.yaml"), dir: &dir }).collect();
        let text = summary(&located);
        let first = text.find("calm seed 1").unwrap();
        assert!(first < text.find("calm seed 2").unwrap(), "sorted by seed:\n{text}");
        assert!(
            text.contains("crashed: signal") && text.contains("reproduce: dovetail run scenarios/calm.yaml --seed 2")
        );
        assert!(text.ends_with("2 runs, 0 passed, 2 failed\n"), "{text}");
        assert_eq!(worst_exit(&located), Failure::CRASH);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
