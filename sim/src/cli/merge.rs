//! `dovetail sweep --merge DIR...`: the shards of one sweep (each a `dovetail sweep --shard
//! i/n --out DIR`, e.g. one pod of a Kubernetes Indexed Job) read back as one sweep.
//!
//! Each shard directory's `sweep.json` ([`super::sweep_record`]) names the whole sweep and
//! every run it did. The merge first proves the pieces fit, and refuses them otherwise
//! (nothing is written then): the same shard count everywhere, each shard index exactly
//! once, and every (scenario, seed) of the expected coverage (`--seeds`, else the sweep's
//! own seeds) run exactly once. Then it prints the summary a single sweep of the same
//! scenarios and seeds prints (failing seeds with their reasons and reproduce lines, the
//! cost gap) and, with `--out`, copies the reports into one directory with its own record,
//! which `dovetail compare` reads like any sweep's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::failure::Failure;
use super::sweep::Seeds;
use super::sweep_record::{self, Located, RunRecord, ScenarioRecord, SweepRecord};

/// What to merge.
#[derive(Clone, Debug)]
pub struct MergeArgs {
    /// The shard directories.
    pub dirs: Vec<PathBuf>,
    /// The seeds every scenario must have been run with; default: the sweep's own.
    pub seeds: Option<Seeds>,
    /// Where to write the merged sweep directory, if anywhere.
    pub out: Option<PathBuf>,
}

/// The shards read and checked: every run with the directory that holds it.
#[derive(Debug)]
pub struct Merged {
    /// Every scenario, by name, with its file.
    pub scenarios: BTreeMap<String, PathBuf>,
    /// The expected seeds.
    pub seeds: Vec<u64>,
    /// Every run and its shard directory, by (scenario, seed).
    pub runs: BTreeMap<(String, u64), (RunRecord, PathBuf)>,
}

/// Reads and checks the shard directories.
///
/// # Errors
/// A directory has no readable record, the shards disagree on their count or repeat or
/// miss an index, or the runs miss or repeat a (scenario, seed) of the expected coverage;
/// the message lists every problem found (at most 20).
pub fn read_shards(dirs: &[PathBuf], seeds: Option<&Seeds>) -> anyhow::Result<Merged> {
    if dirs.is_empty() {
        anyhow::bail!("--merge names no directory");
    }
    let records: Vec<(PathBuf, SweepRecord)> =
        dirs.iter().map(|d| SweepRecord::read(d).map(|r| (d.clone(), r))).collect::<anyhow::Result<_>>()?;
    let mut problems = shard_problems(&records);
    let mut scenarios = BTreeMap::new();
    for (_, r) in &records {
        for ScenarioRecord { name, path } in &r.scenarios {
            scenarios.entry(name.clone()).or_insert_with(|| path.clone());
        }
    }
    let expected: Vec<u64> = match seeds {
        Some(s) => s.0.clone(),
        None => {
            records.iter().flat_map(|(_, r)| r.seeds.iter().copied()).collect::<BTreeSet<_>>().into_iter().collect()
        }
    };
    let mut runs: BTreeMap<(String, u64), (RunRecord, PathBuf)> = BTreeMap::new();
    for (dir, r) in &records {
        for run in &r.runs {
            let key = (run.scenario.clone(), run.seed);
            if let Some((_, first)) = runs.get(&key) {
                problems.push(format!(
                    "{} seed {} was run twice: in {} and in {}",
                    run.scenario,
                    run.seed,
                    first.display(),
                    dir.display()
                ));
            } else {
                runs.insert(key, (run.clone(), dir.clone()));
            }
        }
    }
    let wanted: BTreeSet<u64> = expected.iter().copied().collect();
    for (scenario, seed) in runs.keys() {
        if !wanted.contains(seed) {
            problems.push(format!("{scenario} seed {seed} was run but seed {seed} is not among the expected seeds"));
        }
    }
    for name in scenarios.keys() {
        for &seed in &expected {
            if !runs.contains_key(&(name.clone(), seed)) {
                problems.push(format!("{name} seed {seed} is missing: no directory given ran it"));
            }
        }
    }
    if !problems.is_empty() {
        let n = problems.len();
        problems.truncate(20);
        let more = if n > 20 { format!("\n  ... and {} more", n - 20) } else { String::new() };
        anyhow::bail!("the shard directories do not make one sweep ({n} problems):\n  {}{more}", problems.join("\n  "));
    }
    Ok(Merged { scenarios, seeds: expected, runs })
}

/// Shard-level problems: mixed counts, an index given twice, an index missing.
fn shard_problems(records: &[(PathBuf, SweepRecord)]) -> Vec<String> {
    let mut problems = Vec::new();
    let counts: BTreeSet<usize> = records.iter().filter_map(|(_, r)| r.shard.map(|s| s.count)).collect();
    if counts.len() > 1 {
        let each: Vec<String> = records
            .iter()
            .map(|(d, r)| match r.shard {
                Some(s) => format!("{}: {}/{}", d.display(), s.index, s.count),
                None => format!("{}: not sharded", d.display()),
            })
            .collect();
        problems
            .push(format!("the directories come from sweeps cut into different shard counts ({})", each.join(", ")));
        return problems;
    }
    let Some(&count) = counts.iter().next() else { return problems };
    let mut seen: BTreeMap<usize, &Path> = BTreeMap::new();
    for (dir, r) in records {
        let Some(s) = r.shard else {
            problems.push(format!("{} is not a shard but the others are {count}-way shards", dir.display()));
            continue;
        };
        if let Some(first) = seen.insert(s.index, dir.as_path()) {
            problems.push(format!(
                "shard {}/{count} is given twice: {} and {}",
                s.index,
                first.display(),
                dir.display()
            ));
        }
    }
    for i in (0..count).filter(|i| !seen.contains_key(i)) {
        problems.push(format!("shard {i}/{count} is missing: no directory given holds it"));
    }
    problems
}

