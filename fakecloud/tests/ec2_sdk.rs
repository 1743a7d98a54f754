//! EC2 through a real `aws_sdk_ec2::Client` over turmoil: fleet choice, ICE, throttling,
//! not-found, describes and billing.

mod common;

use std::time::Duration;

use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::types::{
    DefaultTargetCapacityType, FleetLaunchTemplateConfigRequest, FleetLaunchTemplateOverridesRequest,
    FleetLaunchTemplateSpecificationRequest, FleetType, OnDemandOptionsRequest, SpotAllocationStrategy,
    SpotOptionsRequest, TargetCapacitySpecificationRequest,
};
use common::*;
use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::{CapacityType, FakeCloud, Faults, PoolKey, ScriptedError, ThrottleConfig};

fn overrides(
    cloud: &dovetail_fakecloud::cloud::SharedCloud,
    pairs: &[(&str, &str)],
) -> Vec<FleetLaunchTemplateOverridesRequest> {
    pairs
        .iter()
        .map(|(ty, zone)| {
            FleetLaunchTemplateOverridesRequest::builder()
                .instance_type(aws_sdk_ec2::types::InstanceType::from(*ty))
                .subnet_id(subnet(cloud, zone))
                .availability_zone(*zone)
                .build()
        })
        .collect()
}

async fn fleet(
    ec2: &aws_sdk_ec2::Client,
    template: &str,
    ovs: Vec<FleetLaunchTemplateOverridesRequest>,
    capacity_type: DefaultTargetCapacityType,
    count: i32,
) -> aws_sdk_ec2::operation::create_fleet::CreateFleetOutput {
    ec2.create_fleet()
        .r#type(FleetType::Instant)
        .target_capacity_specification(
            TargetCapacitySpecificationRequest::builder()
                .total_target_capacity(count)
                .default_target_capacity_type(capacity_type)
                .build(),
        )
        .launch_template_configs(
            FleetLaunchTemplateConfigRequest::builder()
                .launch_template_specification(
                    FleetLaunchTemplateSpecificationRequest::builder()
                        .launch_template_name(template)
                        .version("$Latest")
                        .build(),
                )
                .set_overrides(Some(ovs))
                .build(),
        )
        .on_demand_options(
            OnDemandOptionsRequest::builder()
                .allocation_strategy(aws_sdk_ec2::types::FleetOnDemandAllocationStrategy::LowestPrice)
                .build(),
        )
        .spot_options(
            SpotOptionsRequest::builder().allocation_strategy(SpotAllocationStrategy::PriceCapacityOptimized).build(),
        )
        .send()
        .await
        .expect("create_fleet succeeds")
}

#[test]
fn fleet_launch_picks_the_cheapest_available_override() {
    let (mut sim, cloud) = world(1, FakeCloud::new(config(1), small_catalog()), Duration::from_secs(120));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let lt = launch_template(&ec2, &c).await;
        let all = [("m5.large", "us-west-2a"), ("c5.large", "us-west-2a"), ("m5.xlarge", "us-west-2b")];
        let out = fleet(&ec2, &lt, overrides(&c, &all), DefaultTargetCapacityType::OnDemand, 1).await;
        let set = out.instances();
        assert_eq!(set.len(), 1);
        assert_eq!(set[0].instance_type().map(|t| t.as_str()), Some("c5.large"), "c5.large is the cheapest on-demand");
        assert_eq!(set[0].lifecycle().map(|l| l.as_str()), Some("on-demand"));
        assert!(out.errors().is_empty());
        let echoed = set[0].launch_template_and_overrides().and_then(|l| l.overrides()).expect("overrides echoed");
        assert_eq!(echoed.availability_zone(), Some("us-west-2a"));

        // With c5.large in 2a exhausted, the next cheapest (m5.large) wins and the ICE shows up.
        lock(&c).set_pool(&PoolKey::new("c5.large", "us-west-2a", CapacityType::OnDemand), 0, 10, None);
        let out = fleet(&ec2, &lt, overrides(&c, &all), DefaultTargetCapacityType::OnDemand, 3).await;
        let launched: Vec<_> =
            out.instances().iter().map(|s| s.instance_type().map(|t| t.as_str().to_string())).collect();
        assert_eq!(launched, vec![Some("m5.large".to_string())]);
        assert_eq!(out.instances()[0].instance_ids().len(), 3, "TotalTargetCapacity=3 from one pool");
        assert_eq!(out.errors().len(), 1);
        assert_eq!(out.errors()[0].error_code(), Some("InsufficientInstanceCapacity"));

        // Spot, price-capacity-optimized: every pool deep enough, so the lowest spot price wins.
        let out = fleet(&ec2, &lt, overrides(&c, &all), DefaultTargetCapacityType::Spot, 1).await;
        let chosen = out.instances()[0].instance_type().map(|t| t.as_str().to_string()).expect("type");
        let cheapest = {
            let cloud = lock(&c);
            let t = cloud.now();
            all.iter()
                .map(|(ty, z)| (cloud.spot_price(ty, z, t).expect("priced"), *ty))
                .fold((f64::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a })
                .1
        };
        assert_eq!(chosen, cheapest);
        assert_eq!(out.instances()[0].lifecycle().map(|l| l.as_str()), Some("spot"));
        Ok(())
    });
    let cloud = lock(&cloud);
    assert_eq!(cloud.instances().count(), 5);
}

