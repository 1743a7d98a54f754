//! `dovetail sweep`: every scenario × every seed, in parallel child processes.
//!
//! Each run is `dovetail run <scenario> --seed N --report <out>/<scenario>/<N>.json
//! --html <out>/<scenario>/<N>.html` in a child process of this same binary (`std::env::current_exe()`), so every run is
//! single-threaded and deterministic exactly as when run alone, a crash or hang in one run
//! cannot take the sweep down, and a failing seed reproduces with the same command line.
//! The sweep itself only schedules processes and reads their reports; wall time is used
//! for progress and throughput, never inside a run. A passing run's timeline and log are
//! removed: what stays next to the reports is one HTML timeline per failing seed.
//!
//! When every run is done the sweep writes `<out>/sweep.json` ([`super::sweep_record`]):
//! the whole sweep's scenarios and seeds, its shard, and every run's verdict, which
//! `dovetail sweep --merge` ([`super::merge`]) reads to put shards back together.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use anyhow::{Context, bail};
use dovetail_sim::regressions::problems;
use dovetail_sim::world::reproduce_command;
use serde_json::Value;

use super::failure::Failure;
use super::sweep_record::{self, Located, RunRecord, ScenarioRecord, ShardRecord, SweepRecord, Verdict};

/// A set of seeds from the command line: `1..200` (both ends included), `1..=200`,
/// `7`, or a comma-separated mix such as `1..10,42,100..=105`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeds(pub Vec<u64>);

impl std::str::FromStr for Seeds {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut seeds = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let parse = |x: &str| x.trim().parse::<u64>().map_err(|e| format!("`{x}` in --seeds {s}: {e}"));
            if let Some((a, b)) = part.split_once("..") {
                let b = b.strip_prefix('=').unwrap_or(b);
                let (a, b) = (parse(a)?, parse(b)?);
                if b < a {
                    return Err(format!("`{part}` in --seeds: the range is empty ({b} < {a})"));
                }
                seeds.extend(a..=b);
            } else {
                seeds.push(parse(part)?);
            }
        }
        if seeds.is_empty() {
            return Err("--seeds names no seed (examples: 1..200, 7, 1..10,42)".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        seeds.retain(|s| seen.insert(*s));
        Ok(Seeds(seeds))
    }
}

/// `--shard i/n`: this process runs slice i of n interleaved slices, 0-based (0..n-1) as
/// a Kubernetes Indexed Job numbers its pods (`$JOB_COMPLETION_INDEX`), so n machines or
/// pods split one sweep without coordinating: run k of the whole sweep's (scenario × seed)
/// list, scenario-major, goes to slice k mod n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which slice, 0..n.
    pub index: usize,
    /// How many slices.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("--shard {s}: expected i/n, e.g. 0/4"))?;
        let i: usize = i.trim().parse().map_err(|e| format!("--shard {s}: i: {e}"))?;
        let n: usize = n.trim().parse().map_err(|e| format!("--shard {s}: n: {e}"))?;
        if n == 0 {
            return Err(format!("--shard {s}: n must be at least 1"));
        }
        if i >= n {
            return Err(format!(
                "--shard {s}: i must be below n: shards are 0-based, 0/{n} to {}/{n} (Kubernetes' JOB_COMPLETION_INDEX)",
                n - 1
            ));
        }
        Ok(Shard { index: i, count: n })
    }
}

/// What to sweep and how.
#[derive(Clone, Debug)]
pub struct SweepArgs {
    /// Scenario files, or directories whose `*.yaml` files are scenarios.
    pub paths: Vec<PathBuf>,
    /// Seeds to run for every scenario.
    pub seeds: Seeds,
    /// Parallel runs.
    pub jobs: usize,
    /// This process's slice.
    pub shard: Option<Shard>,
    /// Where reports go: `<out>/<scenario>/<seed>.json`.
    pub out: PathBuf,
    /// Kill a run that takes longer than this (wall time).
    pub timeout: Option<Duration>,
}

/// One (scenario, seed) to run.
#[derive(Clone, Debug)]
struct Job {
    scenario: PathBuf,
    stem: String,
    seed: u64,
}

