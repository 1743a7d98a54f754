//! Unit tests of [`super`]: upstream's `AdjustedPrice` cases and the weight, selection and
//! conflict rules of core `pkg/controllers/nodeoverlay/suite_test.go`, over a two-type,
//! two-zone universe.

use std::collections::BTreeMap;
use std::sync::Arc;

use dovetail_fakecloud::CapacityType;
use serde_json::{Value, json};

use super::*;

fn labels(t: &str, zone: &str, ct: CapacityType) -> Labels {
    let family = t.split('.').next().unwrap_or_default();
    Arc::new(BTreeMap::from([
        ("node.kubernetes.io/instance-type".to_owned(), t.to_owned()),
        ("karpenter.k8s.aws/instance-family".to_owned(), family.to_owned()),
        ("karpenter.k8s.aws/instance-cpu".to_owned(), if t.ends_with("xlarge") { "4" } else { "2" }.to_owned()),
        ("topology.kubernetes.io/zone".to_owned(), zone.to_owned()),
        ("karpenter.sh/capacity-type".to_owned(), ct.as_str().to_owned()),
    ]))
}

fn universe() -> Vec<UniverseOffering> {
    let mut out = Vec::new();
    for t in ["c5.large", "m5.large", "m5.xlarge"] {
        for zone in ["us-east-1a", "us-east-1b"] {
            for ct in [CapacityType::OnDemand, CapacityType::Spot] {
                out.push((t.to_owned(), zone.to_owned(), ct, labels(t, zone, ct)));
            }
        }
    }
    out
}

fn pool(name: &str) -> Value {
    json!({"metadata": {"name": name, "resourceVersion": "1"},
           "spec": {"template": {"metadata": {"labels": {"team": name}}}}})
}

fn overlay(name: &str, weight: Option<i64>, requirements: Value, spec: Value) -> Value {
    let mut spec = spec;
    spec["requirements"] = requirements;
    if let Some(w) = weight {
        spec["weight"] = json!(w);
    }
    json!({"metadata": {"name": name, "resourceVersion": "1"}, "spec": spec})
}