#[test]
fn ice_is_reported_per_override_and_as_an_api_error_for_run_instances() {
    let mut fake = FakeCloud::new(config(2), small_catalog());
    for ty in ["m5.large", "c5.large", "m5.xlarge"] {
        for zone in ["us-west-2a", "us-west-2b"] {
            for ct in [CapacityType::OnDemand, CapacityType::Spot] {
                fake.set_pool(&PoolKey::new(ty, zone, ct), 0, 5, None);
            }
        }
    }
    let (mut sim, cloud) = world(2, fake, Duration::from_secs(120));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let lt = launch_template(&ec2, &c).await;
        let all = [("m5.large", "us-west-2a"), ("c5.large", "us-west-2b")];
        let out = fleet(&ec2, &lt, overrides(&c, &all), DefaultTargetCapacityType::Spot, 1).await;
        assert!(out.instances().is_empty());
        let mut errs: Vec<_> = out
            .errors()
            .iter()
            .map(|e| {
                let ty = e
                    .launch_template_and_overrides()
                    .and_then(|l| l.overrides())
                    .and_then(|o| o.instance_type())
                    .map(|t| t.as_str().to_string());
                (e.error_code().map(str::to_string), ty)
            })
            .collect();
        errs.sort();
        assert_eq!(
            errs,
            vec![
                (Some("InsufficientInstanceCapacity".into()), Some("c5.large".into())),
                (Some("InsufficientInstanceCapacity".into()), Some("m5.large".into())),
            ]
        );

        let ami = lock(&c).images().images.keys().next().expect("an AMI").clone();
        let err = ec2
            .run_instances()
            .image_id(ami)
            .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
            .min_count(1)
            .max_count(1)
            .send()
            .await
            .expect_err("no capacity anywhere");
        assert_eq!(err.code(), Some("InsufficientInstanceCapacity"));
        assert!(err.message().unwrap_or_default().contains("m5.large"));
        Ok(())
    });
    let cloud = lock(&cloud);
    let runs = cloud.ledger().calls.iter().filter(|c| c.action == "RunInstances").count();
    assert_eq!(runs, 3, "ICE is a 500 in EC2, so the SDK retried it twice");
    assert_eq!(cloud.instances().count(), 0);
}

#[test]
fn throttling_is_retried_by_the_sdk_in_simulated_time() {
    let (mut sim, cloud) = world(3, FakeCloud::new(config(3), small_catalog()), Duration::from_secs(120));
    lock(&cloud).set_faults(Faults {
        scripted: vec![ScriptedError {
            action: Some("DescribeInstances".into()),
            code: "RequestLimitExceeded".into(),
            status: 503,
            count: 2,
        }],
        ..Faults::default()
    });
    run_controller(&mut sim, move |ec2, _| async move {
        let before = now();
        let out = ec2.describe_instances().send().await.expect("succeeds after retries");
        assert!(out.reservations().is_empty());
        let took = now() - before;
        assert!(took > Duration::from_millis(10) && took < Duration::from_secs(4), "{took:?}");
        Ok(())
    });
    let outcomes: Vec<String> = lock(&cloud).ledger().calls.iter().map(|c| c.outcome.clone()).collect();
    assert_eq!(outcomes, vec!["RequestLimitExceeded", "RequestLimitExceeded", "OK"]);
}

