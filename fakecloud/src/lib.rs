//! A stateful, seeded fake EC2 and SQS that unmodified AWS SDK clients talk to.
//!
//! Start with [`FakeCloud`]: a pure, deterministic state machine (no Kubernetes, no wall
//! clock, no OS entropy) holding the [`Catalog`], capacity pools, the spot market,
//! instances, launch templates, subnets, security groups, AMIs, the SQS interruption queue,
//! throttling and the billing [`Ledger`]. Time moves only through
//! [`FakeCloud::advance_to`]; [`FakeCloud::next_deadline`] says when it next has work.
//! In a world, [`SharedCloud`] shares it and owns its time: it reads a [`cloud::CloudClock`]
//! and brings the cloud up to the current instant whenever someone acts on it.
//!
//! Then [`wire`] serves it over HTTP, speaking the EC2 query protocol and SQS's JSON
//! protocol, on a turmoil listener inside the simulation or on a real TCP port; and
//! [`sdk`] builds `aws_sdk_ec2`/`aws_sdk_sqs` clients that reach it over turmoil TCP
//! with simulated time, tokio sleep, seeded retry jitter and their own retry partition.
//! The controller receives those clients and never learns it is simulated.
//!
//! # Building a world
//!
//! ```no_run
//! use std::time::{Duration, UNIX_EPOCH};
//! use dovetail_fakecloud::sdk::{SdkOptions, ec2_client, sqs_client};
//! use dovetail_fakecloud::cloud::shared;
//! use dovetail_fakecloud::wire::{Server, serve_turmoil};
//! use dovetail_fakecloud::{Catalog, CloudConfig, EPOCH_2026, FakeCloud, Faults, SpotStorm};
//!
//! let seed = 42;
//! fastrand::seed(seed); // the SDK's idempotency tokens use it (retry jitter: SdkOptions::thread_rng_seed)
//! let mut cloud = FakeCloud::new(
//!     CloudConfig::new(seed, UNIX_EPOCH + EPOCH_2026), // same epoch as the turmoil sim
//!     Catalog::load("us-west-2").expect("catalog"),
//! );
//! cloud.create_interruption_queue("karpenter-interruptions");
//! let cloud = shared(cloud); // time: turmoil's simulated clock
//!
//! let mut sim = turmoil::Builder::new()
//!     .rng_seed(seed)
//!     .epoch(UNIX_EPOCH + EPOCH_2026)
//!     .simulation_duration(Duration::from_secs(3600))
//!     .build();
//! let served = cloud.clone();
//! sim.host("aws", move || {
//!     let served = served.clone();
//!     async move {
//!         let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 80)).await?;
//!         serve_turmoil(listener, Server::new(served, "http://aws:80")).await?;
//!         Ok(())
//!     }
//! });
//! sim.client("controller", async {
//!     // Build clients inside the host that uses them.
//!     let ec2 = ec2_client(&SdkOptions::ec2("http://aws:80", "us-west-2"));
//!     let _sqs = sqs_client(&SdkOptions::sqs("http://aws:80", "us-west-2"));
//!     let _ = ec2.describe_instances().send().await;
//!     Ok(())
//! });
//! // Faults and scripted events go through the shared cloud at any step:
//! cloud.lock().set_faults(Faults { describe_lag: Duration::from_secs(2), ..Faults::default() });
//! cloud.lock().schedule_spot_storm(
//!     Duration::from_secs(600),
//!     SpotStorm { zone: Some("us-west-2a".into()), instance_types: vec![], fraction: 0.5 },
//! );
//! while !sim.step().expect("step") {
//!     // Code between steps is in no host: tell the cloud where the world is, so that
//!     // `cloud.advance()` here brings it up to the sim's time.
//!     cloud.stepped_to(sim.elapsed());
//! }
//! let _now = cloud.advance();
//! ```

#![warn(missing_docs)]

mod capacity;
mod catalog;
pub mod cloud;
mod config;
mod error;
mod eventbridge;
mod events;
mod faults;
mod ids;
mod images;
mod instance;
mod ledger;
mod network;
mod node_auth;
mod published;
mod reservations;
pub mod sdk;
mod seed;
mod spot;
mod sqs;
pub mod status_checks;
mod tags;
mod thread_rng_reseed;
mod throttle;
mod timefmt;
pub mod wire;

pub use capacity::{CapacityType, Pool, PoolKey};
pub use catalog::{Catalog, InstanceTypeInfo, InterruptionBucket, Zone, data_dir};
pub use cloud::fleet::{
    CreateFleetOutput, CreateFleetRequest, FleetError, FleetInstances, FleetLaunchTemplateConfig, FleetOverride,
};
pub use cloud::launch::{RunInstancesOutput, RunInstancesRequest};
pub use cloud::launch_template::{LaunchTemplate, LaunchTemplateRef, LaunchTemplateSpec};
pub use cloud::ops_ec2::{LocationType, Page, SpotPricePoint, StateChange};
pub use cloud::{FakeCloud, INITIAL_AMI_VERSION, SharedCloud};
pub use config::{CloudConfig, EPOCH_2026};
pub use error::{ApiError, ApiResult, Error, Result};
pub use faults::{Faults, ScriptedError, SpotStorm};
pub use images::{AMAZON_EKS_OWNER, Image, Images};
pub use instance::{Instance, InstanceState, ScheduledEvent};
pub use ledger::{ApiCall, BillingRecord, CostReport, Ledger, NODEPOOL_TAG, RESERVED, ReservationBill};
pub use network::{SecurityGroup, Subnet};
pub use node_auth::{NodeAuth, Refusal};
pub use published::{Published, PublishedKind};
pub use reservations::{
    CAPACITY_BLOCK_RECLAIM_LEAD, CapacityReservation, MatchCriteria, ReservationSpec, ReservationType,
    is_reservation_id,
};
pub use sqs::{Message, Queue, Received, Sqs};
pub use status_checks::{StatusCheck, StatusChecks};
pub use tags::{Filter, Tags};
pub use throttle::{BucketSpec, ThrottleConfig};
