//! InterPodAffinity: required and preferred (anti-)affinity, and default spreading.

use super::*;

#[test]
fn hostname_anti_affinity_puts_one_replica_per_node() {
    let mut s = scheduler(&three_zones()[..3]);
    let mut r = rng();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        anti(&mut p, "web", HOST);
        nodes.push(place(&mut s, &p, &mut r).unwrap());
    }
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3);
    let mut p = pod("p3", "100m", "100Mi");
    anti(&mut p, "web", HOST);
    let err = place(&mut s, &p, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 \
         nodes are available: 3 No preemption victims found for incoming pod."
    );
}

#[test]
fn anti_affinity_match_label_keys_only_repel_the_same_revision() {
    for (keys, fits) in [(None, false), (Some(vec!["pod-template-hash".to_string()]), true)] {
        let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10")]);
        let mut old = pod("old", "100m", "100Mi");
        old.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v1".into());
        spec(&mut old).node_name = Some("a".into());
        s.cache_mut().upsert_pod(&old);
        let mut p = pod("new", "100m", "100Mi");
        p.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v2".into());
        anti(&mut p, "web", HOST);
        let terms = spec(&mut p).affinity.as_mut().unwrap().pod_anti_affinity.as_mut().unwrap();
        terms.required_during_scheduling_ignored_during_execution.as_mut().unwrap()[0].match_label_keys = keys.clone();
        assert_eq!(place(&mut s, &p, &mut rng()).is_ok(), fits, "matchLabelKeys {keys:?}");
    }
}

#[test]
fn existing_pods_anti_affinity_repels_matching_newcomers() {
    let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10")]);
    let mut r = rng();
    let mut guard = labelled(pod("guard", "100m", "100Mi"), "guard");
    anti(&mut guard, "intruder", HOST);
    place(&mut s, &guard, &mut r).unwrap();
    let err = place(&mut s, &labelled(pod("x", "100m", "100Mi"), "intruder"), &mut r).unwrap_err();
    assert!(
        err.starts_with("0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."),
        "{err}"
    );
    assert!(place(&mut s, &labelled(pod("y", "100m", "100Mi"), "friend"), &mut r).is_ok());
}

#[test]
fn required_zone_affinity_follows_the_target_and_first_pod_may_self_match() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let with_affinity = |name: &str, app: &str, target: &str| {
        let mut p = labelled(pod(name, "100m", "100Mi"), app);
        spec(&mut p).affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                    label_selector: Some(selector(target)),
                    topology_key: ZONE.into(),
                    ..Default::default()
                }]),
                preferred_during_scheduling_ignored_during_execution: None,
            }),
            ..Default::default()
        });
        p
    };
    // No "db" pod exists and the pod does not match its own term: unschedulable.
    let err = place(&mut s, &with_affinity("c0", "cache", "db"), &mut r).unwrap_err();
    assert!(err.starts_with("0/6 nodes are available: 6 node(s) didn't match pod affinity rules."), "{err}");
    // Self-affinity: the first pod goes anywhere, later ones follow its zone.
    let first = place(&mut s, &with_affinity("db0", "db", "db"), &mut r).unwrap();
    let zone = s.cache().node(&first).unwrap().labels[ZONE].clone();
    for i in 1..4 {
        let n = place(&mut s, &with_affinity(&format!("db{i}"), "db", "db"), &mut r).unwrap();
        assert_eq!(s.cache().node(&n).unwrap().labels[ZONE], zone);
    }
}

#[test]
fn preferred_pod_anti_affinity_spreads_even_when_bin_packing() {
    let mut s = Scheduler::new(SchedulerConfig {
        scoring_strategy: ScoringStrategy::MostAllocated,
        ..SchedulerConfig::default()
    });
    for n in &three_zones()[..3] {
        s.cache_mut().upsert_node(n);
    }
    let mut r = rng();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let mut p = pod(&format!("p{i}"), "1", "1Gi");
        spec(&mut p).affinity = Some(Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: None,
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    k8s_openapi::api::core::v1::WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: PodAffinityTerm {
                            label_selector: Some(selector("web")),
                            topology_key: HOST.into(),
                            ..Default::default()
                        },
                    },
                ]),
            }),
            ..Default::default()
        });
        nodes.push(place(&mut s, &p, &mut r).unwrap());
    }
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3, "one per node despite MostAllocated");
}

#[test]
fn preferred_pod_affinity_pulls_pods_next_to_their_target() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let target = place(&mut s, &labelled(pod("db", "4", "8Gi"), "db"), &mut r).unwrap();
    let zone = s.cache().node(&target).unwrap().labels[ZONE].clone();
    for i in 0..3 {
        let mut p = labelled(pod(&format!("c{i}"), "100m", "100Mi"), "cache");
        spec(&mut p).affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: None,
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    k8s_openapi::api::core::v1::WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: PodAffinityTerm {
                            label_selector: Some(selector("db")),
                            topology_key: ZONE.into(),
                            ..Default::default()
                        },
                    },
                ]),
            }),
            ..Default::default()
        });
        let n = place(&mut s, &p, &mut r).unwrap();
        assert_eq!(s.cache().node(&n).unwrap().labels[ZONE], zone);
    }
}

#[test]
fn default_spreading_spreads_a_replica_sets_pods_across_nodes() {
    let mut s = scheduler(&three_zones());
    s.cache_mut().set_controller_selector("rs-uid", Some(&selector("web")));
    let mut r = rng();
    let mut placed = Vec::new();
    for i in 0..6 {
        let mut p = pod(&format!("p{i}"), "10m", "10Mi");
        p.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "rs".into(),
            uid: "rs-uid".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        placed.push(place(&mut s, &p, &mut r).unwrap());
    }
    placed.sort();
    placed.dedup();
    assert_eq!(placed.len(), 6, "one replica per node");
}