#[test]
fn token_bucket_throttling_surfaces_after_retries_are_exhausted() {
    let (mut sim, cloud) = world(4, FakeCloud::new(config(4), small_catalog()), Duration::from_secs(120));
    lock(&cloud).set_faults(Faults { throttling: Some(ThrottleConfig::uniform(2.0, 0.01)), ..Faults::default() });
    run_controller(&mut sim, move |ec2, _| async move {
        ec2.describe_instances().send().await.expect("first burst token");
        ec2.describe_instances().send().await.expect("second burst token");
        let err = ec2.describe_instances().send().await.expect_err("bucket empty");
        assert_eq!(err.code(), Some("RequestLimitExceeded"));
        Ok(())
    });
    assert_eq!(lock(&cloud).ledger().calls.len(), 5, "2 ok + 3 throttled attempts");
}

#[test]
fn terminating_an_unknown_instance_is_not_found_and_terminate_is_idempotent() {
    let (mut sim, cloud) = world(5, FakeCloud::new(config(5), small_catalog()), Duration::from_secs(300));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let err = ec2.terminate_instances().instance_ids("i-0123456789abcdef0").send().await.expect_err("unknown id");
        assert_eq!(err.code(), Some("InvalidInstanceID.NotFound"));

        let lt = launch_template(&ec2, &c).await;
        let out =
            fleet(&ec2, &lt, overrides(&c, &[("m5.large", "us-west-2a")]), DefaultTargetCapacityType::OnDemand, 1)
                .await;
        let id = out.instances()[0].instance_ids()[0].clone();
        for expected_previous in ["pending", "shutting-down"] {
            let t = ec2.terminate_instances().instance_ids(&id).send().await.expect("terminate");
            let change = &t.terminating_instances()[0];
            assert_eq!(change.previous_state().and_then(|s| s.name()).map(|n| n.as_str()), Some(expected_previous));
            assert_eq!(change.current_state().and_then(|s| s.name()).map(|n| n.as_str()), Some("shutting-down"));
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
        let d = ec2.describe_instances().instance_ids(&id).send().await.expect("still visible");
        let state = d.reservations()[0].instances()[0].state().and_then(|s| s.name()).map(|n| n.as_str().to_string());
        assert_eq!(state.as_deref(), Some("terminated"));
        Ok(())
    });
}

