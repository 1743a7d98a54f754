//! The oracle's discovered-capacity model against upstream's rules (see the module docs).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::json;

use super::*;

fn amis(standard_id: &str) -> Vec<Value> {
    vec![
        json!({"id": "ami-nvidia", "name": "nvidia", "requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}]}),
        json!({"id": standard_id, "name": "standard", "requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"}]}),
    ]
}

fn class(raw: &[Value]) -> (Vec<Ami>, String) {
    (raw.iter().map(Ami::from_json).collect(), ami_set_key(raw))
}

fn node(instance_type: &str, registered: bool, image: &str) -> NodeFacts {
    let mut labels = BTreeMap::from([
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
        (CLASS_LABEL.to_string(), "default".to_string()),
        (INSTANCE_TYPE_LABEL.to_string(), instance_type.to_string()),
    ]);
    if registered {
        labels.insert(REGISTERED_LABEL.to_string(), "true".to_string());
    }
    NodeFacts { labels, image: Some(image.to_string()) }
}

fn inputs(raw_amis: &[Value], nodes: &[(&str, NodeFacts)]) -> Inputs {
    Inputs {
        classes: BTreeMap::from([("default".to_string(), class(raw_amis))]),
        nodes: nodes.iter().map(|(n, f)| (n.to_string(), f.clone())).collect(),
    }
}

fn classes() -> BTreeSet<String> {
    BTreeSet::from(["default".to_string()])
}

const MIN: Duration = Duration::from_secs(60);

#[test]
fn a_registered_node_on_the_current_ami_counts_once_the_list_is_rebuilt() {
    let mut model = DiscoveredCapacity::default();
    let raw = amis("ami-std");
    model.observe(Duration::ZERO, &inputs(&raw, &[("n1", node("m5.large", false, "ami-std"))]));
    assert!(model.known(10 * MIN, &classes()).is_empty(), "not registered");
    model.observe(2 * MIN, &inputs(&raw, &[("n1", node("m5.large", true, "ami-std"))]));
    assert!(model.known(2 * MIN + PICKUP - Duration::from_secs(1), &classes()).is_empty(), "the 5-minute list TTL");
    let known = model.known(2 * MIN + PICKUP, &classes());
    assert_eq!(known, BTreeSet::from([("m5.large".to_string(), "default".to_string())]));
    // Gone: a restart would forget it, so it no longer counts.
    model.observe(20 * MIN, &inputs(&raw, &[]));
    assert!(model.known(20 * MIN, &classes()).is_empty());
}

#[test]
fn a_node_on_another_image_or_under_another_ami_set_does_not_count() {
    let mut model = DiscoveredCapacity::default();
    let old = amis("ami-old");
    model.observe(Duration::ZERO, &inputs(&old, &[]));
    // Registered with an image that is not the first compatible AMI (the GPU AMI is first).
    model.observe(2 * MIN, &inputs(&old, &[("n1", node("m5.large", true, "ami-nvidia"))]));
    // Registered on the current image, then the set changes: a new key.
    model.observe(
        3 * MIN,
        &inputs(&old, &[("n1", node("m5.large", true, "ami-nvidia")), ("n2", node("c5.large", true, "ami-old"))]),
    );
    let new = amis("ami-new");
    let both = [("n1", node("m5.large", true, "ami-nvidia")), ("n2", node("c5.large", true, "ami-old"))];
    model.observe(4 * MIN, &inputs(&old, &both));
    assert_eq!(model.known(4 * MIN + PICKUP, &classes()).len(), 1, "c5.large under the old set");
    model.observe(5 * MIN, &inputs(&new, &both));
    assert!(model.known(30 * MIN, &classes()).is_empty(), "the new set has no registration");
    // A node registered on the new image, before the set settled, does not count; after, it does.
    let early = [("n3", node("r5.large", true, "ami-new"))];
    model.observe(5 * MIN + Duration::from_secs(10), &inputs(&new, &early));
    let late = [("n3", node("r5.large", true, "ami-new")), ("n4", node("m5.large", true, "ami-new"))];
    model.observe(7 * MIN, &inputs(&new, &late));
    let known = model.known(7 * MIN + PICKUP, &classes());
    assert_eq!(known, BTreeSet::from([("m5.large".to_string(), "default".to_string())]));
}

#[test]
fn the_key_is_the_set_of_amis_not_their_order() {
    let raw = amis("ami-std");
    let reversed: Vec<Value> = raw.iter().rev().cloned().collect();
    assert_eq!(ami_set_key(&raw), ami_set_key(&reversed));
    assert_ne!(ami_set_key(&raw), ami_set_key(&amis("ami-other")));
    let labels = BTreeMap::from([("kubernetes.io/arch".to_string(), "amd64".to_string())]);
    assert_eq!(current_image(&labels, &class(&raw).0), Some("ami-std"), "the GPU AMI needs a GPU label");
}
