//! Upstream Karpenter's own test cases, ported as data (issue 20, "Proof: upstream's tests,
//! case by case"; docs/upstream-conformance.md). Every YAML file under `tests/upstream_cases/`
//! holds cases of one kind, each citing the upstream test it comes from; this runner loads
//! them all, runs each against the controller's decision code (the scheduler, the disruption
//! loop's decision, budgets, drift, expiration and consolidatable rules), prints a conformance
//! table by suite, and fails when a case fails without being listed in its file's
//! `expectedFailures` (with the deviation named), when a listed case passes (stale: the
//! deviation was fixed, remove the entry), or when a file is malformed.

#[path = "upstream_cases/claims.rs"]
mod claims;
#[path = "upstream_cases/disrupt.rs"]
mod disrupt;
#[path = "upstream_cases/format.rs"]
mod format;
#[path = "upstream_cases/provision.rs"]
mod provision;
#[path = "upstream_cases/rules.rs"]
mod rules;
#[path = "upstream_cases/scene.rs"]
mod scene;
#[path = "upstream_cases/world.rs"]
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use format::{Kind, parse_case, read_file};
use scene::Defaults;

/// One case's outcome.
struct Outcome {
    suite: String,
    id: String,
    /// `upstream file > Describe > Context > It`.
    cite: String,
    file: String,
    /// `Err(why)` when the decision differs from upstream's.
    result: Result<(), String>,
    /// The listed deviation, if any.
    expected_failure: Option<String>,
}

fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            case_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

/// Runs every case of one file.
fn run_file(path: &Path) -> Result<Vec<Outcome>, String> {
    let file = read_file(path)?;
    let defaults = Defaults { instance_types: file.instance_types.clone(), node_pools: file.node_pools.clone() };
    let relative = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(path).display().to_string();
    let mut expected: BTreeMap<&str, &str> = BTreeMap::new();
    for failure in &file.expected_failures {
        if failure.reason.trim().is_empty() {
            return Err(format!("{relative}: expectedFailures `{}`: reason is empty", failure.id));
        }
        expected.insert(&failure.id, &failure.reason);
    }
    let mut seen = BTreeSet::new();
    let mut outcomes = Vec::new();
    for (index, value) in file.cases.iter().enumerate() {
        macro_rules! run {
            ($case:ty, $runner:expr) => {{
                let (_, case) = parse_case::<$case>(path, index, value)?;
                let cite = format!("{} > {}", case.source.as_deref().unwrap_or(&file.source), case.upstream);
                (case.id.clone(), cite, $runner(&case))
            }};
        }
        let (id, cite, result) = match file.kind {
            Kind::Provision => run!(provision::ProvisionCase, |c| provision::run(c, &defaults)),
            Kind::Disrupt => run!(disrupt::DisruptCase, |c| disrupt::run(c, &defaults)),
            Kind::Budget => run!(rules::BudgetCase, rules::budget),
            Kind::Drift => run!(rules::DriftCase, rules::drift),
            Kind::Expiration => run!(rules::ExpirationCase, rules::expiration),
            Kind::Consolidatable => run!(rules::ConsolidatableCase, rules::consolidatable_case),
        };
        if !seen.insert(id.clone()) {
            return Err(format!("{relative}: case `{id}` appears twice"));
        }
        let result = result.map_err(|e| format!("{relative}: case `{id}`: {e}"))?;
        outcomes.push(Outcome {
            suite: file.suite.clone(),
            expected_failure: expected.get(id.as_str()).map(|r| (*r).to_owned()),
            id,
            cite,
            file: relative.clone(),
            result,
        });
    }
    for id in expected.keys() {
        if !seen.contains(*id) {
            return Err(format!("{relative}: expectedFailures names `{id}`, which is no case"));
        }
    }
    Ok(outcomes)
}