#[test]
fn describe_calls_return_the_fields_karpenter_reads() {
    let (mut sim, cloud) = world(6, FakeCloud::new(config(6), small_catalog()), Duration::from_secs(300));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let types = ec2
            .describe_instance_types()
            .instance_types(aws_sdk_ec2::types::InstanceType::M5Large)
            .send()
            .await
            .expect("types");
        let m5 = &types.instance_types()[0];
        assert_eq!(m5.v_cpu_info().and_then(|v| v.default_v_cpus()), Some(2));
        assert_eq!(m5.memory_info().and_then(|m| m.size_in_mib()), Some(8192));
        let net = m5.network_info().expect("network info");
        assert_eq!(net.ipv4_addresses_per_interface(), Some(10));
        assert_eq!(net.network_cards()[0].maximum_network_interfaces(), Some(3));
        assert_eq!(m5.hypervisor().map(|h| h.as_str()), Some("nitro"));
        assert!(m5.supported_usage_classes().iter().any(|u| u.as_str() == "spot"));

        let offerings = ec2
            .describe_instance_type_offerings()
            .location_type(aws_sdk_ec2::types::LocationType::AvailabilityZone)
            .send()
            .await
            .expect("offerings");
        assert!(offerings.instance_type_offerings().iter().any(|o| o.location() == Some("us-west-2b")));

        let zones = ec2.describe_availability_zones().send().await.expect("zones");
        let ids: Vec<_> = zones
            .availability_zones()
            .iter()
            .map(|z| (z.zone_name().unwrap_or_default(), z.zone_id().unwrap_or_default()))
            .collect();
        assert_eq!(ids, vec![("us-west-2a", "usw2-az1"), ("us-west-2b", "usw2-az2")]);

        let subnets = ec2
            .describe_subnets()
            .filters(
                aws_sdk_ec2::types::Filter::builder().name("tag:karpenter.sh/discovery").values("dovetail").build(),
            )
            .send()
            .await
            .expect("subnets");
        assert_eq!(subnets.subnets().len(), 2);
        assert_eq!(subnets.subnets()[0].available_ip_address_count(), Some(4091));
        let sgs = ec2
            .describe_security_groups()
            .filters(
                aws_sdk_ec2::types::Filter::builder().name("tag:karpenter.sh/discovery").values("dovetail").build(),
            )
            .send()
            .await
            .expect("security groups");
        assert_eq!(sgs.security_groups().len(), 1);

        let spot = ec2
            .describe_spot_price_history()
            .product_descriptions("Linux/UNIX")
            .start_time(aws_sdk_ec2::primitives::DateTime::from_secs(1_767_225_600))
            .send()
            .await
            .expect("spot prices");
        assert_eq!(spot.spot_price_history().len(), 6, "3 types x 2 zones, one current price each");

        // Paginated, filtered DescribeInstances.
        let lt = launch_template(&ec2, &c).await;
        fleet(&ec2, &lt, overrides(&c, &[("m5.large", "us-west-2a")]), DefaultTargetCapacityType::OnDemand, 7).await;
        let mut seen = 0;
        let mut token = None;
        for _ in 0..10 {
            let page = ec2
                .describe_instances()
                .filters(
                    aws_sdk_ec2::types::Filter::builder()
                        .name("instance-state-name")
                        .values("pending")
                        .values("running")
                        .build(),
                )
                .max_results(5)
                .set_next_token(token)
                .send()
                .await
                .expect("page");
            seen += page.reservations().iter().map(|r| r.instances().len()).sum::<usize>();
            token = page.next_token().map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        assert_eq!(seen, 7);

        let dup = ec2
            .create_launch_template()
            .launch_template_name(&lt)
            .launch_template_data(aws_sdk_ec2::types::RequestLaunchTemplateData::builder().build())
            .send()
            .await
            .expect_err("name taken");
        assert_eq!(dup.code(), Some("InvalidLaunchTemplateName.AlreadyExistsException"));
        let lts = ec2.describe_launch_templates().launch_template_names(&lt).send().await.expect("describe lt");
        assert_eq!(lts.launch_templates()[0].launch_template_name(), Some(lt.as_str()));
        ec2.delete_launch_template().launch_template_name(&lt).send().await.expect("delete lt");
        let gone = ec2.describe_launch_templates().launch_template_names(&lt).send().await.expect_err("deleted");
        assert_eq!(gone.code(), Some("InvalidLaunchTemplateName.NotFoundException"));
        let images = ec2.describe_images().owners("amazon").send().await.expect("images");
        assert!(
            images.images().iter().any(|i| i.name().is_some_and(|n| n.starts_with("amazon-eks-node-al2023-arm64")))
        );
        Ok(())
    });
}

#[test]
fn billing_sums_match_hand_computed_costs() {
    let mut fake = FakeCloud::new(config(7), small_catalog());
    fake.pin_spot_price("c5.large", "us-west-2b", Duration::ZERO, 0.03);
    let (mut sim, cloud) = world(7, fake, Duration::from_secs(3000));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let lt = launch_template(&ec2, &c).await;
        let od = fleet(&ec2, &lt, overrides(&c, &[("m5.large", "us-west-2a")]), DefaultTargetCapacityType::OnDemand, 1)
            .await;
        let spot =
            fleet(&ec2, &lt, overrides(&c, &[("c5.large", "us-west-2b")]), DefaultTargetCapacityType::Spot, 1).await;
        let od_id = od.instances()[0].instance_ids()[0].clone();
        let spot_id = spot.instances()[0].instance_ids()[0].clone();
        let mut tags = ec2.create_tags().resources(&od_id).resources(&spot_id);
        tags = tags.tags(aws_sdk_ec2::types::Tag::builder().key("karpenter.sh/nodepool").value("general").build());
        tags.send().await.expect("tagged");
        tokio::time::sleep(Duration::from_secs(1800)).await;
        ec2.terminate_instances().instance_ids(&od_id).instance_ids(&spot_id).send().await.expect("terminated");
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(())
    });
    let cloud = lock(&cloud);
    let mut expected = 0.0;
    for i in cloud.instances() {
        let secs = (i.billing_end.expect("billing stopped") - i.running_at.expect("ran")).as_secs_f64();
        assert!(secs > 1700.0 && secs < 1800.0, "{secs}");
        expected += match i.instance_type.as_str() {
            "m5.large" => 0.096 * secs / 3600.0,
            "c5.large" => 0.03 * secs / 3600.0,
            other => panic!("unexpected {other}"),
        };
    }
    let report = cloud.cost_report();
    assert!((report.total_usd - expected).abs() < 1e-9, "{} vs {expected}", report.total_usd);
    assert!((report.total_by_nodepool["general"] - expected).abs() < 1e-9);
    assert_eq!(report.total_by_capacity_type.len(), 2);
    assert_eq!(report.rate_usd_per_hour, 0.0, "nothing is running any more");
}

