//! PodTopologySpread: hard and soft constraints, minDomains, nodeTaintsPolicy, matchLabelKeys.

use super::*;

fn spread(p: &mut Pod, key: &str, max_skew: i32, when: &str, min_domains: Option<i32>) {
    spec(p).topology_spread_constraints.get_or_insert_with(Vec::new).push(TopologySpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: when.into(),
        label_selector: Some(selector("web")),
        min_domains,
        ..Default::default()
    });
}

fn zone_counts(s: &Scheduler, placed: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for n in placed {
        *out.entry(s.cache().node(n).unwrap().labels[ZONE].clone()).or_insert(0) += 1;
    }
    out
}

#[test]
fn hard_zone_spread_lands_evenly_across_three_zones() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let mut placed = Vec::new();
    for i in 0..9 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        spread(&mut p, ZONE, 1, "DoNotSchedule", None);
        placed.push(place(&mut s, &p, &mut r).unwrap());
    }
    assert!(zone_counts(&s, &placed).values().all(|&c| c == 3), "{:?}", zone_counts(&s, &placed));
}

#[test]
fn hard_spread_rejects_skewed_domains_with_the_kube_message() {
    // Only z0 has room; maxSkew 1 means the second pod cannot go there while z1 has 0.
    let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10"), node("b", "z1", "100m", "8Gi", "10")]);
    let mut r = rng();
    let mut p = pod("p0", "200m", "100Mi");
    spread(&mut p, ZONE, 1, "DoNotSchedule", None);
    assert_eq!(place(&mut s, &p, &mut r), Ok("a".to_string()));
    let mut p1 = pod("p1", "200m", "100Mi");
    spread(&mut p1, ZONE, 1, "DoNotSchedule", None);
    let err = place(&mut s, &p1, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread \
         constraints. preemption: 0/2 nodes are available: 1 No preemption victims found for \
         incoming pod, 1 Preemption is not helpful for scheduling."
    );
}

#[test]
fn min_domains_treats_missing_domains_as_empty() {
    let mut s = scheduler(&[node("a", "z0", "8", "8Gi", "10"), node("b", "z1", "8", "8Gi", "10")]);
    let mut r = rng();
    let mut placed = 0;
    for i in 0..4 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        spread(&mut p, ZONE, 1, "DoNotSchedule", Some(3));
        if place(&mut s, &p, &mut r).is_ok() {
            placed += 1;
        }
    }
    assert_eq!(placed, 2, "with 2 of 3 domains, the global minimum is 0: one pod per zone");
}

#[test]
fn nodes_without_the_topology_key_are_unresolvable_for_spread() {
    let mut no_zone = node("a", "z0", "8", "8Gi", "10");
    no_zone.metadata.labels.as_mut().unwrap().remove(ZONE);
    let mut s = scheduler(&[no_zone]);
    let mut p = pod("p", "100m", "100Mi");
    spread(&mut p, ZONE, 1, "DoNotSchedule", None);
    let err = place(&mut s, &p, &mut rng()).unwrap_err();
    assert!(
        err.starts_with(
            "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints \
             (missing required label)."
        ),
        "{err}"
    );
}

#[test]
fn soft_spread_prefers_emptier_zones() {
    let mut s = scheduler(&three_zones());
    let mut r = rng();
    let mut placed = Vec::new();
    for i in 0..6 {
        let mut p = pod(&format!("p{i}"), "100m", "100Mi");
        spread(&mut p, ZONE, 1, "ScheduleAnyway", None);
        placed.push(place(&mut s, &p, &mut r).unwrap());
    }
    assert!(zone_counts(&s, &placed).values().all(|&c| c == 2), "{:?}", zone_counts(&s, &placed));
}

#[test]
fn node_taints_policy_honor_drops_tainted_domains() {
    let nodes = [
        node("a", "z0", "8", "8Gi", "10"),
        with_taint(node("b", "z1", "8", "8Gi", "10"), taint("k", "", "NoSchedule")),
    ];
    for (policy, second_fits) in [(None, false), (Some("Honor"), true)] {
        let mut s = scheduler(&nodes);
        let mut r = rng();
        for (i, expect_ok) in [(0, true), (1, second_fits)] {
            let mut p = pod(&format!("p{i}"), "100m", "100Mi");
            spread(&mut p, ZONE, 1, "DoNotSchedule", None);
            spec(&mut p).topology_spread_constraints.as_mut().unwrap()[0].node_taints_policy = policy.map(Into::into);
            assert_eq!(place(&mut s, &p, &mut r).is_ok(), expect_ok, "policy {policy:?} pod {i}");
        }
    }
}

#[test]
fn match_label_keys_count_only_the_same_revision() {
    let nodes = [node("a", "z0", "8", "8Gi", "10"), node("b", "z1", "10m", "8Gi", "10")];
    for (keys, fits) in [(None, false), (Some(vec!["pod-template-hash".to_string()]), true)] {
        let mut s = scheduler(&nodes);
        for i in 0..2 {
            let mut old = pod(&format!("old{i}"), "100m", "100Mi");
            old.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v1".into());
            spec(&mut old).node_name = Some("a".into());
            s.cache_mut().upsert_pod(&old);
        }
        let mut p = pod("new", "100m", "100Mi");
        p.metadata.labels.as_mut().unwrap().insert("pod-template-hash".into(), "v2".into());
        spread(&mut p, ZONE, 1, "DoNotSchedule", None);
        spec(&mut p).topology_spread_constraints.as_mut().unwrap()[0].match_label_keys = keys.clone();
        assert_eq!(place(&mut s, &p, &mut rng()).is_ok(), fits, "matchLabelKeys {keys:?}");
    }
}
