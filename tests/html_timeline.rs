//! `dovetail run --html`: the run's timeline as one self-contained HTML page.
//!
//! The page is checked twice over: as bytes (two runs of spot-storm seed 1 give the same
//! page; it has a bar per billed instance, a marker per disruption, a band per fault, the
//! series, and a linked marker per violation in a run that has some) and in a real
//! browser: Debian's `chromium`, headless, loads the page with no network, its script runs
//! without an error, the elements exist in the DOM it built, and a screenshot is written
//! under `target/html-timeline/`. CI installs chromium (`.ci/run`); without it the browser
//! test fails, it does not skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use dovetail_sim::run::{Outcome, RunOptions, run_with};
use dovetail_sim::scenario::Loaded;
use dovetail_sim::timeline::{Timeline, html};

/// The story the browser test looks at: short, with faults, disruptions and interruptions.
const SCENARIO: &str = "spot-storm.yaml";

fn run_recorded(loaded: &Loaded, seed: u64) -> Outcome {
    let mut options = RunOptions { timeline: true, ..RunOptions::default() };
    run_with(loaded, seed, &mut options).unwrap_or_else(|e| panic!("{}: {e:#}", loaded.path.display()))
}

/// spot-storm seed 1, run once for the whole test binary.
fn spot_storm() -> &'static (Outcome, String) {
    static RUN: OnceLock<(Outcome, String)> = OnceLock::new();
    RUN.get_or_init(|| {
        let loaded = Loaded::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(SCENARIO))
            .expect("spot-storm loads");
        let outcome = run_recorded(&loaded, 1);
        let page = html::render(outcome.timeline.as_ref().expect("the run recorded a timeline"));
        (outcome, page)
    })
}

fn timeline(outcome: &Outcome) -> &Timeline {
    outcome.timeline.as_ref().expect("the run recorded a timeline")
}

fn count(page: &str, needle: &str) -> usize {
    page.matches(needle).count()
}

#[test]
fn the_same_run_gives_the_same_page() {
    let (first, page) = spot_storm();
    let loaded = Loaded::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(SCENARIO))
        .expect("spot-storm loads");
    let again = run_recorded(&loaded, 1);
    assert_eq!(first.report, again.report, "recording a timeline changed the run");
    let second = html::render(timeline(&again));
    assert!(*page == second, "two runs of {SCENARIO} seed 1 rendered different pages");
    let unrecorded = dovetail_sim::run::run(&loaded, 1).expect("runs");
    assert_eq!(unrecorded.report, first.report, "a run without --html differs from one with it");
    assert!(unrecorded.timeline.is_none());
}

#[test]
fn the_page_shows_every_instance_disruption_and_fault() {
    let (outcome, page) = spot_storm();
    let t = timeline(outcome);
    let report = &outcome.report;
    eprintln!("{}page: {} bytes", report.summary(), page.len());
    assert!(report.launches > 0 && report.interruptions > 0, "spot-storm seed 1 should launch and interrupt");
    assert_eq!(t.nodes.len() as u64, report.launches, "one bar per billed instance");
    assert_eq!(count(page, "<rect class=\"node-bar "), t.nodes.len(), "a bar element per instance");
    for n in &t.nodes {
        assert!(page.contains(&format!("data-instance=\"{}\"", n.instance_id)), "no row for {}", n.instance_id);
        assert!(
            page.contains(&format!("{} · {} · {}", n.instance_type, n.capacity_type, n.zone)),
            "{} is not labelled with its type, capacity type and zone",
            n.instance_id
        );
    }
    assert!(page.contains("NodePool spot ("), "the bars are grouped under their NodePool");
    let disrupted: u64 = report.disruptions.values().sum();
    assert_eq!(count(page, "class=\"disruption-marker\"") as u64, disrupted, "a marker per disruption");
    assert_eq!(t.disruptions.len() as u64, disrupted);
    let interrupted = t.nodes.iter().filter(|n| n.interrupted_at.is_some()).count();
    assert_eq!(interrupted as u64, report.interruptions, "every interrupted instance is marked");
    assert_eq!(count(page, "class=\"interruption-marker\""), interrupted);
    let faults: u64 = report.faults.values().sum();
    assert_eq!(count(page, "class=\"fault-band\"") as u64, faults, "a shaded band per fault");
    for id in ["pending-series", "cost-rate-series", "lower-bound-series"] {
        assert!(page.contains(&format!("id=\"{id}\" ")), "no {id}");
    }
    assert!(t.pending.iter().any(|s| s.value > 0), "spot-storm has pending pods at some point");
    assert!(t.lower_bound.iter().any(|s| s.value > 0.0), "the LP bound is drawn");
    let last_rate = t.cost_rate.last().expect("a cost rate").value;
    assert!((last_rate - report.cost.rate_per_hour).abs() < 1e-3, "the curve ends at the report's rate");
    assert!(!page.contains("http://") || only_svg_namespace(page), "the page refers to nothing on the network");
    assert!(!page.contains("https://") && !page.contains(" src="), "the page loads nothing");
}

/// The only `http://` in the page is the SVG namespace, which is a name, not a fetch.
fn only_svg_namespace(page: &str) -> bool {
    page.matches("http://").count() == page.matches("http://www.w3.org/2000/svg").count()
}

