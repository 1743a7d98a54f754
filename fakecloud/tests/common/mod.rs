//! Shared harness: a turmoil sim with a fake cloud on host "aws" and SDK clients built
//! the way the controller receives them.

#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, UNIX_EPOCH};

use dovetail_fakecloud::cloud::{SharedCloud, lock, shared};
use dovetail_fakecloud::sdk::{SdkOptions, ec2_client, sqs_client};
use dovetail_fakecloud::wire::{Server, serve_turmoil};
use dovetail_fakecloud::{Catalog, CloudConfig, EPOCH_2026, FakeCloud};

pub const REGION: &str = "us-west-2";
pub const ENDPOINT: &str = "http://aws:80";

/// A three-type, two-zone catalog with round prices for hand-computed expectations.
pub fn small_catalog() -> Catalog {
    let mut catalog = Catalog::load(REGION).expect("catalog loads");
    catalog.retain_types(&["m5.large", "c5.large", "m5.xlarge"]).expect("types exist");
    catalog.retain_zones(&["us-west-2a", "us-west-2b"]).expect("zones exist");
    catalog.set_prices("m5.large", Some(0.096), Some(0.04)).expect("known");
    catalog.set_prices("c5.large", Some(0.085), Some(0.035)).expect("known");
    catalog.set_prices("m5.xlarge", Some(0.192), Some(0.08)).expect("known");
    catalog
}

pub fn config(seed: u64) -> CloudConfig {
    CloudConfig::new(seed, UNIX_EPOCH + EPOCH_2026)
}

/// A sim (fixed seed and epoch, 10 ms tick) with the fake cloud serving on aws:80.
pub fn world(seed: u64, cloud: FakeCloud, duration: Duration) -> (turmoil::Sim<'static>, SharedCloud) {
    fastrand::seed(seed);
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(UNIX_EPOCH + EPOCH_2026)
        .simulation_duration(duration)
        .tick_duration(Duration::from_millis(10))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5))
        .build();
    let cloud = shared(cloud);
    let served = cloud.clone();
    sim.host("aws", move || {
        let served = served.clone();
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 80)).await?;
            serve_turmoil(listener, Server::new(served, ENDPOINT)).await?;
            Ok(())
        }
    });
    (sim, cloud)
}

/// Runs `body` as the "controller" client with fresh EC2 and SQS clients; returns the
/// simulated time at which the run ended.
pub fn run_controller<F, Fut>(sim: &mut turmoil::Sim<'static>, body: F) -> Duration
where
    F: FnOnce(aws_sdk_ec2::Client, aws_sdk_sqs::Client) -> Fut + 'static,
    Fut: Future<Output = turmoil::Result> + 'static,
{
    sim.client("controller", async move {
        let ec2 = ec2_client(&SdkOptions::ec2(ENDPOINT, REGION));
        let sqs = sqs_client(&SdkOptions::sqs(ENDPOINT, REGION));
        body(ec2, sqs).await
    });
    sim.run().expect("simulation succeeds");
    sim.elapsed()
}

/// Simulated seconds since the start of the run.
pub fn now() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

/// Creates the Karpenter-style launch template the tests launch from.
pub async fn launch_template(ec2: &aws_sdk_ec2::Client, cloud: &SharedCloud) -> String {
    let ami = lock(cloud)
        .images()
        .parameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
        .expect("AMI parameter")
        .to_string();
    let data = aws_sdk_ec2::types::RequestLaunchTemplateData::builder().image_id(ami).build();
    ec2.create_launch_template()
        .launch_template_name("karpenter.k8s.aws/test")
        .launch_template_data(data)
        .send()
        .await
        .expect("launch template created");
    "karpenter.k8s.aws/test".to_string()
}

/// The subnet id of a zone.
pub fn subnet(cloud: &SharedCloud, zone: &str) -> String {
    lock(cloud).subnets().find(|s| s.zone == zone).expect("subnet in zone").id.clone()
}