#[test]
fn the_full_catalog_pages_through_the_sdk_paginators() {
    let catalog = dovetail_fakecloud::Catalog::load(REGION).expect("catalog");
    let (types, offerings) = (catalog.types().count(), catalog.offerings().count());
    let (mut sim, _cloud) = world(8, FakeCloud::new(config(8), catalog), Duration::from_secs(300));
    run_controller(&mut sim, move |ec2, _| async move {
        // Karpenter: DescribeInstanceTypes with page size 100, offerings with 1000.
        let mut pages = ec2
            .describe_instance_types()
            .filters(aws_sdk_ec2::types::Filter::builder().name("supported-virtualization-type").values("hvm").build())
            .max_results(100)
            .into_paginator()
            .send();
        let mut seen = 0;
        while let Some(page) = pages.next().await {
            seen += page.expect("page").instance_types().len();
        }
        assert_eq!(seen, types);
        let mut pages = ec2
            .describe_instance_type_offerings()
            .location_type(aws_sdk_ec2::types::LocationType::AvailabilityZone)
            .max_results(1000)
            .into_paginator()
            .send();
        let mut seen = 0;
        while let Some(page) = pages.next().await {
            seen += page.expect("page").instance_type_offerings().len();
        }
        assert_eq!(seen, offerings);
        let mut pages = ec2
            .describe_spot_price_history()
            .product_descriptions("Linux/UNIX")
            .product_descriptions("Linux/UNIX (Amazon VPC)")
            .max_results(1000)
            .into_paginator()
            .send();
        let mut prices = 0;
        while let Some(page) = pages.next().await {
            let page = page.expect("page");
            prices += page.spot_price_history().len();
            assert!(page.spot_price_history().iter().all(|p| p.spot_price().is_some_and(|s| s.parse::<f64>().is_ok())));
        }
        assert!(prices > offerings / 2, "most offerings have a spot price: {prices}");
        Ok(())
    });
}

#[test]
fn dry_run_answers_dry_run_operation_and_launches_nothing() {
    let (mut sim, cloud) = world(9, FakeCloud::new(config(9), small_catalog()), Duration::from_secs(60));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let ami = lock(&c).images().images.keys().next().expect("ami").clone();
        let err = ec2
            .run_instances()
            .dry_run(true)
            .image_id(ami)
            .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
            .min_count(1)
            .max_count(1)
            .send()
            .await
            .expect_err("dry run");
        assert_eq!(err.code(), Some("DryRunOperation"));
        Ok(())
    });
    assert_eq!(lock(&cloud).instances().count(), 0);
}

#[test]
fn instance_status_reports_impairment_and_scheduled_maintenance() {
    let (mut sim, cloud) = world(10, FakeCloud::new(config(10), small_catalog()), Duration::from_secs(300));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let lt = launch_template(&ec2, &c).await;
        let out =
            fleet(&ec2, &lt, overrides(&c, &[("m5.large", "us-west-2a")]), DefaultTargetCapacityType::OnDemand, 2)
                .await;
        let ids = out.instances()[0].instance_ids().to_vec();
        tokio::time::sleep(Duration::from_secs(30)).await;
        {
            let mut cloud = lock(&c);
            let t = cloud.now();
            cloud.set_instance_impaired(&ids[0], true).expect("known");
            cloud.schedule_maintenance(&ids[1], t, t + Duration::from_secs(86_400));
        }
        let status = ec2.describe_instance_status().send().await.expect("status");
        let mut rows: Vec<(String, String, usize)> = status
            .instance_statuses()
            .iter()
            .map(|s| {
                (
                    s.instance_id().unwrap_or_default().to_string(),
                    s.instance_status().and_then(|x| x.status()).map(|x| x.as_str().to_string()).unwrap_or_default(),
                    s.events().len(),
                )
            })
            .collect();
        rows.sort();
        let mut expected = vec![(ids[0].clone(), "impaired".to_string(), 0), (ids[1].clone(), "ok".to_string(), 1)];
        expected.sort();
        assert_eq!(rows, expected);
        Ok(())
    });
}

