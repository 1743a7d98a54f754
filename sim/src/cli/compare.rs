//! `dovetail compare BASE CANDIDATE`: what changed between two sweeps.
//!
//! Both directories hold `dovetail sweep --out` reports, `<scenario>/<seed>.json`. The
//! reports are read as plain JSON, and any field may be missing (an older build's report,
//! or a field not written yet): a missing field is shown as `-` and never counts as a
//! change. The command exits 1 when the candidate has an invariant violation (or failed
//! step) that the base did not have for the same scenario and seed, which is the gate for
//! upgrade validation.
//!
//! A sharded sweep (`--shard i/n`) is compared once merged (`dovetail sweep --merge
//! SHARD_DIR... --out DIR`): one shard's directory holds only its slice, and is refused
//! with that hint rather than compared as if every other seed had vanished.

use anyhow::Context;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::failure::Failure;
use super::gap_stats::GapStats;

/// The fields of a report that compare reads, each optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Violations by invariant name (failed scenario steps count as `step-failed`).
    pub violations: BTreeMap<String, usize>,
    /// Cost rate at the end, $/hour.
    pub rate_per_hour: Option<f64>,
    /// Cost rate / lower bound - 1.
    pub gap: Option<f64>,
    /// Median pending time, seconds.
    pub p50: Option<f64>,
    /// 99th percentile pending time, seconds.
    pub p99: Option<f64>,
    /// Instances launched.
    pub launches: Option<f64>,
    /// Disruptions by reason.
    pub disruptions: Option<BTreeMap<String, f64>>,
    /// Interruptions handled.
    pub interruptions: Option<f64>,
}

impl Summary {
    /// Reads what is there; ignores what is not.
    pub fn from_report(r: &Value) -> Summary {
        let num = |p: &str| r.pointer(p).and_then(Value::as_f64);
        let mut violations = BTreeMap::new();
        for v in r.pointer("/invariants/violations").and_then(Value::as_array).into_iter().flatten() {
            let name = v.get("invariant").and_then(Value::as_str).unwrap_or("unnamed");
            *violations.entry(name.to_string()).or_default() += 1;
        }
        let failures = r.get("failures").and_then(Value::as_array).map_or(0, Vec::len);
        if failures > 0 {
            violations.insert("step-failed".into(), failures);
        }
        let disruptions = r
            .get("disruptions")
            .and_then(Value::as_object)
            .map(|m| m.iter().filter_map(|(k, v)| v.as_f64().map(|n| (k.clone(), n))).collect::<BTreeMap<_, _>>());
        Summary {
            violations,
            rate_per_hour: num("/cost/ratePerHour"),
            gap: GapStats::gap_of(r),
            p50: num("/pending/p50Seconds"),
            p99: num("/pending/p99Seconds"),
            launches: num("/launches"),
            disruptions,
            interruptions: num("/interruptions"),
        }
    }
}

/// One compared (scenario, seed).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Scenario (the report directory's name).
    pub scenario: String,
    /// Seed.
    pub seed: u64,
    /// Cells in [`COLUMNS`] order after scenario and seed; empty when unchanged.
    pub cells: Vec<String>,
    /// Whether anything changed.
    pub changed: bool,
    /// The candidate has violations the base did not.
    pub adds_violation: bool,
}

/// Table headings.
pub const COLUMNS: [&str; 10] = [
    "scenario",
    "seed",
    "violations",
    "cost $/h",
    "gap",
    "p50 pending",
    "p99 pending",
    "launches",
    "disruptions",
    "interruptions",
];

