//! Property tests of the pure state machine: whatever sequence of launches, fleets,
//! terminations, storms, outages and time steps runs, resources are conserved and the
//! ledger stays consistent.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use dovetail_fakecloud::{
    CapacityType, Catalog, CloudConfig, CreateFleetRequest, EPOCH_2026, FakeCloud, FleetLaunchTemplateConfig,
    FleetOverride, InstanceState, LaunchTemplateRef, LaunchTemplateSpec, PoolKey, RunInstancesRequest, SpotStorm,
};
use proptest::prelude::*;

const TYPES: [&str; 3] = ["m5.large", "c5.large", "m5.xlarge"];
const ZONES: [&str; 2] = ["us-west-2a", "us-west-2b"];
const POOL_FREE: u32 = 6;
const QUOTA: u32 = 40;
const SUBNET_IPS: u32 = 25;

#[derive(Debug, Clone)]
enum Op {
    Run { ty: usize, zone: usize, count: u32, spot: bool },
    Fleet { spot: bool, count: u32 },
    Terminate { pick: usize },
    Advance { secs: u64 },
    Storm { fraction: f64 },
    Outage { zone: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, 0..2usize, 1..4u32, any::<bool>()).prop_map(|(ty, zone, count, spot)| Op::Run {
            ty,
            zone,
            count,
            spot
        }),
        (any::<bool>(), 1..5u32).prop_map(|(spot, count)| Op::Fleet { spot, count }),
        (0..64usize).prop_map(|pick| Op::Terminate { pick }),
        (1..900u64).prop_map(|secs| Op::Advance { secs }),
        (0.0..1.0f64).prop_map(|fraction| Op::Storm { fraction }),
        (0..2usize).prop_map(|zone| Op::Outage { zone }),
    ]
}

fn catalog() -> Catalog {
    let mut c = Catalog::load("us-west-2").expect("catalog");
    c.retain_types(&TYPES).expect("types");
    c.retain_zones(&ZONES).expect("zones");
    c
}

fn build(seed: u64) -> FakeCloud {
    let mut config = CloudConfig::new(seed, UNIX_EPOCH + EPOCH_2026);
    config.spot_hazard_multiplier = 5_000.0;
    config.vcpu_quota_on_demand = QUOTA;
    config.vcpu_quota_spot = QUOTA;
    config.default_subnet_free_ips = SUBNET_IPS;
    let mut cloud = FakeCloud::new(config, catalog());
    cloud.create_interruption_queue("q");
    for ty in TYPES {
        for zone in ZONES {
            for ct in [CapacityType::OnDemand, CapacityType::Spot] {
                cloud.set_pool(&PoolKey::new(ty, zone, ct), POOL_FREE, POOL_FREE, None);
            }
        }
    }
    let ami = cloud.images().images.keys().next().expect("ami").clone();
    cloud
        .create_launch_template(LaunchTemplateSpec { name: "lt".into(), image_id: Some(ami), ..Default::default() })
        .expect("lt");
    cloud
}

