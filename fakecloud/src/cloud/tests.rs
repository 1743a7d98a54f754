//! Unit tests of the state machine through its Rust API.

use super::*;
use crate::capacity::{CapacityType, PoolKey};
use crate::catalog::tests::small;
use crate::cloud::fleet::{CreateFleetRequest, FleetLaunchTemplateConfig, FleetOverride};
use crate::cloud::launch::RunInstancesRequest;
use crate::cloud::launch_template::{LaunchTemplateRef, LaunchTemplateSpec};
use crate::config::EPOCH_2026;
use crate::error::ApiResult;
use crate::faults::Faults;
use crate::instance::InstanceState;
use crate::tags::Filter;
use std::collections::BTreeSet;
use std::time::UNIX_EPOCH;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn cloud(seed: u64) -> FakeCloud {
    let mut c = FakeCloud::new(CloudConfig::new(seed, UNIX_EPOCH + EPOCH_2026), small());
    let ami = c
        .images
        .parameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
        .expect("ami")
        .to_string();
    c.create_launch_template(LaunchTemplateSpec { name: "lt".into(), image_id: Some(ami), ..Default::default() })
        .expect("lt");
    c
}

fn run(c: &mut FakeCloud, ty: &str, count: u32, spot: bool) -> ApiResult<Vec<String>> {
    c.run_instances(&RunInstancesRequest {
        instance_type: Some(ty.into()),
        min_count: count,
        max_count: count,
        availability_zone: Some("us-west-2a".into()),
        launch_template: Some(LaunchTemplateRef::Name("lt".into())),
        spot,
        ..Default::default()
    })
    .map(|o| o.instance_ids)
}

#[test]
fn instances_run_after_a_seeded_delay_and_vanish_an_hour_after_termination() {
    let mut c = cloud(1);
    let id = run(&mut c, "m5.large", 1, false).expect("launched").remove(0);
    assert_eq!(c.instance(&id).map(|i| i.state), Some(InstanceState::Pending));
    let due = c.next_deadline().expect("launch completion scheduled");
    assert!((secs(8)..=secs(25)).contains(&due));
    c.advance_to(due);
    assert_eq!(c.instance(&id).map(|i| i.state), Some(InstanceState::Running));
    assert_eq!(c.instance(&id).and_then(|i| i.running_at), Some(due));
    c.advance_to(secs(100));
    c.terminate_instances(std::slice::from_ref(&id)).expect("terminate");
    c.advance_to(secs(130));
    assert_eq!(c.instance(&id).map(|i| i.state), Some(InstanceState::Terminated));
    c.advance_to(secs(130 + 3600));
    assert!(c.instance(&id).is_none(), "purged after the visibility window");
    assert_eq!(c.pending_events(), 0, "an idle cloud has nothing scheduled");
    assert!(c.describe_instances(&[id], &[], None, None).is_err());
}

#[test]
fn run_instances_below_min_count_launches_nothing() {
    let mut c = cloud(2);
    c.set_pool(&PoolKey::new("m5.large", "us-west-2a", CapacityType::OnDemand), 3, 3, None);
    let err = run(&mut c, "m5.large", 4, false).expect_err("only 3 slots");
    assert_eq!((err.code.as_str(), err.status), ("InsufficientInstanceCapacity", 500));
    assert_eq!(c.instances().count(), 0);
    assert_eq!(c.pool_free(&PoolKey::new("m5.large", "us-west-2a", CapacityType::OnDemand)), 3, "slots returned");
    assert_eq!(run(&mut c, "m5.large", 3, false).expect("fits").len(), 3);
}

#[test]
fn quotas_and_subnet_addresses_limit_launches() {
    let mut c = cloud(3);
    c.set_vcpu_quotas(4, 2);
    run(&mut c, "m5.large", 2, false).expect("4 vCPU fit");
    assert_eq!(run(&mut c, "c5.large", 1, false).expect_err("quota").code, "VcpuLimitExceeded");
    run(&mut c, "c5.large", 1, true).expect("spot quota is separate");
    assert_eq!(run(&mut c, "c5.large", 1, true).expect_err("spot quota").code, "MaxSpotInstanceCountExceeded");
    let mut c = cloud(3);
    let subnet = c.best_subnet(Some("us-west-2a")).expect("subnet");
    c.set_subnet_free_ips(&subnet, 1).expect("known subnet");
    run(&mut c, "m5.large", 1, false).expect("one address");
    assert_eq!(run(&mut c, "m5.large", 1, false).expect_err("no address").code, "InsufficientFreeAddressesInSubnet");
}

