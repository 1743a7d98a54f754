//! Serves a fake cloud on 127.0.0.1 so the AWS CLI (or any SDK) can talk to it:
//!
//! ```text
//! cargo run -p dovetail-fakecloud --example serve -- 4566 us-west-2 42
//! aws --endpoint-url http://127.0.0.1:4566 --region us-west-2 ec2 describe-availability-zones
//! ```
//!
//! Simulated time follows tokio's (here: real) time from startup; an interruption queue
//! named `karpenter-interruptions` exists.

use std::time::{Duration, UNIX_EPOCH};

use dovetail_fakecloud::cloud::{SharedCloud, TokioClock};
use dovetail_fakecloud::wire::{Server, serve_tcp};
use dovetail_fakecloud::{Catalog, CloudConfig, EPOCH_2026, FakeCloud};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().map_or(Ok(4566), |p| p.parse())?;
    let region = args.next().unwrap_or_else(|| "us-west-2".into());
    let seed: u64 = args.next().map_or(Ok(1), |s| s.parse())?;
    let mut cloud = FakeCloud::new(CloudConfig::new(seed, UNIX_EPOCH + EPOCH_2026), Catalog::load(&region)?);
    cloud.create_interruption_queue("karpenter-interruptions");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let endpoint = format!("http://127.0.0.1:{port}");
        eprintln!("fake EC2/SQS for {region} (seed {seed}) at {endpoint}");
        serve_tcp(listener, Server::new(SharedCloud::new(cloud, TokioClock::starting_at(Duration::ZERO)), &endpoint))
            .await
    })?;
    Ok(())
}