fn types(values: &[&str]) -> Value {
    json!([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": values}])
}

fn evaluate(overlays: &[Value], pools: &[Value]) -> NodeOverlays {
    let overlays: Vec<&Value> = overlays.iter().collect();
    let pools: Vec<&Value> = pools.iter().collect();
    NodeOverlays::evaluate(&overlays, &pools, &universe())
}

const OD: CapacityType = CapacityType::OnDemand;

#[test]
fn adjusted_price_follows_upstream() {
    assert_eq!(adjusted_price(1.0, "0.25"), 0.25);
    assert!((adjusted_price(1.0, "+0.5") - 1.5).abs() < 1e-12);
    assert!((adjusted_price(1.0, "-0.25") - 0.75).abs() < 1e-12);
    assert!((adjusted_price(2.0, "-10%") - 1.8).abs() < 1e-12);
    assert!((adjusted_price(2.0, "+50%") - 3.0).abs() < 1e-12);
    assert_eq!(adjusted_price(1.0, "-100%"), 0.0);
    assert_eq!(adjusted_price(1.0, "-5"), 0.0, "never below zero");
}

#[test]
fn a_price_overlay_prices_only_the_offerings_it_selects() {
    let zone_a = json!([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]);
    let o = evaluate(&[overlay("cheap", Some(10), zone_a, json!({"price": "0.01"}))], &[pool("default")]);
    assert_eq!(o.price(Some("default"), "m5.large", "us-east-1a", OD, 0.096), 0.01);
    assert_eq!(o.price(Some("default"), "m5.large", "us-east-1b", OD, 0.096), 0.096, "other zone");
    assert_eq!(o.price(Some("default"), "c5.large", "us-east-1a", OD, 0.085), 0.085, "other type");
    assert_eq!(o.price(None, "m5.large", "us-east-1a", OD, 0.096), 0.096, "no pool: not a pool's offering");
}

#[test]
fn the_pool_name_and_template_labels_select() {
    let by_pool = json!([{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}]);
    let by_label = json!([{"key": "team", "operator": "In", "values": ["b"]}]);
    let o = evaluate(
        &[
            overlay("pool-a", Some(1), by_pool, json!({"priceAdjustment": "+1"})),
            overlay("team-b", Some(1), by_label, json!({"priceAdjustment": "-50%"})),
        ],
        &[pool("a"), pool("b")],
    );
    assert_eq!(o.price(Some("a"), "c5.large", "us-east-1a", OD, 1.0), 2.0);
    assert_eq!(o.price(Some("b"), "c5.large", "us-east-1a", OD, 1.0), 0.5);
    assert!(!o.conflicts("pool-a") && !o.conflicts("team-b"), "disjoint offerings do not conflict");
}

#[test]
fn an_undefined_key_selects_nothing_but_not_in_passes() {
    let undefined = json!([{"key": "example.com/unknown", "operator": "In", "values": ["x"]}]);
    let not_in = json!([{"key": "example.com/unknown", "operator": "NotIn", "values": ["x"]}]);
    let o = evaluate(&[overlay("in", Some(2), undefined, json!({"price": "9"}))], &[pool("p")]);
    assert_eq!(o.price(Some("p"), "c5.large", "us-east-1a", OD, 1.0), 1.0);
    let o = evaluate(&[overlay("not-in", Some(2), not_in, json!({"price": "9"}))], &[pool("p")]);
    assert_eq!(o.price(Some("p"), "c5.large", "us-east-1a", OD, 1.0), 9.0);
}

#[test]
fn gte_and_lte_bound_numeric_labels() {
    let big = json!([{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["4"]}]);
    let o = evaluate(&[overlay("big", None, big, json!({"price": "7"}))], &[pool("p")]);
    assert_eq!(o.price(Some("p"), "m5.xlarge", "us-east-1a", OD, 1.0), 7.0);
    assert_eq!(o.price(Some("p"), "m5.large", "us-east-1a", OD, 1.0), 1.0);
}

#[test]
fn the_heavier_overlay_wins_an_offering() {
    let o = evaluate(
        &[
            overlay("light", Some(1), types(&["m5.large"]), json!({"price": "0.5"})),
            overlay("heavy", Some(5), types(&["m5.large"]), json!({"price": "0.2"})),
        ],
        &[pool("p")],
    );
    assert_eq!(o.price(Some("p"), "m5.large", "us-east-1a", OD, 1.0), 0.2);
    assert!(!o.conflicts("light"), "a lighter overlay on a priced offering is not a conflict");
}

#[test]
fn equal_weights_on_one_offering_conflict_and_the_later_name_wins() {
    // Upstream orders equal weights by name, later first: "b" is stored, "a" conflicts.
    let o = evaluate(
        &[
            overlay("a", Some(3), types(&["m5.large", "c5.large"]), json!({"price": "0.5"})),
            overlay("b", Some(3), types(&["m5.large"]), json!({"price": "0.2"})),
        ],
        &[pool("p")],
    );
    assert!(o.conflicts("a") && !o.conflicts("b"));
    assert_eq!(o.price(Some("p"), "m5.large", "us-east-1a", OD, 1.0), 0.2);
    assert_eq!(o.price(Some("p"), "c5.large", "us-east-1a", OD, 1.0), 1.0, "a conflicting overlay applies nowhere");
}

#[test]
fn capacity_overlays_merge_heavier_first_and_conflict_on_a_shared_resource() {
    let o = evaluate(
        &[
            overlay("heavy", Some(5), types(&["m5.large"]), json!({"capacity": {"example.com/gpu": "2"}})),
            overlay(
                "light",
                Some(1),
                types(&["m5.large"]),
                json!({"capacity": {"example.com/gpu": "8", "example.com/nic": "1"}}),
            ),
            overlay("same-a", Some(1), types(&["m5.large"]), json!({"capacity": {"example.com/nic": "3"}})),
        ],
        &[pool("p")],
    );
    // Equal weights go later name first: `same-a` is merged before `light`, which shares
    // example.com/nic with it at the same weight and so conflicts (and adds nothing).
    let added = o.capacity("p", "m5.large").expect("capacity");
    assert_eq!(added.get("example.com/gpu").map(String::as_str), Some("2"), "the heavier overlay's");
    assert_eq!(added.get("example.com/nic").map(String::as_str), Some("3"));
    assert!(o.conflicts("light") && !o.conflicts("same-a") && !o.conflicts("heavy"));
    assert_eq!(o.capacity("p", "c5.large"), None);
}

#[test]
fn runtime_invalid_overlays_are_ignored() {
    let o = evaluate(
        &[
            overlay("cpu", Some(1), types(&["m5.large"]), json!({"capacity": {"cpu": "8"}, "price": "0"})),
            overlay("not-in", Some(1), json!([{"key": "team", "operator": "NotIn"}]), json!({"price": "0"})),
        ],
        &[pool("p")],
    );
    assert_eq!(o.price(Some("p"), "m5.large", "us-east-1a", OD, 1.0), 1.0);
}

#[test]
fn the_gate_off_leaves_catalog_prices() {
    let o = NodeOverlays::default();
    assert_eq!(o.price(Some("p"), "m5.large", "us-east-1a", OD, 1.0), 1.0);
}
