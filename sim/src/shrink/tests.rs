//! The moves, without running anything: each is one step simpler and still loads.

use std::path::Path;
use std::time::Duration;

use super::candidates;
use super::trial::load;
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

fn story() -> Loaded {
    Loaded::from_str(Path::new("moves.yaml"), STORY).expect("the test story loads")
}

#[test]
fn ending_at_the_failure_clamps_phases_and_drops_what_no_longer_fits() {
    let s = story().scenario;
    let moves = candidates::all(&s, Some(Duration::from_secs(7 * 60 + 30)));
    let (what, cut) = &moves[0];
    assert_eq!(what, "end the story at 7m32s");
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
    let moves = candidates::all(&s, None);
    for (what, m) in &moves {
        load(Path::new("moves.yaml"), m).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    let names: Vec<&str> = moves.iter().map(|(w, _)| w.as_str()).collect();
    for expected in [
        "halve the duration to 10m",
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
    let moves: Vec<String> = candidates::all(&s, Some(Duration::from_secs(59))).into_iter().map(|(w, _)| w).collect();
    assert_eq!(moves, ["drop workloads[0] (deployment a)"]);
}
