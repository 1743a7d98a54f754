//! Instance types shaped like core's fake cloud provider (`pkg/cloudprovider/fake`,
//! karpenter-behaviour.md §7), for tests and benchmarks that must not depend on AWS data.
//!
//! Type `i` has `i + 1` vCPUs and memory at 2, 4 or 8 GiB per vCPU (c, m and r categories in
//! turn), capacity and overhead computed by [`InstanceType::from_facts`] with 110 max pods, and
//! offerings: on-demand in three zones and spot (30% cheaper) in the first two. Price is
//! core's formula, 0.1 × vCPU + 0.1 × GiB per hour.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::types::{InstanceType, InstanceTypeFacts, KubeletOverrides, Offering};
use crate::apis::labels::{CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT};

/// The zones fake offerings are in.
pub const ZONES: [&str; 3] = ["test-zone-1", "test-zone-2", "test-zone-3"];
/// Spot price as a share of on-demand.
pub const SPOT_DISCOUNT: f64 = 0.7;

/// One fake type with `vcpu` vCPUs and `memory_gib` GiB, `category` its name prefix (`m`).
pub fn instance_type(category: &str, vcpu: i64, memory_gib: i64, architecture: &str) -> InstanceType {
    let facts = InstanceTypeFacts {
        name: format!("{category}5.{vcpu}xlarge"),
        vcpu,
        memory_mib: memory_gib * 1024,
        max_enis: 4,
        ipv4_per_eni: 15,
        architecture: architecture.to_owned(),
        extended: BTreeMap::new(),
        extra_labels: BTreeMap::new(),
    };
    #[allow(clippy::cast_precision_loss)]
    let price = 0.1 * vcpu as f64 + 0.1 * memory_gib as f64;
    let mut offerings = Vec::new();
    for (index, zone) in ZONES.iter().enumerate() {
        offerings.push(Offering {
            zone: (*zone).to_owned(),
            capacity_type: CAPACITY_TYPE_ON_DEMAND.to_owned(),
            price,
            available: true,
            reservation_id: None,
        });
        if index < 2 {
            offerings.push(Offering {
                zone: (*zone).to_owned(),
                capacity_type: CAPACITY_TYPE_SPOT.to_owned(),
                price: price * SPOT_DISCOUNT,
                available: true,
                reservation_id: None,
            });
        }
    }
    let kubelet = KubeletOverrides { max_pods: Some(110), eni_limited_pods: false, ..KubeletOverrides::default() };
    InstanceType::from_facts(&facts, &kubelet, offerings)
}

/// `count` fake types, type `i` with `i + 1` vCPUs (core `fake.InstanceTypes(n)`).
pub fn instance_types(count: usize) -> Vec<Arc<InstanceType>> {
    (0..count)
        .map(|i| {
            let vcpu = i as i64 + 1;
            let (category, gib_per_vcpu) = [("c", 2), ("m", 4), ("r", 8)][i % 3];
            Arc::new(instance_type(category, vcpu, vcpu * gib_per_vcpu, "amd64"))
        })
        .collect()
}
