//! The moves, without running anything: each is one step simpler and still loads.

use std::path::Path;
use std::time::Duration;

use super::trial::load;
use super::{Signature, candidates};
use crate::scenario::Loaded;

const STORY: &str = "
name: moves
duration: 20m
workloads:
  - deployment:
      name: web
      replicas: {steps: [{at: 0s, replicas: 8}, {at: 5m, replicas: 2}]}
      pod:
        cpu: {uniform: [250m, 2]}
        memory: 1Gi
        doNotDisrupt: true
        topologySpreadConstraints:
          - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
  - pdb: {name: web, workload: web, maxUnavailable: 1}
  - job: {name: batch, at: 1m, count: 6, runFor: {uniform: [1m, 3m]}, pod: {cpu: 1, memory: 1Gi}}
faults:
  - {at: 2m, for: 4m, apiServerErrors: {errorRate: 0.2}}
  - {at: 8m, for: 2m, zoneOutage: {zone: random}}
  - {perHour: 6, for: 30s, controllerCrash: {target: controller}}
steps:
  - {at: 15m, expireWatches: true}
phases: {faultsUntil: 12m, livenessFrom: 19m}
# These tests are about the shrinker's moves, not liveness: with no liveness invariant on,
# the liveness window rule asks nothing of the cut stories.
invariants:
  strandedPods: {enabled: false}
  stuckNodeClaim: {enabled: false}
  churn: {enabled: false}
  leakedInstance: {enabled: false}
";

fn stranded() -> Signature {
    Signature::Invariant("strandedPods".into())
}

fn story() -> Loaded {
    Loaded::from_str(Path::new("moves.yaml"), STORY).expect("the test story loads")
}

#[test]
fn ending_at_the_failure_clamps_phases_and_drops_what_no_longer_fits() {
    let s = story().scenario;
    let moves = candidates::all(&s, Some(Duration::from_secs(7 * 60 + 30)), &stranded());
    let (what, cut) = &moves[0];
    assert_eq!(what, "end the story at 7m32s (faults heal at 7m32s)");
    assert_eq!(cut.duration.0, Duration::from_secs(452));
    assert_eq!(cut.phases.faults_until.map(|d| d.0), Some(Duration::from_secs(452)));
    assert_eq!(cut.phases.liveness_from.map(|d| d.0), Some(Duration::from_secs(452)));
    assert_eq!(cut.faults.len(), 2, "the zone outage at 8m is dropped, the random crash stays");
    assert!(cut.steps.is_empty(), "the step at 15m is dropped");
    load(Path::new("moves.yaml"), cut).expect("the cut story loads");
}

#[test]
fn every_move_loads_and_the_kinds_of_move_are_all_there() {
    let s = story().scenario;
    let moves = candidates::all(&s, None, &stranded());
    for (what, m) in &moves {
        load(Path::new("moves.yaml"), m).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    let names: Vec<&str> = moves.iter().map(|(w, _)| w.as_str()).collect();
    for expected in [
        "end the story at 10m (faults heal at 10m)",
        "drop faults[1] (zoneOutage)",
        "drop workloads[0] (deployment web)",
        "drop steps[0] (expireWatches)",
        "workloads[0]: constant replicas, the last step's",
        "/workloads/0/deployment/pod/cpu: a constant, its first value",
        "workloads[0] (\"web\"): drop pod.doNotDisrupt",
        "/workloads/2/job/count: 6 -> 3",
        "/faults/0/for: \"4m\" -> \"2m\"",
        "/faults/0/apiServerErrors/errorRate: 0.2 -> 0.1",
    ] {
        assert!(names.contains(&expected), "no move {expected:?} among {names:#?}");
    }
}

#[test]
fn a_minimal_story_has_few_moves_left() {
    let text = "name: tiny\nduration: 1m\nworkloads:\n  - deployment: {name: a, replicas: 1, pod: {cpu: 1, memory: 1Gi}}\n\
         invariants: {strandedPods: {enabled: false}, stuckNodeClaim: {enabled: false}, churn: {enabled: false}, \
         leakedInstance: {enabled: false}}\n";
    let s = Loaded::from_str(Path::new("tiny.yaml"), text).expect("loads").scenario;
    let moves: Vec<String> = candidates::all(&s, Some(Duration::from_secs(59)), &stranded())
        .into_iter()
        .map(|(w, _)| w)
        .filter(|w| !w.starts_with("switch off"))
        .collect();
    assert_eq!(moves, ["drop workloads[0] (deployment a)"]);
}

/// A story whose liveness invariants are on: the loader wants 7 minutes after the heal.
const WINDOWED: &str = "
name: windowed
duration: 20m
workloads:
  - deployment: {name: web, replicas: 3, pod: {cpu: 1, memory: 1Gi}}
faults:
  - {at: 1m, for: 3m, apiServerErrors: {errorRate: 0.2}}
phases: {faultsUntil: 5m, livenessFrom: 19m}
invariants:
  stuckNodeClaim: {initializeWithin: 6m, deleteWithin: 6m}
  churn: {enabled: false}
";

#[test]
fn the_story_ends_after_the_failure_but_never_inside_the_liveness_window() {
    let s = Loaded::from_str(Path::new("windowed.yaml"), WINDOWED).expect("loads").scenario;
    let failed_at = Some(Duration::from_secs(150));
    let moves = candidates::all(&s, failed_at, &stranded());
    let ends: Vec<&str> = moves.iter().map(|(w, _)| w.as_str()).filter(|w| w.starts_with("end")).collect();
    assert_eq!(
        ends,
        ["end the story at 9m32s (faults heal at 2m32s)", "end the story at 12m (faults heal at 5m)"],
        "failure + 2s, pushed out to the heal + 6m + 1m margin"
    );
    let (_, healed_early) = &moves[0];
    assert_eq!(healed_early.faults[0].lasts.as_ref().map(|d| d.max().0), Some(Duration::from_secs(92)));
    for (what, m) in moves.iter().filter(|(w, _)| w.starts_with("end")) {
        load(Path::new("windowed.yaml"), m).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    let (what, only_stranded) = moves.iter().find(|(w, _)| w.starts_with("switch off every")).expect("a switch-off");
    assert_eq!(what, "switch off every invariant but strandedPods");
    let config = only_stranded.invariants.clone().expect("written out");
    assert!(config.stranded_pods.enabled && !config.stuck_node_claim.enabled && !config.pdb.enabled);
    let next = candidates::all(only_stranded, failed_at, &stranded());
    assert_eq!(next[0].0, "end the story at 8m32s (faults heal at 2m32s)", "only strandedPods' 5m + 1m is left");
}

#[test]
fn without_liveness_invariants_the_story_ends_at_the_failure() {
    let s = Loaded::from_str(Path::new("windowed.yaml"), WINDOWED).expect("loads").scenario;
    let keep = Signature::Invariant("runawayScaleUp".into());
    let failed_at = Some(Duration::from_secs(20));
    let moves = candidates::all(&s, failed_at, &keep);
    let (_, only_runaway) = moves.iter().find(|(w, _)| w.starts_with("switch off every")).expect("a switch-off");
    let (what, cut) = &candidates::all(only_runaway, failed_at, &keep)[0];
    assert_eq!(what, "end the story at 22s (faults heal at 22s)");
    assert!(cut.faults.is_empty(), "the fault at 1m starts after the heal");
    load(Path::new("windowed.yaml"), cut).expect("the cut story loads");
}