#[test]
fn violations_are_markers_linked_to_their_trace_position() {
    // spot-storm's cluster without its faults (so the run is healed from the start) and
    // with a bound no controller can meet: every pod waits longer than 1s for a node, so
    // strandedPods fires for each (the way the invariants' self-tests make them fire).
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(SCENARIO))
        .expect("spot-storm reads");
    let (cluster, _faults) = text.split_once("\nfaults:").expect("spot-storm has faults");
    let text = format!("{cluster}\ninvariants: {{strandedPods: {{boundWithin: 1s}}}}\n");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/spot-storm-tight-bound.yaml");
    let loaded = Loaded::from_str(&path, &text).expect("the tightened scenario loads");
    let outcome = run_recorded(&loaded, 1);
    let violations = &outcome.report.invariants.violations;
    assert!(!violations.is_empty(), "a 1s boundWithin must be violated:\n{}", outcome.report.summary());
    let page = html::render(timeline(&outcome));
    assert_eq!(count(&page, "class=\"violation-marker\""), violations.len(), "a marker per violation");
    for (i, v) in violations.iter().enumerate() {
        assert!(page.contains(&format!("href=\"#violation-{i}\"")), "marker {i} links to its entry");
        assert!(page.contains(&format!("id=\"violation-{i}\"")), "entry {i} exists");
        assert!(page.contains(&format!("(trace #{})", v.trace_position)), "entry {i} names its trace position");
    }
    let first = &timeline(&outcome).violations[0];
    assert!(!first.trace_excerpt.is_empty(), "the trace lines before the violation are shown");
    assert!(first.trace_excerpt.iter().all(|l| page.contains(&format!("#{:<7} ", l.position))));
    assert!(page.contains(&format!("── seen here: trace #{} ──", first.trace_position)));
    assert!(page.contains("strandedPods at "), "the entry names the invariant");
}

/// The directory screenshots and pages for the browser go to.
fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"), PathBuf::from);
    let dir = target.join("html-timeline");
    std::fs::create_dir_all(&dir).expect("creating target/html-timeline");
    dir.canonicalize().expect("target/html-timeline exists")
}

/// Runs headless chromium on `page` with `args`; returns (stdout, stderr). Fails loudly
/// when chromium is missing or hangs.
fn chromium(page: &Path, profile: &Path, args: &[String]) -> (String, String) {
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap_or_else(|e| {
        panic!(
            "cannot start chromium ({e}): the HTML timeline test needs Debian's chromium; install it with \
             `apt-get install -y --no-install-recommends chromium` (.ci/run does)"
        )
    });
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(output) => output.expect("chromium ran"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("chromium did not finish within 120 s on {}", page.display());
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "chromium failed ({}):\n{stderr}", output.status);
    (stdout, stderr)
}

/// Console messages and uncaught exceptions in chromium's log. With `--enable-logging`
/// chromium logs every console message as `INFO:CONSOLE` whatever its level, so any such
/// line counts: the page writes nothing to the console when all is well.
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect()
}

#[test]
fn the_browser_check_sees_a_failing_script() {
    // The checks the page must pass, shown to bite: a script that logs and then throws.
    let dir = out_dir();
    let file = dir.join("failing-script.html");
    let guard = "window.addEventListener('error', function (e) { \
                 document.body.setAttribute('data-script-error', String(e.message)); });";
    std::fs::write(
        &file,
        format!("<!DOCTYPE html><html><body><script>{guard} console.error('x'); missing();</script></body></html>"),
    )
    .expect("writing the page");
    let profile = std::env::temp_dir().join(format!("dovetail-chromium-bad-{}", std::process::id()));
    let (dom, stderr) = chromium(&file, &profile, &["--dump-dom".into()]);
    let _ = std::fs::remove_dir_all(&profile);
    assert_eq!(console_errors(&stderr).len(), 2, "the console message and the exception:\n{stderr}");
    assert!(script_error(&dom).contains("missing is not defined"), "{dom}");
}

#[test]
fn a_real_browser_loads_the_page_without_errors_and_screenshots_it() {
    let (outcome, page) = spot_storm();
    let dir = out_dir();
    let file = dir.join("spot-storm-1.html");
    std::fs::write(&file, page).expect("writing the page");
    let profile = std::env::temp_dir().join(format!("dovetail-chromium-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);

    let (dom, stderr) = chromium(&file, &profile.join("dom"), &["--dump-dom".into()]);
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    assert!(!dom.contains("data-script-error=\""), "the page's script failed: {}", script_error(&dom));
    let nodes = timeline(outcome).nodes.len();
    assert!(
        dom.contains(&format!("data-rendered=\"{nodes}\"")),
        "the script did not run to its end, or saw another number of bars than {nodes}"
    );
    assert_eq!(count(&dom, "class=\"node-bar "), nodes, "the browser's DOM has every bar");
    for id in ["id=\"timeline\"", "id=\"pending-series\"", "id=\"cost-rate-series\"", "id=\"lower-bound-series\""] {
        assert!(dom.contains(id), "the DOM lacks {id}");
    }

    let shot = dir.join("spot-storm-1.png");
    let _ = std::fs::remove_file(&shot);
    let (_, stderr) = chromium(
        &file,
        &profile.join("shot"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,900".into(),
            "--hide-scrollbars".into(),
            // Without these a loaded machine can get a screenshot taken before the page
            // finished painting (its lower part blank).
            "--run-all-compositor-stages-before-draw".into(),
            "--virtual-time-budget=2000".into(),
        ],
    );
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", shot.display()));
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "the screenshot is not a real PNG");
    eprintln!("screenshot: {} ({} bytes); page: {}", shot.display(), png.len(), file.display());
    let _ = std::fs::remove_dir_all(&profile);
}

/// The `data-script-error` attribute's value, for the failure message.
fn script_error(dom: &str) -> &str {
    dom.split("data-script-error=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or("")
}
