//! NodeUnschedulable, NodeName and TaintToleration (readiness taints included).

use super::*;

#[test]
fn cordoned_nodes_take_only_pods_tolerating_unschedulable() {
    let mut cordoned = node("a", "z1", "2", "4Gi", "10");
    cordoned.spec.as_mut().unwrap().unschedulable = Some(true);
    let mut s = scheduler(&[cordoned]);
    let mut r = rng();
    let err = place(&mut s, &pod("p", "1", "1Gi"), &mut r).unwrap_err();
    assert!(err.starts_with("0/1 nodes are available: 1 node(s) were unschedulable."), "{err}");
    let mut tolerant = pod("t", "1", "1Gi");
    spec(&mut tolerant).tolerations = Some(vec![Toleration {
        key: Some("node.kubernetes.io/unschedulable".into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }]);
    assert_eq!(place(&mut s, &tolerant, &mut r), Ok("a".to_string()));
}

#[test]
fn node_name_filter_rejects_other_nodes() {
    let mut p = pod("p", "1", "1Gi");
    spec(&mut p).node_name = Some("b".into());
    let facts = PodFacts::new(&p);
    let a = node_info::NodeInfo::new(&node("a", "z1", "2", "4Gi", "10"));
    let b = node_info::NodeInfo::new(&node("b", "z1", "2", "4Gi", "10"));
    assert_eq!(
        node_name::filter(&facts, &a).unwrap().reasons,
        vec!["node(s) didn't match the requested node name".to_string()]
    );
    assert!(node_name::filter(&facts, &b).is_none());
}

// ---------- TaintToleration and readiness ----------

#[test]
fn brief_example_message_with_unregistered_taints() {
    let mut s = scheduler(&[
        node("a", "z1", "1", "4Gi", "10"),
        with_taint(node("b", "z1", "8", "8Gi", "10"), taint("karpenter.sh/unregistered", "", "NoExecute")),
        with_taint(node("c", "z1", "8", "8Gi", "10"), taint("karpenter.sh/unregistered", "", "NoExecute")),
    ]);
    let err = place(&mut s, &pod("p", "2", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint \
         {karpenter.sh/unregistered: }. preemption: 0/3 nodes are available: 3 Preemption is not \
         helpful for scheduling."
    );
}

#[test]
fn not_ready_and_uninitialized_nodes_are_skipped_through_their_taints() {
    let mut s = scheduler(&[
        with_taint(node("nr", "z1", "8", "8Gi", "10"), taint("node.kubernetes.io/not-ready", "", "NoSchedule")),
        with_taint(
            node("un", "z1", "8", "8Gi", "10"),
            taint("node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"),
        ),
        with_taint(node("ur", "z1", "8", "8Gi", "10"), taint("node.kubernetes.io/unreachable", "", "NoExecute")),
    ]);
    let err = place(&mut s, &pod("p", "1", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 1 node(s) had untolerated taint \
         {node.cloudprovider.kubernetes.io/uninitialized: true}, 1 node(s) had untolerated taint \
         {node.kubernetes.io/not-ready: }, 1 node(s) had untolerated taint \
         {node.kubernetes.io/unreachable: }. preemption: 0/3 nodes are available: 3 Preemption is \
         not helpful for scheduling."
    );
}

#[test]
fn kube_1_35_wording_hides_taints_and_adds_dra_message() {
    let mut s =
        Scheduler::new(SchedulerConfig { messages: FitMessageStyle::kube_1_35(), ..SchedulerConfig::default() });
    s.cache_mut().upsert_node(&with_taint(node("a", "z1", "8", "8Gi", "10"), taint("k", "v", "NoSchedule")));
    let err = place(&mut s, &pod("p", "1", "1Gi"), &mut rng()).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, \
         preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
}

#[test]
fn tolerated_taints_pass_and_prefer_no_schedule_only_scores() {
    let mut s = scheduler(&[
        with_taint(node("soft", "z1", "8", "8Gi", "10"), taint("k", "v", "PreferNoSchedule")),
        with_taint(node("hard", "z1", "8", "8Gi", "10"), taint("k", "v", "NoSchedule")),
        node("clean", "z1", "8", "8Gi", "10"),
    ]);
    let mut r = rng();
    // Without tolerations: `clean` beats `soft` on the TaintToleration score.
    for i in 0..5 {
        assert_eq!(place(&mut s, &pod(&format!("p{i}"), "10m", "1Mi"), &mut r), Ok("clean".to_string()));
    }
    let mut tolerant = pod("t", "10m", "1Mi");
    spec(&mut tolerant).tolerations = Some(vec![Toleration {
        key: Some("k".into()),
        value: Some("v".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }]);
    let placed = place(&mut s, &tolerant, &mut r).unwrap();
    assert_eq!(placed, "hard", "emptiest node it tolerates");
}
