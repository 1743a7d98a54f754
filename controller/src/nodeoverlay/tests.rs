//! Ports of core `pkg/controllers/nodeoverlay/suite_test.go` and `store_test.go`, named after
//! their `It`s, run against [`evaluate`] and the [`InstanceTypeStore`] directly (the
//! reconciler around them only lists, patches and swaps).

use std::sync::Arc;

use serde_json::json;

use super::evaluate::{PoolTypes, evaluate};
use super::store::InstanceTypeStore;
use crate::apis::{NodeOverlay, NodePool};
use crate::cloudprovider::{CloudError, InstanceType, fake};

fn pool(name: &str, labels: serde_json::Value) -> Arc<NodePool> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": []}}}
        }))
        .expect("nodepool"),
    )
}

fn overlay(name: &str, spec: serde_json::Value) -> NodeOverlay {
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name}, "spec": spec
    }))
    .expect("overlay")
}

fn types() -> Vec<Arc<InstanceType>> {
    vec![Arc::new(fake::instance_type("m", 2, 8, "amd64")), Arc::new(fake::instance_type("c", 4, 8, "arm64"))]
}

/// Evaluates and swaps into a store, as one reconcile does.
fn run(overlays: &mut [NodeOverlay], pools: &[PoolTypes]) -> (InstanceTypeStore, super::evaluate::Evaluation) {
    let evaluation = evaluate(overlays, pools);
    let store = InstanceTypeStore::new();
    store.update(evaluation.store.clone());
    (store, evaluation)
}

fn applied(store: &InstanceTypeStore, pool: &str, types: Vec<Arc<InstanceType>>) -> Vec<Arc<InstanceType>> {
    store.apply_all(pool, types).expect("evaluated pool")
}

#[test]
fn should_return_the_same_instance_type_when_zero_overlay_are_applied() {
    let pools = vec![(pool("default", json!({})), types())];
    let (store, evaluation) = run(&mut [], &pools);
    assert!(evaluation.conflicts.is_empty());
    assert_eq!(applied(&store, "default", types()), types());
}

#[test]
fn should_fail_validation_for_invalid_requirements_values() {
    let mut overlays = [overlay(
        "overlay-a",
        json!({"requirements": [{"key": "kubernetes.io/custom", "operator": "In", "values": ["x"]}], "price": "1"}),
    )];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    assert!(evaluation.runtime_failures.contains_key("overlay-a"), "{evaluation:?}");
}

#[test]
fn should_fail_validation_for_invalid_capacity_values() {
    let mut overlays = [overlay("overlay-a", json!({"requirements": [], "capacity": {"memory": "1Gi"}}))];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    assert!(evaluation.runtime_failures["overlay-a"].contains("invalid capacity: memory"));
}

#[test]
fn should_fail_when_requirements_overlays_overlap() {
    let mut overlays = [
        overlay(
            "overlay-a",
            json!({"requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
                   "weight": 10, "price": "1.03"}),
        ),
        overlay(
            "overlay-b",
            json!({"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "Exists"}],
                   "weight": 10, "price": "23"}),
        ),
    ];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    // Equal weights: the later name (overlay-b) is stored first, so overlay-a conflicts.
    assert!(evaluation.conflicts.contains("overlay-a"));
    assert!(!evaluation.conflicts.contains("overlay-b"));
}

#[test]
fn should_succeed_with_requirements_overlays_dont_overlap() {
    let mut overlays = [
        overlay(
            "overlay-a",
            json!({"requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
                   "weight": 10, "price": "1.03"}),
        ),
        overlay(
            "overlay-b",
            json!({"requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                   "weight": 10, "price": "23"}),
        ),
    ];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    assert!(evaluation.conflicts.is_empty());
}

#[test]
fn should_fail_with_requirements_overlays_overlap_on_zone() {
    let zone = |z: &str| json!([{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [z]}]);
    let mut overlays = [
        overlay("overlay-a", json!({"requirements": zone("test-zone-1"), "weight": 10, "price": "1"})),
        overlay("overlay-b", json!({"requirements": zone("test-zone-1"), "weight": 10, "price": "2"})),
        overlay("overlay-c", json!({"requirements": zone("test-zone-2"), "weight": 10, "price": "3"})),
    ];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    assert_eq!(evaluation.conflicts.iter().collect::<Vec<_>>(), ["overlay-a"]);
}

#[test]
fn should_fail_with_requirements_overlays_overlap_on_capacity_type() {
    let ct = |c: &str| json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [c]}]);
    let mut overlays = [
        overlay("overlay-a", json!({"requirements": ct("spot"), "weight": 10, "priceAdjustment": "-10%"})),
        overlay("overlay-b", json!({"requirements": ct("spot"), "weight": 10, "priceAdjustment": "+1"})),
        overlay("overlay-c", json!({"requirements": ct("on-demand"), "weight": 10, "price": "3"})),
    ];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    assert_eq!(evaluation.conflicts.iter().collect::<Vec<_>>(), ["overlay-a"]);
}