/// Compares one seed's reports; `None` means the report is absent on that side.
pub fn compare_one(scenario: &str, seed: u64, base: Option<&Summary>, cand: Option<&Summary>) -> Row {
    let (b, c) = match (base, cand) {
        (Some(b), Some(c)) => (b, c),
        (None, Some(c)) => {
            let adds = !c.violations.is_empty();
            let mut cells = vec![format!("only in candidate{}", violation_list(&c.violations, "+"))];
            cells.resize(COLUMNS.len() - 2, String::new());
            return Row { scenario: scenario.into(), seed, cells, changed: true, adds_violation: adds };
        }
        (Some(_), None) | (None, None) => {
            let mut cells = vec!["only in base".to_string()];
            cells.resize(COLUMNS.len() - 2, String::new());
            return Row { scenario: scenario.into(), seed, cells, changed: true, adds_violation: false };
        }
    };
    let mut added = BTreeMap::new();
    let mut fixed = BTreeMap::new();
    let names: std::collections::BTreeSet<&String> = b.violations.keys().chain(c.violations.keys()).collect();
    for name in names {
        let (nb, nc) = (b.violations.get(name).copied().unwrap_or(0), c.violations.get(name).copied().unwrap_or(0));
        if nc > nb {
            added.insert(name.clone(), nc - nb);
        } else if nb > nc {
            fixed.insert(name.clone(), nb - nc);
        }
    }
    let violations = format!("{}{}", violation_list(&added, "+"), violation_list(&fixed, "-")).trim().to_string();
    let total = |d: &Option<BTreeMap<String, f64>>| d.as_ref().map(|m| m.values().sum::<f64>());
    let disruptions = match (&b.disruptions, &c.disruptions) {
        (Some(x), Some(y)) if x != y => {
            let reasons: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            reasons
                .into_iter()
                .filter_map(|r| {
                    let (p, q) = (x.get(r).copied().unwrap_or(0.0), y.get(r).copied().unwrap_or(0.0));
                    (p != q).then(|| format!("{r} {} → {}", fmt_count(p), fmt_count(q)))
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
        _ => changed(total(&b.disruptions), total(&c.disruptions), fmt_count),
    };
    let cells = vec![
        violations,
        changed(b.rate_per_hour, c.rate_per_hour, |v| format!("{v:.3}")),
        changed(b.gap, c.gap, |v| format!("{:+.1}%", v * 100.0)),
        changed(b.p50, c.p50, |v| format!("{v:.1}s")),
        changed(b.p99, c.p99, |v| format!("{v:.1}s")),
        changed(b.launches, c.launches, fmt_count),
        disruptions,
        changed(b.interruptions, c.interruptions, fmt_count),
    ];
    let any = cells.iter().any(|c| !c.is_empty());
    Row { scenario: scenario.into(), seed, cells, changed: any, adds_violation: !added.is_empty() }
}

fn violation_list(m: &BTreeMap<String, usize>, sign: &str) -> String {
    m.iter().map(|(k, n)| if *n == 1 { format!(" {sign}{k}") } else { format!(" {sign}{k}×{n}") }).collect()
}

fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// `a → b` when both are present and differ (in their printed form), else empty.
fn changed(a: Option<f64>, b: Option<f64>, fmt: impl Fn(f64) -> String) -> String {
    match (a, b) {
        (Some(a), Some(b)) if fmt(a) != fmt(b) => format!("{} → {}", fmt(a), fmt(b)),
        _ => String::new(),
    }
}

/// Every report in a sweep directory, by (scenario, seed).
pub fn read_dir(dir: &Path) -> anyhow::Result<BTreeMap<(String, u64), Summary>> {
    if let Ok(record) = super::sweep_record::SweepRecord::read(dir)
        && let Some(shard) = record.shard.filter(|s| s.count > 1)
    {
        anyhow::bail!(
            "{}: holds only shard {}/{} of a sweep; merge the shards first: dovetail sweep --merge SHARD_DIR... --out DIR",
            dir.display(),
            shard.index,
            shard.count
        );
    }
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut scenario_dirs: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    scenario_dirs.sort();
    for sdir in scenario_dirs {
        let scenario = sdir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for f in std::fs::read_dir(&sdir).with_context(|| format!("reading {}", sdir.display()))? {
            let path = f?.path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let Some(seed) = path.file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse::<u64>().ok()) else {
                continue;
            };
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let json: Value =
                serde_json::from_str(&text).with_context(|| format!("{}: not a JSON report", path.display()))?;
            out.insert((scenario.clone(), seed), Summary::from_report(&json));
        }
    }
    if out.is_empty() {
        anyhow::bail!(
            "{}: no reports (expected <scenario>/<seed>.json, as written by `dovetail sweep --out`)",
            dir.display()
        );
    }
    Ok(out)
}

/// Compares two sweep directories: every (scenario, seed) in either.
pub fn compare_maps(base: &BTreeMap<(String, u64), Summary>, cand: &BTreeMap<(String, u64), Summary>) -> Vec<Row> {
    let keys: std::collections::BTreeSet<&(String, u64)> = base.keys().chain(cand.keys()).collect();
    keys.into_iter().map(|k| compare_one(&k.0, k.1, base.get(k), cand.get(k))).collect()
}

/// Renders rows as an aligned table (changed rows only, unless `all`).
pub fn render(rows: &[Row], all: bool) -> String {
    let shown: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| all || r.changed)
        .map(|r| {
            let mut cells = vec![r.scenario.clone(), r.seed.to_string()];
            cells.extend(r.cells.iter().map(|c| if c.is_empty() { "=".to_string() } else { c.clone() }));
            cells
        })
        .collect();
    let mut widths: Vec<usize> = COLUMNS.iter().map(|h| h.chars().count()).collect();
    for row in &shown {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let padded: Vec<String> =
            cells.zip(&widths).map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count()))).collect();
        let _ = writeln!(out, "{}", padded.join("  ").trim_end());
    };
    line(&mut out, &mut COLUMNS.iter().copied());
    for row in &shown {
        line(&mut out, &mut row.iter().map(String::as_str));
    }
    out
}

