//! Wall-clock cost of the fake, as `#[ignore]`d tests that print their figures:
//!
//! ```text
//! cargo test -p dovetail-fakecloud --test bench -- --ignored --nocapture --test-threads=1
//! ```
//!
//! Wall time is read with `std::time::Instant` here only, to measure the simulator itself;
//! nothing simulated depends on it.

mod common;

use std::time::Duration;

use aws_sdk_ec2::types::{
    DefaultTargetCapacityType, FleetLaunchTemplateConfigRequest, FleetLaunchTemplateOverridesRequest,
    FleetLaunchTemplateSpecificationRequest, FleetType, TargetCapacitySpecificationRequest,
};
use common::*;
use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::{FakeCloud, RunInstancesRequest};

#[allow(clippy::disallowed_methods)] // Measuring the wall cost of the simulator is the point.
fn wall<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = std::time::Instant::now();
    let out = f();
    (out, start.elapsed())
}

const FLEETS: usize = 300;
const DESCRIBES: usize = 300;

#[test]
#[ignore = "benchmark: run explicitly"]
fn fleet_launches_and_describes_per_wall_second_through_the_sdk() {
    let mut cfg = config(21);
    cfg.vcpu_quota_on_demand = 1_000_000;
    let (mut sim, cloud) = world(21, FakeCloud::new(cfg, small_catalog()), Duration::from_secs(3600));
    let c = cloud.clone();
    let marks = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let m = marks.clone();
    #[allow(clippy::disallowed_methods)] // wall-clock marks for the benchmark only
    let (_, total) = wall(move || {
        run_controller(&mut sim, move |ec2, _| async move {
            let lt = launch_template(&ec2, &c).await;
            let ovs: Vec<_> = [("m5.large", "us-west-2a"), ("c5.large", "us-west-2a"), ("m5.xlarge", "us-west-2b")]
                .iter()
                .map(|(t, z)| {
                    FleetLaunchTemplateOverridesRequest::builder()
                        .instance_type(aws_sdk_ec2::types::InstanceType::from(*t))
                        .subnet_id(subnet(&c, z))
                        .build()
                })
                .collect();
            m.lock().expect("marks").push(std::time::Instant::now());
            for _ in 0..FLEETS {
                ec2.create_fleet()
                    .r#type(FleetType::Instant)
                    .target_capacity_specification(
                        TargetCapacitySpecificationRequest::builder()
                            .total_target_capacity(1)
                            .default_target_capacity_type(DefaultTargetCapacityType::OnDemand)
                            .build(),
                    )
                    .launch_template_configs(
                        FleetLaunchTemplateConfigRequest::builder()
                            .launch_template_specification(
                                FleetLaunchTemplateSpecificationRequest::builder().launch_template_name(&lt).build(),
                            )
                            .set_overrides(Some(ovs.clone()))
                            .build(),
                    )
                    .send()
                    .await
                    .expect("fleet");
            }
            m.lock().expect("marks").push(std::time::Instant::now());
            for _ in 0..DESCRIBES {
                let out = ec2.describe_instances().send().await.expect("describe");
                assert_eq!(out.reservations().len(), FLEETS);
            }
            m.lock().expect("marks").push(std::time::Instant::now());
            let one = lock(&c).instances().next().expect("instance").id.clone();
            for _ in 0..DESCRIBES {
                let out = ec2.describe_instances().instance_ids(&one).send().await.expect("describe one");
                assert_eq!(out.reservations().len(), 1);
            }
            m.lock().expect("marks").push(std::time::Instant::now());
            Ok(())
        })
    });
    let marks = marks.lock().expect("marks");
    let fleets = marks[1] - marks[0];
    let describes = marks[2] - marks[1];
    let describe_one = marks[3] - marks[2];
    println!(
        "BENCH create_fleet: {FLEETS} calls in {fleets:?} = {:.0}/wall-s; describe_instances ({FLEETS} instances each): {DESCRIBES} calls in {describes:?} = {:.0}/wall-s; describe_instances by one id: {:.0}/wall-s; whole sim {total:?}",
        FLEETS as f64 / fleets.as_secs_f64(),
        DESCRIBES as f64 / describes.as_secs_f64(),
        DESCRIBES as f64 / describe_one.as_secs_f64()
    );
    assert_eq!(lock(&cloud).instances().count(), FLEETS);
}