#[test]
fn should_fail_with_conflicting_capacity_overlays_with_overlapping_requirements() {
    let mut overlays = [
        overlay("overlay-a", json!({"requirements": [], "weight": 10, "capacity": {"smarter-devices/fuse": "1"}})),
        overlay("overlay-b", json!({"requirements": [], "weight": 10, "capacity": {"smarter-devices/fuse": "2"}})),
    ];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    assert_eq!(evaluation.conflicts.iter().collect::<Vec<_>>(), ["overlay-a"]);
}

#[test]
fn should_pass_with_conflicting_capacity_overlays_with_mutually_exclusive_weights() {
    let mut overlays = [
        overlay("overlay-a", json!({"requirements": [], "weight": 10, "capacity": {"smarter-devices/fuse": "1"}})),
        overlay("overlay-b", json!({"requirements": [], "weight": 20, "capacity": {"smarter-devices/fuse": "2"}})),
    ];
    let (_, evaluation) = run(&mut overlays, &[(pool("default", json!({})), types())]);
    assert!(evaluation.conflicts.is_empty());
}

#[test]
fn should_pass_with_non_conflicting_capacity_overlays_with_overlapping_requirements() {
    let mut overlays = [
        overlay("overlay-a", json!({"requirements": [], "weight": 10, "capacity": {"smarter-devices/fuse": "1"}})),
        overlay("overlay-b", json!({"requirements": [], "weight": 10, "capacity": {"example.com/other": "2"}})),
    ];
    let pools = vec![(pool("default", json!({})), types())];
    let (store, evaluation) = run(&mut overlays, &pools);
    assert!(evaluation.conflicts.is_empty());
    let it = &applied(&store, "default", types())[0];
    assert_eq!(it.capacity.get("smarter-devices/fuse"), 1);
    assert_eq!(it.capacity.get("example.com/other"), 2);
    assert_eq!(it.allocatable().get("example.com/other"), 2);
}