fn fleet_request(token: Option<&str>, capacity_type: CapacityType, types: &[&str], n: u32) -> CreateFleetRequest {
    CreateFleetRequest {
        configs: vec![FleetLaunchTemplateConfig {
            template: LaunchTemplateRef::Name("lt".into()),
            version: Some("$Latest".into()),
            overrides: types
                .iter()
                .map(|t| FleetOverride {
                    instance_type: Some((*t).into()),
                    availability_zone: Some("us-west-2a".into()),
                    ..Default::default()
                })
                .collect(),
        }],
        total_target_capacity: n,
        default_capacity_type: capacity_type,
        on_demand_target: None,
        spot_target: None,
        spot_allocation_strategy: Some("price-capacity-optimized".into()),
        on_demand_allocation_strategy: Some("lowest-price".into()),
        fleet_type: "instant".into(),
        client_token: token.map(str::to_string),
        tags: Default::default(),
        context: None,
    }
}

#[test]
fn client_token_makes_create_fleet_idempotent() {
    let mut c = cloud(4);
    let req = fleet_request(Some("tok"), CapacityType::OnDemand, &["m5.large"], 2);
    let a = c.create_fleet(&req).expect("fleet");
    let b = c.create_fleet(&req).expect("replay");
    assert_eq!(a, b);
    assert_eq!(c.instances().count(), 2);
    let other = fleet_request(Some("tok"), CapacityType::OnDemand, &["c5.large"], 2);
    assert_eq!(c.create_fleet(&other).expect_err("mismatch").code, "IdempotentParameterMismatch");
}

#[test]
fn price_capacity_optimized_prefers_deep_pools_over_cheap_shallow_ones() {
    let mut c = cloud(5);
    // c5.large is cheapest but nearly empty; m5.large is deep.
    c.set_pool(&PoolKey::new("c5.large", "us-west-2a", CapacityType::Spot), 2, 200, None);
    c.set_pool(&PoolKey::new("m5.large", "us-west-2a", CapacityType::Spot), 100, 200, None);
    c.set_pool(&PoolKey::new("m5.xlarge", "us-west-2a", CapacityType::Spot), 90, 200, None);
    let out = c
        .create_fleet(&fleet_request(None, CapacityType::Spot, &["c5.large", "m5.large", "m5.xlarge"], 1))
        .expect("fleet");
    assert_eq!(out.instances[0].instance_type, "m5.large");
    let od = c
        .create_fleet(&fleet_request(None, CapacityType::OnDemand, &["m5.xlarge", "c5.large", "m5.large"], 1))
        .expect("fleet");
    assert_eq!(od.instances[0].instance_type, "c5.large", "on-demand ignores depth");
}

#[test]
fn an_az_outage_stops_instances_and_fails_launches_until_it_ends() {
    let mut c = cloud(6);
    let ids = run(&mut c, "m5.large", 2, false).expect("launched");
    c.advance_to(secs(60));
    c.schedule_zone_outage("us-west-2a", secs(100), Some(secs(1000))).expect("zone");
    c.advance_to(secs(200));
    assert!(ids.iter().all(|id| c.instance(id).map(|i| i.state) == Some(InstanceState::Stopped)));
    assert_eq!(run(&mut c, "m5.large", 1, false).expect_err("outage").code, "InsufficientInstanceCapacity");
    c.advance_to(secs(1000));
    run(&mut c, "m5.large", 1, false).expect("zone back");
}

#[test]
fn describe_lag_and_stuck_pending_faults() {
    let mut c = cloud(7);
    c.set_faults(Faults { describe_lag: secs(5), stuck_pending_rate: 1.0, ..Faults::default() });
    let id = run(&mut c, "m5.large", 1, false).expect("launched").remove(0);
    let err = c.describe_instances(std::slice::from_ref(&id), &[], None, None).expect_err("not visible yet");
    assert_eq!(err.code, "InvalidInstanceID.NotFound");
    c.advance_to(secs(600));
    let page = c
        .describe_instances(std::slice::from_ref(&id), &[Filter::new("instance-state-name", &["pending"])], None, None)
        .expect("visible");
    assert_eq!(page.items.len(), 1, "still pending: stuck");
}

