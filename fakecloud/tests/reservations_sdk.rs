//! Capacity reservations through a real `aws_sdk_ec2::Client`: DescribeCapacityReservations
//! with the filters Karpenter sends, a fleet launching into a targeted reservation until it is
//! full, the slot coming back on terminate, and the reservation's bill.

mod common;

use std::time::Duration;

use aws_sdk_ec2::types::{
    CapacityReservationTarget, DefaultTargetCapacityType, Filter, FleetLaunchTemplateConfigRequest,
    FleetLaunchTemplateOverridesRequest, FleetLaunchTemplateSpecificationRequest, FleetType,
    LaunchTemplateCapacityReservationSpecificationRequest, RequestLaunchTemplateData,
    TargetCapacitySpecificationRequest,
};
use common::*;
use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::{FakeCloud, MatchCriteria, ReservationSpec, ReservationType};

const CR: &str = "cr-0123456789abcdef0";

fn reserved_cloud() -> FakeCloud {
    let mut config = config(3);
    config.capacity_reservations = vec![ReservationSpec {
        id: Some(CR.into()),
        instance_type: "m5.large".into(),
        zone: "us-west-2a".into(),
        count: 2,
        match_criteria: MatchCriteria::Targeted,
        owner_id: None,
        end: None,
        reservation_type: ReservationType::Default,
        tags: [("team".to_string(), "ml".to_string())].into(),
    }];
    FakeCloud::new(config, small_catalog())
}

async fn targeted_template(ec2: &aws_sdk_ec2::Client, cloud: &dovetail_fakecloud::SharedCloud) -> String {
    let ami = lock(cloud)
        .images()
        .parameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
        .expect("AMI parameter")
        .to_string();
    let data = RequestLaunchTemplateData::builder()
        .image_id(ami)
        .capacity_reservation_specification(
            LaunchTemplateCapacityReservationSpecificationRequest::builder()
                .capacity_reservation_preference(
                    aws_sdk_ec2::types::CapacityReservationPreference::CapacityReservationsOnly,
                )
                .capacity_reservation_target(CapacityReservationTarget::builder().capacity_reservation_id(CR).build())
                .build(),
        )
        .build();
    ec2.create_launch_template()
        .launch_template_name("karpenter.k8s.aws/cr")
        .launch_template_data(data)
        .send()
        .await
        .expect("created");
    "karpenter.k8s.aws/cr".into()
}

async fn one_reserved(
    ec2: &aws_sdk_ec2::Client,
    template: &str,
    subnet: &str,
) -> aws_sdk_ec2::operation::create_fleet::CreateFleetOutput {
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
                    FleetLaunchTemplateSpecificationRequest::builder()
                        .launch_template_name(template)
                        .version("$Latest")
                        .build(),
                )
                .overrides(
                    FleetLaunchTemplateOverridesRequest::builder()
                        .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
                        .subnet_id(subnet)
                        .availability_zone("us-west-2a")
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("create_fleet answers")
}

#[test]
fn describe_capacity_reservations_as_karpenter_queries_it() {
    let (mut sim, _cloud) = world(3, reserved_cloud(), Duration::from_secs(60));
    run_controller(&mut sim, move |ec2, _| async move {
        let state = Filter::builder().name("state").values("active").build();
        let by_tag = ec2
            .describe_capacity_reservations()
            .filters(state.clone())
            .filters(Filter::builder().name("tag:team").values("ml").build())
            .max_results(1000)
            .send()
            .await
            .expect("describe");
        let found = by_tag.capacity_reservations();
        assert_eq!(found.len(), 1);
        let r = &found[0];
        assert_eq!(r.capacity_reservation_id(), Some(CR));
        assert_eq!(r.instance_type(), Some("m5.large"));
        assert_eq!(r.availability_zone(), Some("us-west-2a"));
        assert_eq!(r.available_instance_count(), Some(2));
        assert_eq!(r.total_instance_count(), Some(2));
        assert_eq!(r.owner_id(), Some("123456789012"));
        assert_eq!(r.instance_match_criteria().map(|m| m.as_str()), Some("targeted"));
        assert_eq!(r.reservation_type().map(|t| t.as_str()), Some("default"));
        assert!(r.end_date().is_none());
        let by_id = ec2
            .describe_capacity_reservations()
            .capacity_reservation_ids(CR)
            .filters(state)
            .send()
            .await
            .expect("by id");
        assert_eq!(by_id.capacity_reservations().len(), 1);
        let missing =
            ec2.describe_capacity_reservations().capacity_reservation_ids("cr-0000000000000000f").send().await;
        let err = missing.expect_err("unknown id");
        use aws_sdk_ec2::error::ProvideErrorMetadata;
        assert_eq!(err.code(), Some("InvalidCapacityReservationId.NotFound"));
        Ok(())
    });
}

#[test]
fn a_fleet_fills_the_reservation_then_is_refused_until_a_slot_returns() {
    let (mut sim, cloud) = world(3, reserved_cloud(), Duration::from_secs(600));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, _| async move {
        let lt = targeted_template(&ec2, &c).await;
        let subnet = subnet(&c, "us-west-2a");
        let first = one_reserved(&ec2, &lt, &subnet).await;
        let second = one_reserved(&ec2, &lt, &subnet).await;
        assert_eq!(first.instances().len() + second.instances().len(), 2);
        let third = one_reserved(&ec2, &lt, &subnet).await;
        assert!(third.instances().is_empty());
        assert_eq!(third.errors()[0].error_code(), Some("ReservationCapacityExceeded"));
        let id = first.instances()[0].instance_ids()[0].clone();
        let described = ec2.describe_instances().instance_ids(&id).send().await.expect("describe");
        let instance = &described.reservations()[0].instances()[0];
        assert_eq!(instance.capacity_reservation_id(), Some(CR));
        ec2.terminate_instances().instance_ids(&id).send().await.expect("terminate");
        let fourth = one_reserved(&ec2, &lt, &subnet).await;
        assert_eq!(fourth.instances().len(), 1, "the terminated instance's slot came back");
        tokio::time::sleep(Duration::from_secs(120)).await;
        Ok(())
    });
    let cloud = lock(&cloud);
    let r = cloud.capacity_reservations().next().expect("seeded");
    assert_eq!(r.available, 0);
    assert_eq!(r.instances.len(), 2);
    let report = cloud.cost_report();
    // The reservation bills 2 × m5.large for the whole run; its instances add nothing.
    let hours = cloud.now().as_secs_f64() / 3600.0;
    assert!((report.total_usd - 2.0 * 0.096 * hours).abs() < 1e-9, "{report:?}");
}
