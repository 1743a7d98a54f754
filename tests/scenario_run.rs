//! Scenarios run end to end in the full world (API server, actors, fake cloud, controller)
//! and their reports say what happened.

use std::path::Path;

use dovetail_sim::run::run;
use dovetail_sim::scenario::Loaded;

fn load(name: &str) -> Loaded {
    Loaded::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name)).unwrap()
}

#[test]
fn steady_web_serves_its_diurnal_tier() {
    let report = run(&load("steady-web.yaml"), 1).unwrap().report;
    eprintln!("{}", report.summary());
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert!(report.launches >= 1, "no instance launched");
    assert!(report.cost.rate_per_hour > 0.0);
    assert!(report.pending.pods >= 12, "{:?}", report.pending);
    assert!(report.pending.p50_seconds < 60.0, "{:?}", report.pending);
    assert!(report.api_calls.get("ec2 CreateFleet").copied().unwrap_or(0) >= 1, "{:?}", report.api_calls);
    assert!(report.reproduce.ends_with("steady-web.yaml --seed 1"), "{}", report.reproduce);
}

#[test]
fn spot_storm_interrupts_and_the_tier_recovers() {
    let report = run(&load("spot-storm.yaml"), 2).unwrap().report;
    eprintln!("{}", report.summary());
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.faults.get("spotInterruption"), Some(&1), "{:?}", report.faults);
    assert_eq!(report.faults.get("describeLag"), Some(&1));
    // Pods all got a node eventually (p99 well under the run).
    assert!(report.pending.pods >= 12, "{:?}", report.pending);
}

#[test]
fn leader_failover_hands_over_and_jobs_run() {
    let report = run(&load("leader-failover.yaml"), 1).unwrap().report;
    eprintln!("{}", report.summary());
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.faults.get("leaderFailover"), Some(&1), "{:?}", report.faults);
    assert_eq!(report.faults.get("partition"), Some(&1));
    assert!(report.launches >= 1, "no launch across the failover");
    assert!(report.objects.get("jobs.batch").copied().unwrap_or(0) == 12, "{:?}", report.objects);
}