fn thousand_instance_cloud(seed: u64, hazard_multiplier: f64) -> FakeCloud {
    let mut cfg = config(seed);
    cfg.spot_hazard_multiplier = hazard_multiplier;
    cfg.vcpu_quota_on_demand = 1_000_000;
    cfg.vcpu_quota_spot = 1_000_000;
    let mut cloud = FakeCloud::new(cfg, small_catalog());
    cloud.create_interruption_queue("q");
    let ami = cloud.images().images.keys().next().expect("ami").clone();
    for ty in ["m5.large", "c5.large", "m5.xlarge"] {
        for zone in ["us-west-2a", "us-west-2b"] {
            for ct in [dovetail_fakecloud::CapacityType::OnDemand, dovetail_fakecloud::CapacityType::Spot] {
                cloud.set_pool(&dovetail_fakecloud::PoolKey::new(ty, zone, ct), 10_000, 10_000, None);
            }
        }
    }
    for (i, ty) in ["m5.large", "c5.large", "m5.xlarge"].iter().cycle().take(10).enumerate() {
        for zone in ["us-west-2a", "us-west-2b"] {
            let req = RunInstancesRequest {
                image_id: Some(ami.clone()),
                instance_type: Some((*ty).into()),
                min_count: 50,
                max_count: 50,
                availability_zone: Some(zone.into()),
                spot: i % 2 == 0,
                ..Default::default()
            };
            cloud.run_instances(&req).expect("launch");
        }
    }
    assert_eq!(cloud.instances().count(), 1000);
    cloud.advance_to(Duration::from_secs(60));
    cloud
}

#[test]
#[ignore = "benchmark: run explicitly"]
fn an_idle_simulated_hour_of_a_thousand_instance_cloud() {
    // The state machine alone: one advance_to over the hour.
    let mut cloud = thousand_instance_cloud(22, 1.0);
    let events_before = cloud.pending_events();
    let (_, state_machine) = wall(|| cloud.advance_to(Duration::from_secs(3660)));
    let (report, report_cost) = wall(|| cloud.cost_report());
    println!(
        "BENCH idle hour, state machine: {state_machine:?} ({events_before} scheduled events, spot interruptions at the real hazard); cost report over 1000 instances: {report_cost:?} (rate ${:.2}/h)",
        report.rate_usd_per_hour
    );

    // A stormy hour: the hazard raised 2,000x, so spot instances are warned, reclaimed,
    // terminated and reported to SQS throughout the hour.
    let mut stormy = thousand_instance_cloud(23, 2_000.0);
    let before = stormy.pending_events();
    let (_, stormy_hour) = wall(|| stormy.advance_to(Duration::from_secs(3660)));
    let reclaimed = stormy.instances().filter(|i| i.reclaim_at.is_some()).count();
    println!(
        "BENCH stormy hour, state machine: {stormy_hour:?} ({reclaimed} spot reclaims; {before} events scheduled before, {} after)",
        stormy.pending_events()
    );

    // The same hour inside turmoil at a 10 ms tick with the server idle, no clients.
    let (mut sim, _cloud) = world(22, thousand_instance_cloud(22, 1.0), Duration::from_secs(3700));
    let (_, turmoil_hour) = wall(|| {
        sim.client("idle", async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        });
        sim.run().expect("idle hour");
    });
    println!("BENCH idle hour in turmoil (2 hosts, 10 ms tick): {turmoil_hour:?}");
}