#[test]
fn should_apply_higher_weight_overlay_when_multiple_overlays_match_the_same_instance_type() {
    let req = json!([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.2xlarge"]}]);
    let mut overlays = [
        overlay("overlay-a", json!({"requirements": req, "weight": 10, "capacity": {"smarter-devices/fuse": "5"}})),
        overlay("overlay-b", json!({"requirements": req, "weight": 20, "capacity": {"smarter-devices/fuse": "99"}})),
    ];
    let pools = vec![(pool("default", json!({})), types())];
    let (store, evaluation) = run(&mut overlays, &pools);
    assert!(evaluation.conflicts.is_empty());
    let its = applied(&store, "default", types());
    assert_eq!(its[0].capacity.get("smarter-devices/fuse"), 99);
    assert_eq!(its[1].capacity.get("smarter-devices/fuse"), 0, "c5.4xlarge is not selected");
}

#[test]
fn should_update_price_offerings_instance_types_from_multiple_overlays_with_different_weights() {
    let mut overlays = [
        overlay(
            "overlay-a",
            json!({"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                   "weight": 20, "price": "0.01"}),
        ),
        overlay("overlay-b", json!({"requirements": [], "weight": 10, "priceAdjustment": "+100%"})),
    ];
    let pools = vec![(pool("default", json!({})), types())];
    let (store, evaluation) = run(&mut overlays, &pools);
    assert!(evaluation.conflicts.is_empty());
    let original = types();
    for (it, before) in applied(&store, "default", types()).iter().zip(&original) {
        for (offering, old) in it.offerings.iter().zip(&before.offerings) {
            let expected = if offering.capacity_type == "spot" { 0.01 } else { old.price * 2.0 };
            assert!((offering.price - expected).abs() < 1e-12, "{} {offering:?}", it.name);
        }
    }
}

#[test]
fn should_only_apply_override_for_nodepool_that_defined_in_the_overlay_requirements() {
    let mut overlays = [overlay(
        "overlay-a",
        json!({"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}],
               "capacity": {"smarter-devices/fuse": "1"}}),
    )];
    let pools = vec![(pool("a", json!({})), types()), (pool("b", json!({})), types())];
    let (store, _) = run(&mut overlays, &pools);
    assert_eq!(applied(&store, "a", types())[0].capacity.get("smarter-devices/fuse"), 1);
    assert_eq!(applied(&store, "b", types())[0].capacity.get("smarter-devices/fuse"), 0);
}

#[test]
fn should_only_apply_price_adjustments_for_nodeclaim_spec_labels_that_defined_in_the_overlay_requirements() {
    let mut overlays = [overlay(
        "overlay-a",
        json!({"requirements": [{"key": "team", "operator": "In", "values": ["blue"]}], "price": "0.5"}),
    )];
    let pools = vec![(pool("a", json!({"team": "blue"})), types()), (pool("b", json!({})), types())];
    let (store, _) = run(&mut overlays, &pools);
    assert!(applied(&store, "a", types())[0].offerings.iter().all(|o| o.price == 0.5));
    assert_eq!(applied(&store, "b", types()), types());
}

#[test]
fn should_that_there_is_not_a_partial_application_for_nodepools() {
    // overlay-b conflicts with overlay-c only in pool "b": it is applied in neither pool.
    let mut overlays = [
        overlay(
            "overlay-c",
            json!({"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["b"]}],
                   "weight": 10, "price": "7"}),
        ),
        overlay("overlay-b", json!({"requirements": [], "weight": 10, "price": "3"})),
    ];
    let pools = vec![(pool("a", json!({})), types()), (pool("b", json!({})), types())];
    let (store, evaluation) = run(&mut overlays, &pools);
    assert_eq!(evaluation.conflicts.iter().collect::<Vec<_>>(), ["overlay-b"]);
    assert_eq!(applied(&store, "a", types()), types());
    assert!(applied(&store, "b", types())[0].offerings.iter().all(|o| o.price == 7.0));
}

#[test]
fn should_apply_pricing_and_capacity_adjustment_from_two_overlays_on_the_same_instance_type() {
    let mut overlays = [
        overlay("overlay-a", json!({"requirements": [], "weight": 10, "price": "0.25"})),
        overlay("overlay-b", json!({"requirements": [], "weight": 10, "capacity": {"smarter-devices/fuse": "3"}})),
    ];
    let pools = vec![(pool("default", json!({})), types())];
    let (store, evaluation) = run(&mut overlays, &pools);
    assert!(evaluation.conflicts.is_empty());
    let it = &applied(&store, "default", types())[0];
    assert!(it.offerings.iter().all(|o| o.price == 0.25));
    assert_eq!(it.capacity.get("smarter-devices/fuse"), 3);
}

#[test]
fn should_have_an_empty_instance_types_set_when_cloudprovider_does_not_return_instance_types() {
    let mut overlays = [overlay("overlay-a", json!({"requirements": [], "price": "1"}))];
    let (store, evaluation) = run(&mut overlays, &[(pool("default", json!({})), Vec::new())]);
    assert!(evaluation.conflicts.is_empty());
    assert!(applied(&store, "default", Vec::new()).is_empty());
}

#[test]
fn should_return_error_for_unevaluated_node_pool() {
    let (store, _) = run(&mut [], &[(pool("default", json!({})), types())]);
    assert_eq!(store.apply_all("other", types()), Err(CloudError::UnevaluatedNodePool("other".into())));
    assert!(InstanceTypeStore::new().apply_all("default", types()).is_err(), "nothing evaluated yet");
}

#[test]
fn should_evaluate_healthy_nodepools_when_one_nodepool_fails_get_instance_types() {
    // A pool whose types could not be listed is simply not passed in: it stays unevaluated.
    let mut overlays = [overlay("overlay-a", json!({"requirements": [], "price": "1"}))];
    let (store, _) = run(&mut overlays, &[(pool("healthy", json!({})), types())]);
    assert!(applied(&store, "healthy", types())[0].offerings.iter().all(|o| o.price == 1.0));
    assert!(store.apply_all("broken", types()).is_err());
}