/// Runs the sweep. Fails with the most severe class among its runs, a crash (exit 3) over
/// an invalid scenario (2) over a violated invariant (1); its own bad arguments are
/// invalid input.
pub fn sweep(args: &SweepArgs) -> Result<(), Failure> {
    let scenarios = scenario_files(&args.paths).map_err(Failure::InvalidInput)?;
    let mut jobs = Vec::new();
    for scenario in &scenarios {
        let stem = stem_of(scenario);
        for &seed in &args.seeds.0 {
            jobs.push(Job { scenario: scenario.clone(), stem: stem.clone(), seed });
        }
    }
    if let Some(shard) = args.shard {
        jobs = jobs.into_iter().enumerate().filter(|(i, _)| i % shard.count == shard.index).map(|(_, j)| j).collect();
    }
    let exe = std::env::current_exe().context("finding the dovetail binary to run children").map_err(Failure::Crash)?;
    let total = jobs.len();
    let workers = args.jobs.max(1).min(total.max(1));
    eprintln!(
        "sweep: {} scenarios × {} seeds{} = {total} runs on {workers} workers, reports in {}",
        scenarios.len(),
        args.seeds.0.len(),
        args.shard.map(|s| format!(" (shard {}/{})", s.index, s.count)).unwrap_or_default(),
        args.out.display()
    );

    // A record left by an earlier sweep into the same directory must not outlive it: only
    // a finished sweep has one.
    let _ = std::fs::remove_file(args.out.join(sweep_record::RECORD_FILE));
    let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<VecDeque<_>>()));
    let (tx, rx) = mpsc::channel::<(Job, Verdict)>();
    // Wall time measures the sweep's throughput for the user; runs never see it.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let results = std::thread::scope(|scope| {
        for _ in 0..workers {
            let (queue, tx, exe) = (queue.clone(), tx.clone(), exe.clone());
            scope.spawn(move || {
                loop {
                    let job = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some(job) = job else { break };
                    let verdict = run_child(&exe, &job, &args.out, args.timeout);
                    if tx.send((job, verdict)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut progress = Progress::new(total);
        let mut results = Vec::new();
        for (job, verdict) in rx {
            progress.finished(&job, &verdict, started.elapsed());
            results.push((job, verdict));
        }
        progress.done();
        results
    });
    let wall = started.elapsed();

    let mut results = results;
    // Finished in any order; recorded in sweep order so the record is the same bytes.
    results.sort_by(|(a, _), (b, _)| (&a.stem, a.seed).cmp(&(&b.stem, b.seed)));
    let record = SweepRecord {
        shard: args.shard.map(|s| ShardRecord { index: s.index, count: s.count }),
        seeds: args.seeds.0.clone(),
        scenarios: scenarios.iter().map(|p| ScenarioRecord { name: stem_of(p), path: p.clone() }).collect(),
        runs: results
            .into_iter()
            .map(|(job, verdict)| RunRecord { scenario: job.stem, seed: job.seed, verdict })
            .collect(),
    };
    let located: Vec<Located<'_>> = record
        .runs
        .iter()
        .map(|run| Located { run, path: record.path_of(&run.scenario).unwrap_or(Path::new("?")), dir: &args.out })
        .collect();
    print!("{}", sweep_record::summary(&located));
    let minutes = wall.as_secs_f64() / 60.0;
    println!(
        "wall {:.1}s ({:.1} seeds/min on {workers} workers)",
        wall.as_secs_f64(),
        located.len() as f64 / minutes.max(1e-9)
    );
    record.write(&args.out).map_err(Failure::Crash)?;
    sweep_record::outcome(&located)
}

/// A scenario's report directory name: its file stem.
fn stem_of(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The scenario files named by `paths`: files as given, directories' `*.yaml` sorted.
pub fn scenario_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect();
            found.sort();
            if found.is_empty() {
                bail!("{}: no *.yaml scenarios in this directory", p.display());
            }
            out.extend(found);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            bail!("{}: no such scenario file or directory", p.display());
        }
    }
    Ok(out)
}