#[test]
fn natural_spot_interruptions_follow_the_hazard_and_reclaim_after_notice() {
    let mut config = CloudConfig::new(8, UNIX_EPOCH + EPOCH_2026);
    config.spot_hazard_multiplier = 20_000.0;
    let mut c = FakeCloud::new(config, small());
    let ami = c.images.images.keys().next().expect("ami").clone();
    c.create_interruption_queue("q");
    let req = RunInstancesRequest {
        image_id: Some(ami),
        instance_type: Some("m5.large".into()),
        min_count: 20,
        max_count: 20,
        spot: true,
        ..Default::default()
    };
    c.run_instances(&req).expect("launched");
    // Watch the queue in 100 s steps (messages live 300 s) while the hazard plays out.
    let mut warnings = BTreeSet::new();
    for step in 1..=(48 * 36) {
        c.advance_to(secs(step * 100));
        for m in c.sqs.queues["q"].messages.values() {
            if m.body.contains("Spot Instance Interruption Warning") {
                warnings.insert((m.sent_at, m.message_id.clone()));
            }
        }
    }
    assert_eq!(warnings.len(), 20, "every instance warned once within two days at this hazard");
    let ends: BTreeSet<Duration> = c.ledger.records.values().map(|r| r.end.expect("billing stopped")).collect();
    assert_eq!(ends.len(), 20, "interruption times are independent draws");
    for (sent_at, _) in &warnings {
        assert!(ends.contains(&(*sent_at + secs(120))), "reclaimed exactly 120 s after its warning");
    }
}

#[test]
fn scheduled_maintenance_publishes_an_aws_health_event() {
    let mut c = cloud(10);
    c.create_interruption_queue("q");
    let id = run(&mut c, "m5.large", 1, false).expect("launched").remove(0);
    c.schedule_maintenance(&id, secs(100), secs(86_400));
    c.advance_to(secs(100));
    let health: Vec<_> = c.sqs.queues["q"].messages.values().filter(|m| m.body.contains("AWS Health Event")).collect();
    assert_eq!(health.len(), 1);
    let body: serde_json::Value = serde_json::from_str(&health[0].body).expect("json");
    assert_eq!(body["source"], "aws.health");
    assert_eq!(body["detail"]["eventTypeCategory"], "scheduledChange");
    assert_eq!(body["detail"]["affectedEntities"][0]["entityValue"], id.as_str());
    assert_eq!(body["detail"]["startTime"], "2026-01-02T00:00:00Z");
}

#[test]
fn ami_release_repoints_the_recommended_parameter() {
    let mut c = cloud(9);
    let path = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id";
    let before = c.get_parameter(path).expect("param");
    c.release_ami("v20260201");
    let after = c.get_parameter(path).expect("param");
    assert_ne!(before, after);
    assert_eq!(c.images().images[&after].version, "v20260201");
    assert!(c.get_parameter("/nope").is_err());
}

#[test]
fn kubelets_cut_off_by_subnet_or_security_group_are_refused_until_the_network_heals() {
    let mut c = cloud(8);
    let ids = run(&mut c, "m5.large", 2, false).expect("launched");
    let subnet = c.instance(&ids[0]).expect("instance").subnet_id.clone();
    let sg = c.security_groups().next().expect("node security group").id.clone();
    c.instances.get_mut(&ids[1]).expect("instance").security_group_ids = vec![sg.clone()];
    let mut f = c.faults().clone();
    f.unreachable_subnets.insert(subnet.clone());
    c.set_faults(f);
    assert!(!c.authenticate_node(&ids[0]));
    assert!(!c.authenticate_node(&ids[1]), "same subnet");
    let cause = &c.node_auth().refusals()[&ids[0]].cause;
    assert_eq!(cause, &format!("subnet {subnet} (us-west-2a) has no route to the cluster endpoint"));

    let mut f = c.faults().clone();
    f.unreachable_subnets.clear();
    f.unreachable_security_groups.insert(sg.clone());
    c.set_faults(f);
    c.advance_to(secs(30));
    assert!(c.authenticate_node(&ids[0]), "no security group of its own is cut off");
    assert!(!c.authenticate_node(&ids[1]));
    assert_eq!(c.node_auth().refusals()[&ids[0]].joined_at, Some(secs(30)));

    let mut f = c.faults().clone();
    f.unreachable_security_groups.clear();
    c.set_faults(f);
    c.advance_to(secs(60));
    assert!(c.authenticate_node(&ids[1]));
    let refusal = &c.node_auth().refusals()[&ids[1]];
    assert_eq!((refusal.first_at, refusal.joined_at), (secs(0), Some(secs(60))), "first cause kept: {}", refusal.cause);
}
