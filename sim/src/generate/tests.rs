//! The generator's promises: valid by construction, the liveness rule, determinism, and
//! breadth (every fault kind and every feature the brief names shows up).

use std::collections::BTreeSet;
use std::path::Path;

use super::*;
use crate::scenario::faults::KINDS;
use crate::scenario::{Loaded, Workload};

const SEEDS: std::ops::Range<u64> = 0..400;

#[test]
fn every_story_loads_with_the_normal_loader() {
    for seed in SEEDS {
        let text = to_yaml(&story(seed));
        if let Err(e) = Loaded::from_str(Path::new("generated.yaml"), &text) {
            panic!("story {seed} does not load: {e}\n{text}");
        }
    }
}

#[test]
fn stories_with_faults_follow_the_liveness_rule() {
    for seed in SEEDS {
        let s = story(seed);
        if s.faults.is_empty() {
            continue;
        }
        let until = s.phases.faults_until.unwrap_or_else(|| panic!("story {seed} has faults but no faultsUntil"));
        for f in &s.faults {
            let end = f.at.map(|at| at.0 + f.lasts.as_ref().map_or(Default::default(), |d| d.max().0));
            assert!(end.is_none_or(|e| e <= until.0), "story {seed}: a scheduled fault ends after faultsUntil");
        }
        let config = s.invariants.clone().unwrap_or_default();
        let need = crate::scenario::liveness_window::shortest_window(&config);
        assert!(
            s.duration.0 - until.0 >= need,
            "story {seed}: liveness window {:?} < {need:?}",
            s.duration.0 - until.0
        );
    }
}

#[test]
fn a_seed_always_generates_the_same_story() {
    for seed in [0, 1, 99, u64::MAX] {
        assert_eq!(to_yaml(&story(seed)), to_yaml(&story(seed)));
    }
    assert_ne!(to_yaml(&story(1)), to_yaml(&story(2)));
}

#[test]
fn the_generator_reaches_every_fault_kind_and_feature() {
    let mut seen = BTreeSet::new();
    for seed in SEEDS {
        let s = story(seed);
        for f in &s.faults {
            seen.insert(f.kind().expect("one kind").to_string());
            if f.per_hour.is_some() {
                seen.insert("random fault".into());
            }
        }
        let pools = s.manifests.iter().filter(|m| m["kind"] == "NodePool").count();
        if pools > 1 {
            seen.insert("several NodePools".into());
        }
        let text = to_yaml(&s);
        for needle in [
            "WhenEmptyOrUnderutilized",
            "consolidationPolicy: WhenEmpty\n",
            "schedule:",
            "reasons:",
            "expireAfter: 6m",
            "weight:",
            "limits:",
            "kind: EC2NodeClass",
            "name: tagged",
            "topologySpreadConstraints:",
            "podAntiAffinity:",
            "nodeAffinity:",
            "doNotDisrupt: true",
            "priorityClassName: high",
            "karpenter.sh/nodepool:",
            "replicas: 2",
        ] {
            if text.contains(needle) {
                seen.insert(needle.to_string());
            }
        }
        for w in &s.workloads {
            seen.insert(
                match w {
                    Workload::Deployment(_) => "deployment",
                    Workload::Job(_) => "job",
                    Workload::DaemonSet(_) => "daemonSet",
                    Workload::Pdb(_) => "pdb",
                    Workload::PriorityClass(_) => "priorityClass",
                }
                .into(),
            );
        }
    }
    for kind in KINDS {
        assert!(seen.contains(*kind), "no story in {SEEDS:?} has a {kind} fault");
    }
    for feature in [
        "random fault",
        "several NodePools",
        "WhenEmptyOrUnderutilized",
        "consolidationPolicy: WhenEmpty\n",
        "schedule:",
        "reasons:",
        "expireAfter: 6m",
        "weight:",
        "limits:",
        "name: tagged",
        "topologySpreadConstraints:",
        "podAntiAffinity:",
        "nodeAffinity:",
        "doNotDisrupt: true",
        "priorityClassName: high",
        "karpenter.sh/nodepool:",
        "replicas: 2",
        "deployment",
        "job",
        "daemonSet",
        "pdb",
        "priorityClass",
    ] {
        assert!(seen.contains(feature), "no story in {SEEDS:?} has {feature:?}");
    }
}