fn apply(cloud: &mut FakeCloud, op: &Op, t: &mut Duration) {
    match op {
        Op::Run { ty, zone, count, spot } => {
            let _ = cloud.run_instances(&RunInstancesRequest {
                instance_type: Some(TYPES[*ty].into()),
                availability_zone: Some(ZONES[*zone].into()),
                min_count: 1,
                max_count: *count,
                spot: *spot,
                launch_template: Some(LaunchTemplateRef::Name("lt".into())),
                ..Default::default()
            });
        }
        Op::Fleet { spot, count } => {
            let overrides = TYPES
                .iter()
                .flat_map(|ty| {
                    ZONES.iter().map(move |z| FleetOverride {
                        instance_type: Some((*ty).into()),
                        availability_zone: Some((*z).into()),
                        ..Default::default()
                    })
                })
                .collect();
            let req = CreateFleetRequest {
                configs: vec![FleetLaunchTemplateConfig {
                    template: LaunchTemplateRef::Name("lt".into()),
                    version: None,
                    overrides,
                }],
                total_target_capacity: *count,
                default_capacity_type: if *spot { CapacityType::Spot } else { CapacityType::OnDemand },
                on_demand_target: None,
                spot_target: None,
                spot_allocation_strategy: None,
                on_demand_allocation_strategy: None,
                fleet_type: "instant".into(),
                client_token: None,
                tags: BTreeMap::new(),
                context: None,
            };
            let out = cloud.create_fleet(&req).expect("well-formed fleet");
            assert!(out.instance_ids().len() <= *count as usize);
            if out.instance_ids().len() < *count as usize {
                assert!(!out.errors.is_empty(), "a short fleet explains itself");
            }
        }
        Op::Terminate { pick } => {
            let ids: Vec<String> = cloud.instances().map(|i| i.id.clone()).collect();
            if !ids.is_empty() {
                let id = ids[pick % ids.len()].clone();
                cloud.terminate_instances(&[id]).expect("known id");
            }
        }
        Op::Advance { secs } => {
            *t += Duration::from_secs(*secs);
            cloud.advance_to(*t);
        }
        Op::Storm { fraction } => {
            cloud.schedule_spot_storm(*t, SpotStorm { zone: None, instance_types: vec![], fraction: *fraction })
        }
        Op::Outage { zone } => {
            cloud.schedule_zone_outage(ZONES[*zone], *t, Some(*t + Duration::from_secs(600))).expect("zone");
        }
    }
}

fn check(cloud: &mut FakeCloud) {
    let holding = |s: InstanceState| matches!(s, InstanceState::Pending | InstanceState::Running);
    let mut per_pool: BTreeMap<PoolKey, u32> = BTreeMap::new();
    let mut per_subnet: BTreeMap<String, u32> = BTreeMap::new();
    let mut vcpu: BTreeMap<CapacityType, u32> = BTreeMap::new();
    for i in cloud.instances() {
        if holding(i.state) {
            *per_pool.entry(PoolKey::new(&i.instance_type, &i.zone, i.capacity_type)).or_default() += 1;
            *per_subnet.entry(i.subnet_id.clone()).or_default() += 1;
            *vcpu.entry(i.capacity_type).or_default() += cloud.catalog().get(&i.instance_type).map_or(0, |t| t.vcpu);
        }
        if matches!(i.state, InstanceState::ShuttingDown | InstanceState::Terminated | InstanceState::Stopped) {
            assert!(i.billing_end.is_some(), "{} stopped billing", i.id);
        }
        if let Some(at) = i.reclaim_at {
            assert_eq!(i.capacity_type, CapacityType::Spot);
            assert!(i.state != InstanceState::Running || at >= cloud.now(), "a running instance is reclaimed on time");
        }
    }
    for used in vcpu.values() {
        assert!(*used <= QUOTA, "quota respected: {used}");
    }
    for ty in TYPES {
        for zone in ZONES {
            for ct in [CapacityType::OnDemand, CapacityType::Spot] {
                let key = PoolKey::new(ty, zone, ct);
                let live = per_pool.get(&key).copied().unwrap_or(0);
                assert_eq!(cloud.pool_free(&key) + live, POOL_FREE, "pool {key:?} conserves slots");
            }
        }
    }
    for s in cloud.subnets() {
        assert_eq!(
            s.free_ips + per_subnet.get(&s.id).copied().unwrap_or(0),
            SUBNET_IPS,
            "subnet {} conserves IPs",
            s.id
        );
    }
    for r in cloud.ledger().records.values() {
        assert!(r.end.is_none_or(|e| e >= r.start));
    }
    assert!(cloud.next_deadline().is_none_or(|d| d >= cloud.now()) || cloud.pending_events() > 0);
    let report = cloud.cost_report();
    assert!(report.total_usd >= 0.0 && report.total_usd.is_finite());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn resources_are_conserved_and_the_ledger_stays_consistent(seed in 0u64..1000, ops in prop::collection::vec(op(), 1..60)) {
        let mut cloud = build(seed);
        let mut t = Duration::ZERO;
        for op in &ops {
            apply(&mut cloud, op, &mut t);
            check(&mut cloud);
        }
        // Replaying the same sequence gives the same world.
        let mut again = build(seed);
        let mut t2 = Duration::ZERO;
        for op in &ops {
            apply(&mut again, op, &mut t2);
        }
        prop_assert_eq!(cloud.digest(), again.digest());
    }
}
