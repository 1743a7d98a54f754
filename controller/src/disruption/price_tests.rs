//! Unit tests of the replacement price rule: core filters replacement types by their worst
//! launch price over the available offerings, not by their cheapest one.

use std::sync::Arc;

use serde_json::json;

use super::candidates::{DisruptionClass, get_candidates};
use super::command::Method;
use super::consolidation::{Unconsolidatable, compute, option_price, worst_launch_price};
use super::input::DisruptionOptions;
use super::synthetic::{SyntheticCluster, fake_types, node_pool};
use crate::runtime::clock::add;
use crate::scheduling::{Requirement, Requirements};

const ZONE: &str = "test-zone-1";
const DEAR_ZONE: &str = "test-zone-3";
const OD: &str = "on-demand";

/// One on-demand pool over 8 fake types, an on-demand `c5.4xlarge` node (1.20 USD/h) with
/// one 1-vCPU pod: `m5.2xlarge` (1.00 USD/h in every zone) is its cheapest fit.
fn cluster() -> SyntheticCluster {
    let t0: jiff::Timestamp = "2026-01-05T12:00:00Z".parse().expect("timestamp");
    let mut c = SyntheticCluster::new(t0);
    let disruption = json!({"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized"});
    let od_only = json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [OD]}]);
    c.add_pool(node_pool("default", disruption, od_only), fake_types(8));
    c.add_node("n", "default", "c5.4xlarge", ZONE, OD);
    c.add_pod("p", "x", Some("n"), 1000, 1024);
    c
}

/// Sets the price and availability of `name`'s on-demand offering in `zone`.
fn set_offering(c: &mut SyntheticCluster, name: &str, zone: &str, price: f64, available: bool) {
    let it = c.pools[0].instance_types.iter_mut().find(|it| it.name == name).expect("type");
    let offering =
        Arc::make_mut(it).offerings.iter_mut().find(|o| o.zone == zone && o.capacity_type == OD).expect("offering");
    offering.price = price;
    offering.available = available;
}

/// The single-node consolidation of node `n`.
fn consolidate(c: &SyntheticCluster) -> Result<super::Command, Unconsolidatable> {
    let now = add(c.epoch, std::time::Duration::from_secs(3600));
    let input = c.input(now, DisruptionOptions::default());
    let (candidates, _) = get_candidates(&input, DisruptionClass::Graceful);
    compute(&input, Method::SingleNode, &candidates)
}

/// `WorstLaunchPrice` (core `pkg/cloudprovider/types.go`): the dearest available offering of
/// the capacity type the launch uses.
#[test]
fn the_worst_launch_price_is_the_dearest_available_offering() {
    let mut c = cluster();
    set_offering(&mut c, "m5.2xlarge", DEAR_ZONE, 1.5, true);
    let m5 = c.instance_type("default", "m5.2xlarge");
    let mut on_demand = Requirements::new();
    on_demand.add("karpenter.sh/capacity-type", Requirement::in_values([OD]));
    assert_eq!(option_price(&m5, &on_demand), Some(1.0));
    assert_eq!(worst_launch_price(&m5, &on_demand), Some(1.5));
    // With spot allowed the launch is spot (reserved > spot > on-demand), so the worst price
    // is the dearest spot offering, below every on-demand one.
    let any = Requirements::new();
    let spot_worst = worst_launch_price(&m5, &any).expect("spot offerings");
    assert!(spot_worst < 1.0, "the spot tier decides: {spot_worst}");
    set_offering(&mut c, "m5.2xlarge", DEAR_ZONE, 1.5, false);
    let m5 = c.instance_type("default", "m5.2xlarge");
    assert_eq!(worst_launch_price(&m5, &on_demand), Some(1.0), "an unavailable offering does not count");
}

/// Core filters replacement types by `WorstLaunchPrice` over the available offerings
/// (`pkg/controllers/provisioning/scheduling/nodeclaim.go`
/// `RemoveInstanceTypeOptionsByPriceAndMinValues`, called from `computeConsolidation` in
/// `pkg/controllers/disruption/consolidation.go`): a type cheaper than the node in one zone
/// but dearer in another it may launch in is no cheaper replacement (the fleet could launch
/// it in the dear zone and the next pass would replace it again); once the dear zone is
/// unavailable (ICE) it is.
#[test]
fn a_replacement_is_judged_at_its_worst_launch_price() {
    let mut c = cluster();
    let command = consolidate(&c).expect("replace");
    assert_eq!(command.replacements[0].instance_type_options[0].name, "m5.2xlarge");
    // m5.2xlarge at 1.50 in test-zone-3: cheapest 1.00 < 1.20, worst 1.50 is not.
    set_offering(&mut c, "m5.2xlarge", DEAR_ZONE, 1.5, true);
    match consolidate(&c) {
        Err(error) => assert_eq!(error, Unconsolidatable::NoCheaperReplacement),
        Ok(command) => assert!(
            command.replacements[0].instance_type_options.iter().all(|it| it.name != "m5.2xlarge"),
            "m5.2xlarge may launch at 1.50 > 1.20: {:?}",
            command.replacements[0].instance_type_options.iter().map(|it| &it.name).collect::<Vec<_>>()
        ),
    }
    // The dear zone is ICE'd: every available offering costs 1.00 again.
    set_offering(&mut c, "m5.2xlarge", DEAR_ZONE, 1.5, false);
    let command = consolidate(&c).expect("replace");
    assert_eq!(command.replacements[0].instance_type_options[0].name, "m5.2xlarge");
}
