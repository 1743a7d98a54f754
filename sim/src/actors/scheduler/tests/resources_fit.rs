//! NodeResourcesFit: requests against allocatable, pod counts, extended resources, preemption dry runs.

use super::*;

#[test]
fn pod_larger_than_any_node_is_unresolvable_insufficient_cpu() {
    let mut s = scheduler(&[node("a", "z1", "2", "4Gi", "10"), node("b", "z1", "2", "4Gi", "10")]);
    let err = place(&mut s, &pod("p", "3", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 \
         Preemption is not helpful for scheduling."
    );
}

#[test]
fn full_nodes_report_insufficient_resources_and_no_victims() {
    let mut s = scheduler(&[node("a", "z1", "2", "4Gi", "10")]);
    let mut r = rng();
    place(&mut s, &pod("filler", "1500m", "3Gi"), &mut r).unwrap();
    let err = place(&mut s, &pod("p", "1", "2Gi"), &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 nodes \
         are available: 1 No preemption victims found for incoming pod."
    );
}

#[test]
fn preemption_dry_run_reports_what_still_fails_without_lower_priority_pods() {
    let bound = |name: &str, cpu: &str, memory: &str, priority: i32, node: &str| {
        let mut p = pod(name, cpu, memory);
        spec(&mut p).priority = Some(priority);
        spec(&mut p).node_name = Some(node.into());
        p
    };
    let mut s = scheduler(&[node("a", "z1", "2", "4Gi", "10"), node("b", "z1", "2", "4Gi", "10")]);
    s.cache_mut().upsert_pod(&bound("low", "500m", "3Gi", -10, "a"));
    s.cache_mut().upsert_pod(&bound("filler", "1500m", "3Gi", 100, "b"));
    let mut r = rng();
    // On `a`, evicting `low` would make room: real kube-scheduler would preempt there.
    let mut high = pod("high", "1800m", "3500Mi");
    spec(&mut high).priority = Some(100);
    match s.schedule(&high, &mut r) {
        Err(SchedulingFailure::Unfit(e)) => {
            assert!(e.preemption_might_help);
            assert!(
                e.to_string().ends_with(
                    "preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 \
                     No preemption victims found for incoming pod."
                ),
                "{e}"
            );
        }
        other => panic!("expected a FitError, got {other:?}"),
    }
    // With a higher-priority pod also on `a`, evicting `low` is not enough: the dry run reports
    // what still fails.
    s.cache_mut().upsert_pod(&bound("mid", "300m", "500Mi", 100, "a"));
    match s.schedule(&high, &mut r) {
        Err(SchedulingFailure::Unfit(e)) => {
            assert!(!e.preemption_might_help);
            assert!(
                e.to_string().ends_with(
                    "preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 No preemption victims \
                     found for incoming pod."
                ),
                "{e}"
            );
        }
        other => panic!("expected a FitError, got {other:?}"),
    }
}

#[test]
fn pod_count_limit_says_too_many_pods() {
    let mut s = scheduler(&[node("a", "z1", "8", "8Gi", "2")]);
    let mut r = rng();
    place(&mut s, &pod("p1", "10m", "1Mi"), &mut r).unwrap();
    place(&mut s, &pod("p2", "10m", "1Mi"), &mut r).unwrap();
    let err = place(&mut s, &pod("p3", "10m", "1Mi"), &mut r).unwrap_err();
    assert!(err.starts_with("0/1 nodes are available: 1 Too many pods."), "{err}");
}

#[test]
fn extended_resources_must_be_allocatable() {
    let gpu_node = {
        let mut n = node("gpu", "z1", "8", "8Gi", "10");
        n.status.as_mut().unwrap().allocatable.as_mut().unwrap().insert("nvidia.com/gpu".into(), q("1"));
        n
    };
    let mut s = scheduler(&[node("cpu", "z1", "8", "8Gi", "10"), gpu_node]);
    let mut p = pod("p", "1", "1Gi");
    spec(&mut p).containers[0]
        .resources
        .as_mut()
        .unwrap()
        .requests
        .as_mut()
        .unwrap()
        .insert("nvidia.com/gpu".into(), q("1"));
    let mut r = rng();
    assert_eq!(place(&mut s, &p, &mut r), Ok("gpu".to_string()));
    let mut p2 = p.clone();
    p2.metadata.name = Some("p2".into());
    let err = place(&mut s, &p2, &mut r).unwrap_err();
    assert!(err.starts_with("0/2 nodes are available: 2 Insufficient nvidia.com/gpu."), "{err}");
}