impl Merged {
    /// Every run, located in `dir` when given (the merged directory), else in its shard's.
    pub fn located<'a>(&'a self, dir: Option<&'a Path>) -> Vec<Located<'a>> {
        self.runs
            .values()
            .map(|(run, shard)| Located {
                run,
                path: self.scenarios.get(&run.scenario).map_or(Path::new("?"), PathBuf::as_path),
                dir: dir.unwrap_or(shard.as_path()),
            })
            .collect()
    }

    /// Copies every run's report (and its timeline and log, where kept) into `out` and
    /// writes `out/sweep.json` for the whole sweep, last.
    ///
    /// # Errors
    /// A file cannot be copied or written.
    pub fn write(&self, out: &Path) -> anyhow::Result<()> {
        for (run, shard) in self.runs.values() {
            let from = sweep_record::report_path(shard, &run.scenario, run.seed);
            let to = sweep_record::report_path(out, &run.scenario, run.seed);
            if from == to {
                continue;
            }
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
            }
            for ext in ["json", "html", "log"] {
                let (from, to) = (from.with_extension(ext), to.with_extension(ext));
                if from.is_file() {
                    std::fs::copy(&from, &to)
                        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
                } else {
                    let _ = std::fs::remove_file(&to);
                }
            }
        }
        SweepRecord {
            shard: None,
            seeds: self.seeds.clone(),
            scenarios: self
                .scenarios
                .iter()
                .map(|(name, path)| ScenarioRecord { name: name.clone(), path: path.clone() })
                .collect(),
            runs: self.runs.values().map(|(run, _)| run.clone()).collect(),
        }
        .write(out)
    }
}

/// Merges, prints the summary and fails as the sweep would have (the worst run's class);
/// shards that do not fit are invalid input and nothing is written.
pub fn merge(args: &MergeArgs) -> Result<(), Failure> {
    let merged = read_shards(&args.dirs, args.seeds.as_ref()).map_err(Failure::InvalidInput)?;
    if let Some(out) = &args.out {
        merged.write(out).map_err(Failure::Crash)?;
    }
    let located = merged.located(args.out.as_deref());
    print!("{}", sweep_record::summary(&located));
    println!(
        "merged {} directories: {} scenarios × {} seeds{}",
        args.dirs.len(),
        merged.scenarios.len(),
        merged.seeds.len(),
        args.out.as_ref().map(|o| format!(", reports in {}", o.display())).unwrap_or_default()
    );
    sweep_record::outcome(&located)
}

#[cfg(test)]
mod tests {
    use super::super::sweep_record::{ShardRecord, Verdict};
    use super::*;

    fn shard(root: &Path, index: usize, count: usize, runs: &[u64]) -> PathBuf {
        let dir = root.join(format!("shard-{index}"));
        SweepRecord {
            shard: Some(ShardRecord { index, count }),
            seeds: vec![1, 2, 3],
            scenarios: vec![ScenarioRecord { name: "calm".into(), path: "calm.yaml".into() }],
            runs: runs
                .iter()
                .map(|&seed| RunRecord { scenario: "calm".into(), seed, verdict: Verdict::Passed })
                .collect(),
        }
        .write(&dir)
        .unwrap();
        dir
    }

    #[test]
    fn shards_that_do_not_make_one_sweep_are_refused_with_every_reason() {
        let root = std::env::temp_dir().join(format!("dovetail-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let a = shard(&root, 0, 2, &[1, 3]);
        let b = shard(&root, 1, 2, &[2]);
        let merged = read_shards(&[a.clone(), b.clone()], None).unwrap();
        assert_eq!(merged.runs.len(), 3);
        assert_eq!(merged.seeds, vec![1, 2, 3]);

        let e = read_shards(std::slice::from_ref(&a), None).unwrap_err().to_string();
        assert!(e.contains("shard 1/2 is missing") && e.contains("calm seed 2 is missing"), "{e}");
        let e = read_shards(&[a.clone(), a.clone(), b.clone()], None).unwrap_err().to_string();
        assert!(e.contains("shard 0/2 is given twice") && e.contains("calm seed 1 was run twice"), "{e}");
        let four = "1..4".parse::<Seeds>().unwrap();
        let e = read_shards(&[a.clone(), b.clone()], Some(&four)).unwrap_err().to_string();
        assert!(e.contains("calm seed 4 is missing") && e.contains("(1 problems)"), "{e}");
        let two = "1..2".parse::<Seeds>().unwrap();
        let e = read_shards(&[a.clone(), b.clone()], Some(&two)).unwrap_err().to_string();
        assert!(e.contains("seed 3 is not among the expected seeds"), "{e}");
        let c = shard(&root, 2, 3, &[]);
        let e = read_shards(&[a, b, c], None).unwrap_err().to_string();
        assert!(e.contains("different shard counts"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
