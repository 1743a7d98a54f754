//! Same seed, same world: ids, prices, interruption times and ledger agree across runs and
//! across processes; a different seed gives a different world.

mod common;

use std::time::Duration;

use aws_sdk_ec2::types::{
    DefaultTargetCapacityType, FleetLaunchTemplateConfigRequest, FleetLaunchTemplateOverridesRequest,
    FleetLaunchTemplateSpecificationRequest, FleetType, TargetCapacitySpecificationRequest,
};
use common::*;
use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::{FakeCloud, Faults, SpotStorm};

const CHILD_ENV: &str = "DOVETAIL_FAKECLOUD_DIGEST_SEED";

/// A busy scenario: spot and on-demand fleets through the SDK, faults, a storm, SQS
/// traffic, then six quiet simulated hours in which natural interruptions happen.
fn scenario(seed: u64) -> (String, Vec<String>) {
    let mut cfg = config(seed);
    cfg.spot_hazard_multiplier = 200.0;
    let mut fake = FakeCloud::new(cfg, small_catalog());
    fake.create_interruption_queue("q");
    let (mut sim, cloud) = world(seed, fake, Duration::from_secs(900));
    lock(&cloud).set_faults(Faults {
        server_error_rate: 0.1,
        sqs_reorder: true,
        sqs_delay_max: Duration::from_secs(3),
        ..Faults::default()
    });
    let c = cloud.clone();
    let end = run_controller(&mut sim, move |ec2, sqs| async move {
        let lt = launch_template(&ec2, &c).await;
        let ovs: Vec<_> = [("m5.large", "us-west-2a"), ("c5.large", "us-west-2b"), ("m5.xlarge", "us-west-2a")]
            .iter()
            .map(|(t, z)| {
                FleetLaunchTemplateOverridesRequest::builder()
                    .instance_type(aws_sdk_ec2::types::InstanceType::from(*t))
                    .subnet_id(subnet(&c, z))
                    .build()
            })
            .collect();
        for (i, ct) in
            [DefaultTargetCapacityType::Spot, DefaultTargetCapacityType::OnDemand, DefaultTargetCapacityType::Spot]
                .into_iter()
                .enumerate()
        {
            let _ = ec2
                .create_fleet()
                .r#type(FleetType::Instant)
                .target_capacity_specification(
                    TargetCapacitySpecificationRequest::builder()
                        .total_target_capacity(4 + i as i32)
                        .default_target_capacity_type(ct)
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
                .await;
            tokio::time::sleep(Duration::from_secs(20)).await;
        }
        lock(&c).schedule_spot_storm(
            now() + Duration::from_secs(10),
            SpotStorm { zone: None, instance_types: vec![], fraction: 0.3 },
        );
        let url = sqs
            .get_queue_url()
            .queue_name("q")
            .send()
            .await
            .map(|o| o.queue_url().unwrap_or_default().to_string())
            .unwrap_or_default();
        for _ in 0..10 {
            if let Ok(out) =
                sqs.receive_message().queue_url(&url).max_number_of_messages(10).wait_time_seconds(20).send().await
            {
                for m in out.messages() {
                    let _ = sqs
                        .delete_message()
                        .queue_url(&url)
                        .receipt_handle(m.receipt_handle().unwrap_or_default())
                        .send()
                        .await;
                }
            }
        }
        Ok(())
    });
    let mut cloud = lock(&cloud);
    cloud.advance_to(end + Duration::from_secs(6 * 3600));
    let ids = cloud.ledger().records.keys().cloned().collect();
    (cloud.digest(), ids)
}

#[test]
fn same_seed_same_world_in_one_process() {
    let (a, ids_a) = scenario(42);
    assert!(ids_a.len() >= 10, "the scenario launched and billed instances: {ids_a:?}");
    let (b, ids_b) = scenario(42);
    assert_eq!(ids_a, ids_b);
    assert_eq!(a, b);
    let (c, _) = scenario(43);
    assert_ne!(a, c, "the seed matters");
}

#[test]
fn same_seed_same_world_in_two_processes() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // Only the parent compares.
    }
    let (here, _) = scenario(7);
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args(["--exact", "print_digest_for_parent", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "7")
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let there = stdout
        .lines()
        .find_map(|l| l.split_once("DIGEST=").map(|(_, d)| d.trim()))
        .unwrap_or_else(|| panic!("child printed no digest: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(here, there);
}

/// Run by [`same_seed_same_world_in_two_processes`] in a child process.
#[test]
fn print_digest_for_parent() {
    let Some(seed) = std::env::var(CHILD_ENV).ok().and_then(|s| s.parse().ok()) else {
        return;
    };
    let (digest, _) = scenario(seed);
    println!("DIGEST={digest}");
}
