//! On-demand prices from the AWS Price List API (issue 20, "Pricing API"): the controller
//! reads them from the fake cloud's `GetProducts` at start and every 12 hours, keeps the
//! built-in table when the API is unreachable or the VPC is isolated, and retries a failed
//! read (aws/karpenter-provider-aws `pkg/providers/pricing/pricing.go`,
//! `pkg/controllers/providers/pricing/controller.go`).
//!
//! Each test re-prices `m5.24xlarge` in the fake cloud to a tenth of a cent an hour before
//! the controller starts. The built-in table prices it at $4.608/h, so a controller that
//! never read the API leaves it out of a one-pod NodeClaim's cheapest 60 types, and
//! CreateFleet cannot choose it; a controller that did read it launches exactly that type.

use std::time::Duration;

use dovetail_fakecloud::cloud::{SharedCloud, lock};
use dovetail_fakecloud::{Faults, ScriptedError};
use dovetail_sim::world::World;
use dovetail_tests::workloads::deployment;
use dovetail_tests::{client, general_purpose, install, karpenter_crds};

/// The type the tests re-price, and its new on-demand price.
const REPRICED: &str = "m5.24xlarge";
const NEW_PRICE: f64 = 0.001;

fn world(seed: u64, isolated_vpc: bool) -> (turmoil::Sim<'static>, SharedCloud) {
    let mut settings = dovetail_sim::controller_host::default_settings("us-east-1");
    settings.isolated_vpc = isolated_vpc;
    let world = World::builder(seed)
        .duration(Duration::from_secs(1200))
        .cloud("us-east-1")
        .controller(settings)
        .build()
        .expect("the EC2 catalog in ../shared/data/ec2");
    let cloud = world.cloud.expect("a cloud");
    lock(&cloud).set_on_demand_price(REPRICED, NEW_PRICE).expect("a known type");
    (world.sim, cloud)
}

/// Installs a NodePool and one pod after `delay` and runs to the end; returns the running
/// instance types and every Price List call with its outcome.
fn launch_after(
    mut sim: turmoil::Sim<'static>,
    cloud: &SharedCloud,
    delay: Duration,
) -> (Vec<String>, Vec<(Duration, String)>) {
    sim.client("test", async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["on-demand"], None)).await?;
        tokio::time::sleep(delay).await;
        install(&client, &[deployment("web", 1, "1", "2Gi")]).await?;
        tokio::time::sleep(Duration::from_secs(300)).await;
        Ok(())
    });
    sim.run().expect("the simulation");
    let cloud = lock(cloud);
    let running = cloud.instances().filter(|i| i.state.name() == "running").map(|i| i.instance_type.clone()).collect();
    let calls = cloud
        .ledger()
        .calls
        .iter()
        .filter(|c| c.action.starts_with("Pricing."))
        .map(|c| (c.at, c.outcome.clone()))
        .collect();
    (running, calls)
}

#[test]
fn the_controller_launches_at_the_price_list_price() {
    let (sim, cloud) = world(1, false);
    let (running, calls) = launch_after(sim, &cloud, Duration::from_secs(60));
    assert_eq!(running, vec![REPRICED.to_owned()], "the cheapest type by the API's price");
    assert!(!calls.is_empty() && calls.iter().all(|(_, outcome)| outcome == "OK"), "{calls:?}");
    // Both queries (shared compute and dedicated bare metal), each paged by 100.
    assert!(calls.len() > 2, "the region's ~900 products take several pages: {calls:?}");
    assert!(calls.iter().all(|(at, _)| *at < Duration::from_secs(60)), "read at start, not again within 12 h");
}

#[test]
fn an_isolated_vpc_never_calls_the_api_and_keeps_the_built_in_table() {
    let (sim, cloud) = world(1, true);
    let (running, calls) = launch_after(sim, &cloud, Duration::from_secs(60));
    assert!(calls.is_empty(), "no Price List call from an isolated VPC: {calls:?}");
    assert_eq!(running.len(), 1);
    assert_ne!(running[0], REPRICED, "the built-in table prices {REPRICED} at $4.608/h");
}

#[test]
fn a_price_list_outage_keeps_the_table_then_a_retry_reads_the_api() {
    let (sim, cloud) = world(1, false);
    // Every call fails for the first 40 calls (the SDK retries each 3 times): the controller
    // keeps the built-in table and backs off, then reads the prices once the API answers.
    lock(&cloud).set_faults(Faults {
        scripted: vec![ScriptedError {
            action: Some("Pricing.GetProducts".into()),
            code: "ServiceUnavailableException".into(),
            status: 503,
            count: 40,
        }],
        ..Faults::default()
    });
    let (running, calls) = launch_after(sim, &cloud, Duration::from_secs(600));
    let failed = calls.iter().filter(|(_, outcome)| outcome == "ServiceUnavailableException").count();
    assert_eq!(failed, 40, "{calls:?}");
    let first_ok = calls.iter().find(|(_, outcome)| outcome == "OK").expect("a retry succeeded").0;
    let last_failure = calls.iter().filter(|(_, o)| o != "OK").map(|(at, _)| *at).max().expect("failures");
    assert!(first_ok > last_failure, "retries went on until the API answered: {calls:?}");
    assert!(first_ok < Duration::from_secs(600), "the backoff reached the API before the pod came: {first_ok:?}");
    assert_eq!(running, vec![REPRICED.to_owned()], "the API's price, once read");
}

/// The library story `price-list` (m7i 60 % cheaper than the built-in table says) as the
/// library runs it, and again with `isolatedVpc: true`, where the controller keeps its stale
/// table: the oracles, which judge at the cloud's prices, must catch the second run's
/// consolidation into dearer types and the cheaper replacement it never takes.
#[test]
fn the_oracles_catch_a_controller_pricing_from_a_stale_table() {
    use dovetail_sim::run::run;
    use dovetail_sim::scenario::Loaded;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/price-list.yaml");
    let text = std::fs::read_to_string(&path).expect("the library story");
    let api = run(&Loaded::from_str(&path, &text).expect("loads"), 1).expect("runs").report;
    assert!(api.invariants.violations.is_empty(), "{:?}", api.invariants.violations);

    let stale_text = text.replacen("\nmanifests:", "\ncontroller: {isolatedVpc: true}\nmanifests:", 1);
    assert_ne!(stale_text, text);
    let stale = run(&Loaded::from_str(&path, &stale_text).expect("loads"), 1).expect("runs").report;
    let fired: std::collections::BTreeSet<&str> =
        stale.invariants.violations.iter().map(|v| v.invariant.as_str()).collect();
    assert!(fired.contains("untakenMoves") && fired.contains("consolidationLegality"), "{fired:?}");
    assert!(
        stale.cost.rate_per_hour > api.cost.rate_per_hour * 1.5,
        "the stale table costs more: {} vs {}",
        stale.cost.rate_per_hour,
        api.cost.rate_per_hour
    );
}