fn report_path(out: &Path, job: &Job) -> PathBuf {
    sweep_record::report_path(out, &job.stem, job.seed)
}

/// The run's HTML timeline, next to its report (kept only when the run failed).
fn html_path(out: &Path, job: &Job) -> PathBuf {
    report_path(out, job).with_extension("html")
}

/// Runs one child `dovetail run` and reads its verdict from the report it wrote.
fn run_child(exe: &Path, job: &Job, out: &Path, timeout: Option<Duration>) -> Verdict {
    let report = report_path(out, job);
    let log = report.with_extension("log");
    if let Some(dir) = report.parent()
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        return Verdict::Crashed(format!("creating {}: {e}", dir.display()));
    }
    let html = html_path(out, job);
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_file(&html);
    let log_file = match std::fs::File::create(&log) {
        Ok(f) => f,
        Err(e) => return Verdict::Crashed(format!("creating {}: {e}", log.display())),
    };
    let stderr = match log_file.try_clone() {
        Ok(f) => f,
        Err(e) => return Verdict::Crashed(format!("{}: {e}", log.display())),
    };
    let child = Command::new(exe)
        .arg("run")
        .arg(&job.scenario)
        .arg("--seed")
        .arg(job.seed.to_string())
        .arg("--report")
        .arg(&report)
        .arg("--html")
        .arg(&html)
        .stdin(Stdio::null())
        // The child prints its report on stdout; the file copy is what we read.
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Verdict::Crashed(format!("starting {}: {e}", exe.display())),
    };
    drop(log_file);
    let status = match timeout {
        None => child.wait().map(Some),
        Some(limit) => wait_with_timeout(&mut child, limit),
    };
    let status = match status {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Verdict::Crashed(format!(
                "timed out after {limit:?}; log in {}",
                log.display(),
                limit = timeout.unwrap_or_default()
            ));
        }
        Err(e) => return Verdict::Crashed(format!("waiting for the run: {e}")),
    };
    let parsed = std::fs::read_to_string(&report).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let verdict = verdict(status.code(), parsed.as_ref(), &log);
    if matches!(verdict, Verdict::Passed) {
        let _ = std::fs::remove_file(&html);
    }
    verdict
}

/// The verdict of a child that exited with `code` (none: killed by a signal) and wrote
/// `report` (if it did).
fn verdict(code: Option<i32>, report: Option<&Value>, log: &Path) -> Verdict {
    let exit = |c: u8| Some(i32::from(c));
    match (code, report) {
        (Some(0), Some(r)) if problems(r).is_empty() => {
            let _ = std::fs::remove_file(log);
            Verdict::Passed
        }
        (c, Some(r)) if c == Some(0) || c == exit(Failure::INVARIANT) => {
            let p = problems(r);
            if p.is_empty() {
                Verdict::Failed(vec![format!("the run failed with a clean report; log in {}", log.display())])
            } else {
                Verdict::Failed(p)
            }
        }
        (c, _) if c == exit(Failure::INVALID_INPUT) => Verdict::Invalid(tail(log)),
        (Some(c), _) => Verdict::Crashed(format!("the run exited {c} without a report: {}", tail(log))),
        (None, _) => Verdict::Crashed(format!("the run was killed by a signal: {}", tail(log))),
    }
}

/// Waits for the child at most `limit`; kills it and returns `None` past that.
fn wait_with_timeout(
    child: &mut std::process::Child,
    limit: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    #[allow(clippy::disallowed_methods)] // wall-clock limit on a child process, outside any run
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The error (or else the last) line of a log, for a one-line reason.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let error = text.lines().find(|l| l.starts_with("error") || l.contains("panicked"));
    let last = error.or_else(|| text.lines().rev().find(|l| !l.trim().is_empty())).unwrap_or("(empty log)");
    format!("{last} (log in {})", log.display())
}

/// Progress on stderr: a rewritten line on a terminal, a line every 5% otherwise.
struct Progress {
    total: usize,
    done: usize,
    failed: usize,
    tty: bool,
    last_reported: usize,
}