/// The cost gap per scenario and over all runs (median, p95, worst), base → candidate.
fn gap_summary(base: &BTreeMap<(String, u64), Summary>, cand: &BTreeMap<(String, u64), Summary>) -> String {
    type Gaps = Vec<(String, f64)>;
    let mut per: BTreeMap<&str, (Gaps, Gaps)> = BTreeMap::new();
    let (mut all_base, mut all_cand) = (Vec::new(), Vec::new());
    for ((s, seed), sum) in base {
        let run = format!("{s} seed {seed}");
        per.entry(s).or_default().0.extend(sum.gap.map(|g| (run.clone(), g)));
        all_base.extend(sum.gap.map(|g| (run, g)));
    }
    for ((s, seed), sum) in cand {
        let run = format!("{s} seed {seed}");
        per.entry(s).or_default().1.extend(sum.gap.map(|g| (run.clone(), g)));
        all_cand.extend(sum.gap.map(|g| (run, g)));
    }
    let show = |g: Gaps| GapStats::of(g).map_or("-".to_string(), |s| s.to_string());
    let mut out = String::new();
    for (s, (b, c)) in per {
        if b.is_empty() && c.is_empty() {
            continue;
        }
        let _ = writeln!(out, "  {s}: cost gap {} → {}", show(b), show(c));
    }
    if !out.is_empty() {
        out = format!("cost gap to the LP bound, all runs: {} → {}\n{out}", show(all_base), show(all_cand));
    }
    out
}