/// DescribeInstanceStatus over the query wire, as Karpenter's instance status provider calls
/// it: each check reported on its own (`impairedSince` on the failed one only), the three
/// filter sets (`instance-status.status`, `system-status.status`, `event.code`) each select
/// their instances, and a filter name EC2 does not know is refused by name.
#[test]
fn instance_status_checks_are_reported_and_filtered_per_check() {
    use aws_sdk_ec2::types::{Filter, StatusType, SummaryStatus};
    use dovetail_fakecloud::StatusCheck;
    let (mut sim, cloud) = world(11, FakeCloud::new(config(11), small_catalog()), Duration::from_secs(300));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let lt = launch_template(&ec2, &c).await;
        let out =
            fleet(&ec2, &lt, overrides(&c, &[("m5.large", "us-west-2a")]), DefaultTargetCapacityType::OnDemand, 3)
                .await;
        let mut ids = out.instances()[0].instance_ids().to_vec();
        ids.sort();
        tokio::time::sleep(Duration::from_secs(30)).await;
        {
            let mut cloud = lock(&c);
            cloud.set_status_check(&ids[0], StatusCheck::System, true).expect("known");
            cloud.set_status_check(&ids[1], StatusCheck::AttachedEbs, true).expect("known");
            let end = cloud.now() + Duration::from_secs(86_400);
            cloud.add_scheduled_event(&ids[2], "instance-retirement", end).expect("known");
            assert!(cloud.add_scheduled_event(&ids[2], "retire", end).is_err(), "unknown event code");
        }
        let all = ec2.describe_instance_status().send().await.expect("status");
        let first = all.instance_statuses().iter().find(|s| s.instance_id() == Some(ids[0].as_str())).expect("listed");
        let system = first.system_status().expect("system status");
        assert_eq!(system.status(), Some(&SummaryStatus::Impaired));
        assert_eq!(system.details()[0].status(), Some(&StatusType::Failed));
        assert!(system.details()[0].impaired_since().is_some());
        let instance = first.instance_status().expect("instance status");
        assert_eq!(instance.status(), Some(&SummaryStatus::Ok));
        assert!(instance.details()[0].impaired_since().is_none());
        let second = all.instance_statuses().iter().find(|s| s.instance_id() == Some(ids[1].as_str())).expect("listed");
        assert_eq!(second.attached_ebs_status().and_then(|s| s.status()), Some(&SummaryStatus::Impaired));

        let selected = |name: &'static str, values: &'static [&'static str]| {
            let ec2 = ec2.clone();
            async move {
                let filter = Filter::builder()
                    .name(name)
                    .set_values(Some(values.iter().map(|v| v.to_string()).collect()))
                    .build();
                let out = ec2.describe_instance_status().filters(filter).send().await.expect("filtered");
                out.instance_statuses().iter().filter_map(|s| s.instance_id().map(str::to_owned)).collect::<Vec<_>>()
            }
        };
        assert_eq!(selected("system-status.status", &["impaired"]).await, [ids[0].clone()]);
        assert!(selected("instance-status.status", &["impaired"]).await.is_empty());
        assert_eq!(selected("attached-ebs-status.status", &["impaired"]).await, [ids[1].clone()]);
        assert_eq!(selected("event.code", &["instance-reboot", "instance-retirement"]).await, [ids[2].clone()]);

        let err = ec2
            .describe_instance_status()
            .filters(Filter::builder().name("system-status.health").values("impaired").build())
            .send()
            .await
            .expect_err("unknown filter");
        assert_eq!(err.code(), Some("InvalidParameterValue"));
        assert_eq!(err.message(), Some("The filter 'system-status.health' is invalid"));
        Ok(())
    });
}
