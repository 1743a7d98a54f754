//! [`super::DiscoveredCapacity`] against upstream's capacity-cache specs (aws
//! `pkg/controllers/providers/instancetype/capacity/suite_test.go`) and the rules of
//! `UpdateInstanceTypeCapacityFromNode` (`pkg/providers/instancetype/instancetype.go:475-500`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use serde_json::json;

use super::*;
use crate::runtime::clock::ManualClock;

const MIB: i64 = 1024 * 1024;

/// The suite's two AMIs (`suite_test.go:107-136`): amd64 without GPUs, amd64 with.
fn standard() -> AMI {
    serde_json::from_value(json!({"id": "ami-standard-test", "name": "standard-ami", "requirements": [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"}]}))
    .expect("ami")
}

fn nvidia() -> AMI {
    serde_json::from_value(json!({"id": "ami-nvidia-test", "name": "nvidia-ami", "requirements": [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}]}))
    .expect("ami")
}

fn class(amis: &[AMI]) -> EC2NodeClass {
    serde_json::from_value(json!({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
        "spec": {"role": "r", "subnetSelectorTerms": [], "securityGroupSelectorTerms": [],
            "amiSelectorTerms": [{"alias": "al2023@latest"}]},
        "status": {"amis": amis}
    }))
    .expect("class")
}

/// A registered `t3.medium` node (`suite_test.go:148-163`) reporting `memory_mib`.
fn node(memory_mib: i64) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": "test-node", "labels": {
            "node.kubernetes.io/instance-type": "t3.medium", "karpenter.sh/registered": "true",
            "karpenter.k8s.aws/ec2nodeclass": "default", "kubernetes.io/arch": "amd64"}},
        "spec": {"providerID": "aws:///us-west-2a/i-0123"},
        "status": {"capacity": {"memory": format!("{memory_mib}Mi")}}
    }))
    .expect("node")
}

fn claim(image: &str) -> NodeClaim {
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "test-nodeclaim"},
        "spec": {"requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
        "status": {"nodeName": "test-node", "imageID": image, "providerID": "aws:///us-west-2a/i-0123"}
    }))
    .expect("claim")
}

fn cache() -> (Arc<ManualClock>, DiscoveredCapacity) {
    let clock = Arc::new(ManualClock::new("2026-01-05T12:00:00Z".parse().expect("timestamp")));
    (clock.clone(), DiscoveredCapacity::new(clock))
}

/// "should update discovered capacity based on existing nodes" (`suite_test.go:185-194`).
#[test]
fn a_node_on_the_current_ami_records_its_memory() {
    let (_, cache) = cache();
    let amis = [standard(), nvidia()];
    let recorded = cache.update_from_node(&node(3840), &claim("ami-standard-test"), &class(&amis));
    assert_eq!(recorded, Recorded::Lowered);
    assert_eq!(cache.memory("t3.medium", &amis), Some(3840 * MIB));
    assert_eq!(cache.memory("t3.large", &amis), None, "per instance type");
}

/// "should use VM_MEMORY_OVERHEAD_PERCENT calculation after AMI update"
/// (`suite_test.go:195-213`): a new AMI set is a new key, and a node still on the old image is
/// not recorded under it.
#[test]
fn a_new_ami_set_starts_over_and_a_stale_image_is_not_recorded() {
    let (_, cache) = cache();
    let old = [standard(), nvidia()];
    cache.update_from_node(&node(3840), &claim("ami-standard-test"), &class(&old));
    let mut renewed = standard();
    renewed.id = "ami-new-test-id".into();
    let new = [renewed, nvidia()];
    assert_eq!(cache.memory("t3.medium", &new), None, "the estimate again");
    let recorded = cache.update_from_node(&node(3840), &claim("ami-standard-test"), &class(&new));
    assert_eq!(recorded, Recorded::StaleImage);
    assert_eq!(cache.memory("t3.medium", &new), None);
    assert_eq!(cache.memory("t3.medium", &old), Some(3840 * MIB), "the old set's entry stays");
}

/// "should properly update discovered capacity when matching AMI is not the first in the list"
/// (`suite_test.go:215-271`): the image is the first AMI *compatible* with the node, and the
/// key is the AMIs as a set, so the order of the status list does not matter.
#[test]
fn the_first_compatible_ami_counts_and_the_key_ignores_order() {
    let (_, cache) = cache();
    let nvidia_first = [nvidia(), standard()];
    let recorded = cache.update_from_node(&node(4096), &claim("ami-standard-test"), &class(&nvidia_first));
    assert_eq!(recorded, Recorded::Lowered);
    assert_eq!(cache.memory("t3.medium", &[standard(), nvidia()]), Some(4096 * MIB));
    // The GPU AMI is never this node's: recording it under that image does nothing.
    let recorded = cache.update_from_node(&node(1024), &claim("ami-nvidia-test"), &class(&nvidia_first));
    assert_eq!(recorded, Recorded::StaleImage);
}

/// `instancetype.go:491-493`: only a capacity less than or equal to the kept one replaces it.
#[test]
fn the_smallest_capacity_wins() {
    let (_, cache) = cache();
    let amis = [standard()];
    let class = class(&amis);
    let image = claim("ami-standard-test");
    assert_eq!(cache.update_from_node(&node(3840), &image, &class), Recorded::Lowered);
    assert_eq!(cache.update_from_node(&node(3900), &image, &class), Recorded::Kept);
    assert_eq!(cache.memory("t3.medium", &amis), Some(3840 * MIB));
    assert_eq!(cache.update_from_node(&node(3840), &image, &class), Recorded::Refreshed);
    assert_eq!(cache.update_from_node(&node(3800), &image, &class), Recorded::Lowered);
    assert_eq!(cache.memory("t3.medium", &amis), Some(3800 * MIB));
}