impl Progress {
    fn new(total: usize) -> Self {
        Self { total, done: 0, failed: 0, tty: std::io::stderr().is_terminal(), last_reported: 0 }
    }

    fn finished(&mut self, job: &Job, verdict: &Verdict, wall: Duration) {
        self.done += 1;
        let mut err = std::io::stderr().lock();
        if !matches!(verdict, Verdict::Passed) {
            self.failed += 1;
            let clear = if self.tty { "\r\x1b[2K" } else { "" };
            let _ = writeln!(
                err,
                "{clear}FAIL {} seed {}: {}",
                job.stem,
                job.seed,
                reproduce_command(&job.scenario, job.seed)
            );
        }
        let rate = self.done as f64 / (wall.as_secs_f64() / 60.0).max(1e-9);
        let eta = (self.total - self.done) as f64 / rate.max(1e-9);
        let line =
            format!("[{}/{}] {} failed, {rate:.1} seeds/min, ~{:.0} min left", self.done, self.total, self.failed, eta);
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
            let _ = err.flush();
        } else if self.done * 20 / self.total.max(1) > self.last_reported * 20 / self.total.max(1)
            || self.done == self.total
        {
            self.last_reported = self.done;
            let _ = writeln!(err, "{line}");
        }
    }

    fn done(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse_ranges_lists_and_singles() {
        assert_eq!("1..5".parse::<Seeds>().unwrap().0, vec![1, 2, 3, 4, 5]);
        assert_eq!("1..=3".parse::<Seeds>().unwrap().0, vec![1, 2, 3]);
        assert_eq!("7".parse::<Seeds>().unwrap().0, vec![7]);
        assert_eq!("1..3,42,2".parse::<Seeds>().unwrap().0, vec![1, 2, 3, 42]);
        assert!("5..1".parse::<Seeds>().unwrap_err().contains("empty"));
        assert!("x".parse::<Seeds>().unwrap_err().contains("`x`"));
        assert_eq!("1..200".parse::<Seeds>().unwrap().0.len(), 200);
    }

    #[test]
    fn a_childs_exit_code_picks_its_verdict() {
        let log = std::env::temp_dir().join(format!("dovetail-sweep-verdict-{}.log", std::process::id()));
        std::fs::write(&log, "error: invalid input: zones: unknown zone `x`\n").unwrap();
        let violated = serde_json::json!({"invariants": {"violations": [
            {"invariant": "pdb", "at": "1s", "message": "2 of 3 ready", "objects": []}]}});
        assert!(matches!(verdict(Some(1), Some(&violated), &log), Verdict::Failed(p) if p.len() == 1));
        assert!(matches!(verdict(Some(2), None, &log), Verdict::Invalid(why) if why.contains("unknown zone")));
        assert!(matches!(verdict(Some(3), None, &log), Verdict::Crashed(_)));
        assert!(matches!(verdict(Some(101), None, &log), Verdict::Crashed(why) if why.contains("exited 101")));
        assert!(matches!(verdict(None, None, &log), Verdict::Crashed(why) if why.contains("signal")));
        assert!(matches!(verdict(Some(1), None, &log), Verdict::Crashed(_)), "exit 1 without a report");
        assert!(matches!(verdict(Some(0), Some(&serde_json::json!({})), &log), Verdict::Passed));
        assert!(!log.exists(), "a passing run's log is removed");
    }

    #[test]
    fn shards_are_zero_based_as_a_kubernetes_indexed_job() {
        assert_eq!("0/4".parse::<Shard>().unwrap(), Shard { index: 0, count: 4 });
        assert_eq!("3/4".parse::<Shard>().unwrap(), Shard { index: 3, count: 4 });
        let past = "4/4".parse::<Shard>().unwrap_err();
        assert!(past.contains("0-based") && past.contains("0/4 to 3/4"), "{past}");
        assert!("0/0".parse::<Shard>().unwrap_err().contains("at least 1"));
        assert!("4".parse::<Shard>().is_err());
        assert!("-1/4".parse::<Shard>().is_err());
    }
}
