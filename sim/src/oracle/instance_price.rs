//! What Karpenter pays, in its own view, for an instance the cloud runs: the price its
//! consolidation compares (candidate prices, a replacement's price test, savings ratios).
//! With the `NodeOverlay` gate on, that is the price the NodeOverlays give the instance's
//! offering in its NodePool ([`super::node_overlay`]).

use dovetail_fakecloud::{CapacityType, FakeCloud};

use super::node_overlay::NodeOverlays;
use super::view::InstanceView;

/// What Karpenter prices `instance` at now: a reserved instance at a ten-millionth of its
/// type's on-demand price (aws `pkg/providers/instancetype/offering/reserved_capacity_resolver.go`
/// l. 73-80: "treat the reservation as free, while maintaining relative ordering for
/// consolidation"), a spot one at the market's price in its zone, an on-demand one at the
/// catalog's, the last two through `overlays`. `None` when the cloud does not price it.
pub fn instance_price(cloud: &FakeCloud, overlays: &NodeOverlays, instance: &InstanceView) -> Option<f64> {
    let info = cloud.catalog().get(&instance.instance_type)?;
    let base = match instance.capacity_type {
        CapacityType::Spot => cloud.spot_price(&info.name, &instance.zone, cloud.now()),
        CapacityType::OnDemand if instance.reserved => {
            return info.on_demand_price.map(|p| p / RESERVED_PRICE_DIVISOR);
        }
        CapacityType::OnDemand => info.on_demand_price,
    }?;
    let pool = instance.nodepool.as_deref();
    Some(overlays.price(pool, &instance.instance_type, &instance.zone, instance.capacity_type, base))
}

/// A price per hour, with the digits a reserved price (on-demand / 10^7) needs.
pub fn per_hour(price: f64) -> String {
    if price > 0.0 && price < 0.0001 { format!("${price:.3e}/h") } else { format!("${price:.4}/h") }
}

/// Karpenter's reserved offering price is on-demand divided by this ([`instance_price`]).
pub const RESERVED_PRICE_DIVISOR: f64 = 10_000_000.0;

#[cfg(test)]
mod tests {
    use super::*;
    use dovetail_fakecloud::{Catalog, CloudConfig};
    use std::time::Duration;

    fn instance(capacity_type: CapacityType, reserved: bool) -> InstanceView {
        InstanceView {
            id: "i-1".into(),
            instance_type: "m5.large".into(),
            zone: "us-east-1a".into(),
            capacity_type,
            live: true,
            launched: Duration::ZERO,
            nodeclaim: None,
            nodepool: None,
            provider_id: "aws:///us-east-1a/i-1".into(),
            involuntary: false,
            fleet: None,
            state_reason: None,
            warned: false,
            reserved,
        }
    }

    #[test]
    fn reserved_is_on_demand_over_ten_million_and_spot_the_market() {
        let cloud = FakeCloud::new(
            CloudConfig::new(1, dovetail_world::clock::sim_epoch()),
            Catalog::load("us-east-1").expect("the shipped catalog"),
        );
        let od = cloud.catalog().get("m5.large").and_then(|t| t.on_demand_price).expect("priced");
        assert_eq!(
            instance_price(&cloud, &NodeOverlays::default(), &instance(CapacityType::OnDemand, false)),
            Some(od)
        );
        assert_eq!(
            instance_price(&cloud, &NodeOverlays::default(), &instance(CapacityType::OnDemand, true)),
            Some(od / 10_000_000.0)
        );
        let spot = cloud.spot_price("m5.large", "us-east-1a", cloud.now());
        assert!(spot.is_some_and(|p| p < od), "{spot:?}");
        assert_eq!(instance_price(&cloud, &NodeOverlays::default(), &instance(CapacityType::Spot, false)), spot);
    }
}
