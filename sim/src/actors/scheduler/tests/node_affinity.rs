//! NodeAffinity (node selectors, required and preferred terms, matchFields) and NodePorts.

use super::*;

fn require(p: &mut Pod, terms: Vec<NodeSelectorTerm>) {
    spec(p).affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector { node_selector_terms: terms }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        ..Default::default()
    });
}

fn expr(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

#[test]
fn node_selector_and_required_affinity_filter_nodes() {
    let mut s = scheduler(&[
        with_label(node("small", "z1", "8", "8Gi", "10"), "cores", "2"),
        with_label(node("big", "z2", "8", "8Gi", "10"), "cores", "16"),
    ]);
    let mut r = rng();
    let mut p = pod("p", "1", "1Gi");
    require(
        &mut p,
        vec![NodeSelectorTerm { match_expressions: Some(vec![expr("cores", "Gt", &["4"])]), match_fields: None }],
    );
    assert_eq!(place(&mut s, &p, &mut r), Ok("big".to_string()));
    let mut p2 = pod("p2", "1", "1Gi");
    spec(&mut p2).node_selector = Some(BTreeMap::from([(ZONE.to_string(), "z3".to_string())]));
    let err = place(&mut s, &p2, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: \
         0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
}

#[test]
fn match_fields_on_node_name_narrow_candidates_in_prefilter() {
    let mut s = scheduler(&[
        node("a", "z1", "8", "8Gi", "10"),
        node("b", "z1", "8", "8Gi", "10"),
        node("c", "z1", "1", "8Gi", "10"),
    ]);
    let mut r = rng();
    let mut p = pod("p", "2", "1Gi");
    require(
        &mut p,
        vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![expr("metadata.name", "In", &["c"])]),
        }],
    );
    let err = place(&mut s, &p, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) \
         [NodeAffinity]. preemption: 0/3 nodes are available: 3 Preemption is not helpful for \
         scheduling."
    );
    let mut conflict = pod("x", "1", "1Gi");
    require(
        &mut conflict,
        vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![expr("metadata.name", "In", &["a"]), expr("metadata.name", "In", &["b"])]),
        }],
    );
    let err = place(&mut s, &conflict, &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/3 nodes are available: pod affinity terms conflict. preemption: 0/3 nodes are available: 3 \
         Preemption is not helpful for scheduling."
    );
}

#[test]
fn preferred_node_affinity_wins_the_score() {
    let mut s =
        scheduler(&[node("a", "z1", "8", "8Gi", "10"), with_label(node("b", "z2", "8", "8Gi", "10"), "fast", "yes")]);
    let mut p = pod("p", "1", "1Gi");
    spec(&mut p).affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: None,
            preferred_during_scheduling_ignored_during_execution: Some(vec![PreferredSchedulingTerm {
                weight: 50,
                preference: NodeSelectorTerm {
                    match_expressions: Some(vec![expr("fast", "Exists", &[])]),
                    match_fields: None,
                },
            }]),
        }),
        ..Default::default()
    });
    assert_eq!(place(&mut s, &p, &mut rng()), Ok("b".to_string()));
}

// ---------- NodePorts ----------

#[test]
fn host_ports_conflict() {
    let mut s = scheduler(&[node("a", "z1", "8", "8Gi", "10")]);
    let mut r = rng();
    let with_port = |name: &str| {
        let mut p = pod(name, "10m", "1Mi");
        spec(&mut p).containers[0].ports =
            Some(vec![ContainerPort { container_port: 80, host_port: Some(8080), ..Default::default() }]);
        p
    };
    place(&mut s, &with_port("p1"), &mut r).unwrap();
    let err = place(&mut s, &with_port("p2"), &mut r).unwrap_err();
    assert_eq!(
        err,
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. \
         preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
}