/// `DiscoveredCapacityCacheTTL` (`pkg/cache/cache.go:47`): 60 days after the last write; an
/// equal capacity refreshes it, and an expired entry is replaced by a larger one.
#[test]
fn entries_expire_after_sixty_days_unless_refreshed() {
    let (clock, cache) = cache();
    let amis = [standard()];
    let class = class(&amis);
    let image = claim("ami-standard-test");
    cache.update_from_node(&node(3840), &image, &class);
    clock.advance(DISCOVERED_CAPACITY_TTL - Duration::from_secs(1));
    cache.update_from_node(&node(3840), &image, &class);
    clock.advance(Duration::from_secs(2));
    assert_eq!(cache.memory("t3.medium", &amis), Some(3840 * MIB), "refreshed");
    clock.advance(DISCOVERED_CAPACITY_TTL);
    assert_eq!(cache.memory("t3.medium", &amis), None, "expired");
    assert_eq!(cache.update_from_node(&node(3900), &image, &class), Recorded::Lowered);
    assert_eq!(cache.memory("t3.medium", &amis), Some(3900 * MIB));
}

/// A node without a reported memory capacity records 0, as upstream's
/// `node.Status.Capacity.Memory()` reads an absent quantity.
#[test]
fn a_node_without_memory_records_zero() {
    let (_, cache) = cache();
    let amis = [standard()];
    let mut bare = node(1);
    bare.status = None;
    cache.update_from_node(&bare, &claim("ami-standard-test"), &class(&amis));
    assert_eq!(cache.memory("t3.medium", &amis), Some(0));
}

/// The provider's list (`instancetype.go:157-206`, `get` l. 258-280): a t3.medium is resolved
/// with the estimate until a node's memory is discovered, then, once the cached list expires
/// (5 minutes, `InstanceTypesZonesAndOfferingsTTL`), with the discovered memory, allocatable
/// following with the overhead unchanged; a class with another AMI set keeps the estimate.
#[test]
fn resolved_types_carry_the_discovered_memory_once_the_list_is_rebuilt() {
    use crate::cloudprovider::aws::instance_types::{Catalog, InstanceTypeProvider, RESOLVED_TTL, RawInstanceType};
    use crate::cloudprovider::aws::pricing::PricingProvider;
    use crate::cloudprovider::{InstanceTypeFacts, UnavailableOfferings};
    use crate::runtime::Settings;
    use crate::runtime::clock::Clock;

    let (clock, cache) = cache();
    let facts = InstanceTypeFacts {
        name: "t3.medium".into(),
        vcpu: 2,
        memory_mib: 4096,
        max_enis: 3,
        ipv4_per_eni: 6,
        architecture: "amd64".into(),
        extended: std::collections::BTreeMap::new(),
        extra_labels: std::collections::BTreeMap::new(),
    };
    let provider = InstanceTypeProvider::default();
    provider.set_catalog(Catalog {
        types: std::collections::BTreeMap::from([(
            "t3.medium".into(),
            RawInstanceType { facts, spot: false, exotic: false },
        )]),
        zones: std::collections::BTreeMap::from([(
            "t3.medium".into(),
            std::collections::BTreeSet::from(["us-west-2a".to_string()]),
        )]),
    });
    let with_subnet = |mut class: EC2NodeClass| {
        let subnet = crate::apis::ec2nodeclass::Subnet { id: "s".into(), zone: "us-west-2a".into(), zone_id: None };
        class.status.get_or_insert_with(Default::default).subnets = Some(vec![subnet]);
        class
    };
    let amis = [standard(), nvidia()];
    let class = with_subnet(class(&amis));
    let settings = Settings::default();
    let pricing = PricingProvider::new();
    let unavailable = UnavailableOfferings::new(clock.clone());
    let resolve = |class: &EC2NodeClass| {
        let types = provider
            .resolve(class, &settings, &pricing, &unavailable, (&cache, &Default::default()), clock.now())
            .expect("resolved");
        let t3 = types.iter().find(|t| t.name == "t3.medium").expect("t3.medium").clone();
        (t3.capacity.memory_bytes, t3.allocatable().memory_bytes)
    };
    let estimate = (4096 - 308) * MIB; // 4096 less ceil(7.5 %)
    let (before, before_allocatable) = resolve(&class);
    assert_eq!(before, estimate);
    cache.update_from_node(&node(3840), &claim("ami-standard-test"), &class);
    assert_eq!(resolve(&class).0, estimate, "the cached list is used until it expires");
    clock.advance(RESOLVED_TTL);
    let (after, after_allocatable) = resolve(&class);
    assert_eq!(after, 3840 * MIB, "the discovered memory");
    assert_eq!(before - before_allocatable, after - after_allocatable, "the same overhead");
    let mut renewed = standard();
    renewed.id = "ami-new-test-id".into();
    assert_eq!(resolve(&with_subnet(self::class(&[renewed, nvidia()]))).0, estimate, "another AMI set");
}
