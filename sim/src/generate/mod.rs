//! Generated stories: a seed becomes a whole scenario — NodePools, EC2NodeClasses,
//! workloads and a fault mix — valid by construction and printable as YAML.
//!
//! The generator explores what the hand-written library does not: several NodePools with
//! weights, limits, budgets (scheduled, per reason), both consolidation policies,
//! `consolidateAfter` and `expireAfter`; Deployments with PDBs, spread, (anti-)affinity,
//! do-not-disrupt and priority classes; DaemonSets; Jobs; and any mix of the fault kinds.
//! Stories with faults follow the liveness rule ([`timeline`]). The same seed always
//! generates the same story ([`draw`]); the story's *run* seed is separate, so a failure
//! shrinks (`crate::shrink`) with the run seed held fixed.
//!
//! ```
//! let story = dovetail_sim::generate::story(7);
//! let text = dovetail_sim::generate::to_yaml(&story);
//! assert!(text.contains("kind: NodePool"));
//! ```

pub mod cluster;
pub mod draw;
pub mod faults;
pub mod timeline;
pub mod workloads;

use crate::scenario::controller::ControllerConfig;
use crate::scenario::{ControllerSpec, Phases, Scenario};
use draw::{Dice, mins};

/// The story generated from `seed`.
pub fn story(seed: u64) -> Scenario {
    let mut dice = Dice::new(seed);
    let with_faults = dice.chance(0.8);
    let pools = cluster::pool_names(&mut dice);
    let faults_until = with_faults.then(|| timeline::faults_until(&mut dice));
    // Workload times fall in the first half of the shortest story of this shape.
    let shortest = match faults_until {
        Some(t) => crate::scenario::SimDuration(t.0 + mins(6).0),
        None => mins(6),
    };
    let workloads = workloads::draw(&mut dice, shortest, &pools);
    let cluster = cluster::draw(&mut dice, &pools, workloads.cpu_demand);
    let mut scenario = Scenario {
        name: format!("generated-{seed}"),
        description: format!("generated story {seed} (dovetail_sim::generate::story)"),
        duration: mins(6),
        region: "us-east-1".into(),
        zones: Vec::new(),
        on_demand_prices: std::collections::BTreeMap::new(),
        capacity_reservations: Vec::new(),
        controller: ControllerSpec::default(),
        install: Vec::new(),
        manifests: cluster.manifests,
        workloads: workloads.entries,
        faults: Vec::new(),
        invariants: None,
        phases: Phases::default(),
        steps: Vec::new(),
    };
    match faults_until {
        None => {
            // Without faults the whole run is the liveness window, so the story lasts at
            // least the loader's shortest window (longest liveness requirement + margin).
            let config = timeline::thresholds(false, false, cluster.longest_grace_seconds);
            let calm = timeline::calm(&mut dice).duration;
            let need = dovetail_world::SimDuration(crate::scenario::liveness_window::shortest_window(&config));
            scenario.duration = calm.max(need);
            scenario.invariants = Some(config);
        }
        Some(t) => {
            let mix = faults::draw(&mut dice, t);
            let config =
                timeline::thresholds(mix.has_zone_outage, mix.has_missing_access_entry, cluster.longest_grace_seconds);
            let (timeline, phases) = timeline::with_faults(t, &config);
            scenario.duration = timeline.duration;
            scenario.phases = phases;
            scenario.invariants = Some(config);
            scenario.faults = mix.faults;
            if mix.needs_two_replicas || dice.chance(0.15) {
                scenario.controller =
                    ControllerSpec::Run(ControllerConfig { replicas: 2, ..ControllerConfig::default() });
            }
        }
    }
    scenario
}

/// A scenario as a YAML file the loader reads back (the shrinker's output uses it too).
pub fn to_yaml(scenario: &Scenario) -> String {
    serde_saphyr::to_string(scenario).unwrap_or_else(|e| format!("# cannot print the scenario: {e}\n"))
}

#[cfg(test)]
mod tests;