/// Every failing case not listed in `expectedFailures`, and every listed case that passes
/// (stale); prints the listed failures with their reasons.
fn problems(outcomes: &[Outcome]) -> Vec<String> {
    let mut problems = Vec::new();
    for o in outcomes {
        match (&o.result, &o.expected_failure) {
            (Err(why), Some(reason)) => {
                println!("expected failure {}/{}: {reason}\n    upstream: {}\n    got: {why}", o.suite, o.id, o.cite);
            }
            (Err(why), None) => problems.push(format!("{}: case `{}` ({}) fails: {why}", o.file, o.id, o.cite)),
            (Ok(()), Some(_)) => problems.push(format!(
                "{}: case `{}` passes but is listed in expectedFailures (stale: the deviation is fixed, remove the entry)",
                o.file, o.id
            )),
            (Ok(()), None) => {}
        }
    }
    problems
}

/// A case file written to a fresh temporary directory, for the runner's own tests.
fn scratch_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("upstream-cases-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("write case file");
    path
}

const PASSING_CASE: &str = "
suite: meta
kind: provision
source: runner self-test
cases:
  - id: one-pod
    upstream: Scheduling > should schedule a pod
    given: {pods: [{name: p}]}
    expect: {scheduled: [p], newClaims: 1}
";

#[test]
fn a_listed_failure_that_passes_is_stale() {
    let text = format!("{PASSING_CASE}expectedFailures:\n  - {{id: one-pod, reason: a fixed deviation}}\n");
    let outcomes = run_file(&scratch_file("stale", &text)).expect("valid file");
    assert_eq!(outcomes.len(), 1);
    assert!(outcomes[0].result.is_ok(), "{:?}", outcomes[0].result);
    let problems = problems(&outcomes);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("`one-pod` passes but is listed in expectedFailures (stale"), "{}", problems[0]);
}

#[test]
fn a_bad_case_names_file_case_and_field() {
    let text = PASSING_CASE.replace("expect: {scheduled: [p], newClaims: 1}", "expect: {scheduled: [p], newClaim: 1}");
    let error = run_file(&scratch_file("bad", &text)).err().expect("unknown field is an error");
    assert!(error.contains("bad.yaml"), "{error}");
    assert!(error.contains("case `one-pod`"), "{error}");
    assert!(error.contains("field `expect.newClaim`: unknown field"), "{error}");
    let text = PASSING_CASE.replace("expect: {scheduled: [p], newClaims: 1}", "expect: {}");
    let error = run_file(&scratch_file("empty", &text)).err().expect("an empty expectation is an error");
    assert!(error.contains("case `one-pod`: expect: asserts nothing"), "{error}");
    let text = PASSING_CASE.replace("{name: p}", "{name: p, node: nowhere}");
    let error = run_file(&scratch_file("dangling", &text)).err().expect("unknown node is an error");
    assert!(error.contains("case `one-pod`") && error.contains("no node \"nowhere\""), "{error}");
}

#[test]
fn upstream_cases_conform() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("upstream_cases");
    let mut files = Vec::new();
    case_files(&root, &mut files);
    assert!(!files.is_empty(), "no case files under {}", root.display());
    let mut outcomes = Vec::new();
    let mut errors = Vec::new();
    for path in &files {
        match run_file(path) {
            Ok(mut o) => outcomes.append(&mut o),
            Err(e) => errors.push(e),
        }
    }
    let mut table: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for o in &outcomes {
        let row = table.entry(o.suite.as_str()).or_default();
        row.0 += 1;
        row.1 += usize::from(o.result.is_ok());
    }
    println!("{:<24} {:>5} {:>5} {:>5} {:>7}", "suite", "cases", "pass", "fail", "pass %");
    let (mut total, mut passed) = (0, 0);
    for (suite, (cases, pass)) in &table {
        total += cases;
        passed += pass;
        #[allow(clippy::cast_precision_loss)]
        let rate = 100.0 * *pass as f64 / *cases as f64;
        println!("{suite:<24} {cases:>5} {pass:>5} {:>5} {rate:>6.1}%", cases - pass);
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = 100.0 * passed as f64 / total.max(1) as f64;
    println!("{:<24} {total:>5} {passed:>5} {:>5} {rate:>6.1}%", "total", total - passed);
    errors.extend(problems(&outcomes));
    assert!(errors.is_empty(), "{} problem(s):\n{}", errors.len(), errors.join("\n"));
}