/// Prints the comparison; fails with [`Failure::Invariant`] (exit 1) if the candidate adds
/// a violation, and with [`Failure::InvalidInput`] if a directory holds no reports.
pub fn compare(base_dir: &Path, cand_dir: &Path, all: bool) -> Result<(), Failure> {
    let base = read_dir(base_dir).map_err(Failure::InvalidInput)?;
    let cand = read_dir(cand_dir).map_err(Failure::InvalidInput)?;
    let rows = compare_maps(&base, &cand);
    let changed = rows.iter().filter(|r| r.changed).count();
    print!("{}", render(&rows, all));
    let gaps = gap_summary(&base, &cand);
    if !gaps.is_empty() {
        print!("{gaps}");
    }
    let added: Vec<&Row> = rows.iter().filter(|r| r.adds_violation).collect();
    println!("{} seeds compared, {changed} changed, {} with new violations", rows.len(), added.len());
    for r in &added {
        println!("NEW VIOLATION {} seed {}: {}", r.scenario, r.seed, r.cells[0]);
    }
    if added.is_empty() { Ok(()) } else { Err(Failure::Invariant) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn report(violations: &[&str], gap: f64, p99: f64, launches: u64) -> Value {
        json!({
            "scenario": "spot-storm", "seed": 3, "simulated": "30m",
            "invariants": {
                "checked": ["pdb", "stranded-pods"],
                "violations": violations.iter().map(|v| json!({
                    "invariant": v, "at": "12m3s", "objects": ["Pod default/web-1"],
                    "message": "m", "tracePosition": 7
                })).collect::<Vec<_>>()
            },
            "cost": {"ratePerHour": 1.25, "lowerBoundPerHour": 1.0, "gap": gap},
            "pending": {"pods": 40, "p50Seconds": 21.0, "p99Seconds": p99, "maxSeconds": 80.0},
            "launches": launches, "interruptions": 4,
            "disruptions": {"Underutilized": 2, "Drifted": 1}
        })
    }

    #[test]
    fn a_new_violation_is_flagged_and_a_fixed_one_shown() {
        let base = Summary::from_report(&report(&["pdb"], 0.25, 60.0, 10));
        let cand = Summary::from_report(&report(&["stranded-pods", "stranded-pods"], 0.25, 60.0, 10));
        let row = compare_one("spot-storm", 3, Some(&base), Some(&cand));
        assert!(row.adds_violation && row.changed);
        assert_eq!(row.cells[0], "+stranded-pods×2 -pdb");
        assert!(row.cells[1..].iter().all(String::is_empty), "{row:?}");
    }

    #[test]
    fn fixing_a_violation_and_metric_changes_do_not_fail() {
        let base = Summary::from_report(&report(&["pdb"], 0.25, 60.0, 10));
        let cand = Summary::from_report(&report(&[], 0.10, 45.5, 12));
        let row = compare_one("spot-storm", 3, Some(&base), Some(&cand));
        assert!(!row.adds_violation && row.changed);
        assert_eq!(row.cells[0], "-pdb");
        assert_eq!(row.cells[2], "+25.0% → +10.0%");
        assert_eq!(row.cells[4], "60.0s → 45.5s");
        assert_eq!(row.cells[5], "10 → 12");
        assert_eq!(row.cells[1], "", "same cost rate is no change");
    }

    #[test]
    fn missing_fields_are_absent_not_changes() {
        let old = json!({"scenario": "spot-storm", "seed": 3, "failures": []});
        let row = compare_one(
            "spot-storm",
            3,
            Some(&Summary::from_report(&old)),
            Some(&Summary::from_report(&report(&[], 0.2, 1.0, 3))),
        );
        assert!(!row.changed && !row.adds_violation, "{row:?}");
        let empty = Summary::from_report(&json!({}));
        assert_eq!(empty, Summary::default());
    }

    #[test]
    fn failed_steps_count_as_violations_and_disruptions_by_reason() {
        let mut cand = report(&[], 0.25, 60.0, 10);
        cand["failures"] = json!(["at 10s: apply NodePool broken succeeded, expected HTTP 422"]);
        cand["disruptions"] = json!({"Underutilized": 5, "Drifted": 1});
        let row = compare_one(
            "s",
            1,
            Some(&Summary::from_report(&report(&[], 0.25, 60.0, 10))),
            Some(&Summary::from_report(&cand)),
        );
        assert!(row.adds_violation);
        assert_eq!(row.cells[0], "+step-failed");
        assert_eq!(row.cells[6], "Underutilized 2 → 5");
    }

    #[test]
    fn seeds_on_one_side_only() {
        let c = Summary::from_report(&report(&["pdb"], 0.1, 1.0, 1));
        let only_cand = compare_one("s", 9, None, Some(&c));
        assert!(only_cand.adds_violation);
        assert_eq!(only_cand.cells[0], "only in candidate +pdb");
        let only_base = compare_one("s", 9, Some(&c), None);
        assert!(!only_base.adds_violation && only_base.changed);
    }

    #[test]
    fn directories_compare_and_render_a_table() {
        let root = std::env::temp_dir().join(format!("dovetail-compare-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (side, seeds) in [("base", [(1, &[][..]), (2, &["pdb"][..])]), ("cand", [(1, &["leak"][..]), (2, &[][..])])]
        {
            let dir = root.join(side).join("spot-storm");
            std::fs::create_dir_all(&dir).unwrap();
            for (seed, v) in seeds {
                std::fs::write(dir.join(format!("{seed}.json")), report(v, 0.2, 30.0, 5).to_string()).unwrap();
            }
            std::fs::write(dir.join("1.log"), "not a report").unwrap();
        }
        let base = read_dir(&root.join("base")).unwrap();
        let cand = read_dir(&root.join("cand")).unwrap();
        let rows = compare_maps(&base, &cand);
        assert_eq!(rows.len(), 2);
        assert!(rows[0].adds_violation && !rows[1].adds_violation);
        let table = render(&rows, false);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("scenario    seed  violations"), "{table}");
        assert!(lines[1].starts_with("spot-storm  1     +leak"), "{table}");
        assert!(lines[2].starts_with("spot-storm  2     -pdb"), "{table}");
        assert!(matches!(compare(&root.join("base"), &root.join("cand"), false), Err(Failure::Invariant)));
        assert!(matches!(compare(&root.join("cand"), &root.join("base"), true), Err(Failure::Invariant)));
        assert!(read_dir(&root.join("nowhere")).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }
}
