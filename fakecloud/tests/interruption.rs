//! Spot interruptions and the SQS interruption queue through real SDK clients.

mod common;

use std::time::Duration;

use aws_sdk_ec2::types::InstanceType;
use common::*;
use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::{FakeCloud, InstanceState, SpotStorm};
use serde_json::Value;

async fn receive_all(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<(Duration, Value)> {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(20)
        .visibility_timeout(20)
        .send()
        .await
        .expect("receive");
    let mut got = Vec::new();
    for m in out.messages() {
        let body: Value = serde_json::from_str(m.body().unwrap_or_default()).expect("json body");
        got.push((now(), body));
        sqs.delete_message()
            .queue_url(url)
            .receipt_handle(m.receipt_handle().unwrap_or_default())
            .send()
            .await
            .expect("delete");
    }
    got
}

#[test]
fn a_spot_interruption_warns_through_sqs_and_reclaims_at_plus_120_seconds() {
    let mut fake = FakeCloud::new(config(11), small_catalog());
    fake.create_interruption_queue("karpenter-interruptions");
    let (mut sim, cloud) = world(11, fake, Duration::from_secs(600));
    let c = cloud.clone();
    run_controller(&mut sim, move |ec2, sqs| async move {
        let url = sqs
            .get_queue_url()
            .queue_name("karpenter-interruptions")
            .send()
            .await
            .expect("queue url")
            .queue_url()
            .expect("url")
            .to_string();
        assert_eq!(url, "http://aws:80/123456789012/karpenter-interruptions");
        let ami = lock(&c)
            .images()
            .parameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
            .expect("ami")
            .to_string();
        let run = ec2
            .run_instances()
            .image_id(ami)
            .instance_type(InstanceType::M5Large)
            .min_count(1)
            .max_count(1)
            .instance_market_options(
                aws_sdk_ec2::types::InstanceMarketOptionsRequest::builder()
                    .market_type(aws_sdk_ec2::types::MarketType::Spot)
                    .build(),
            )
            .send()
            .await
            .expect("spot launch");
        let id = run.instances()[0].instance_id().expect("id").to_string();
        assert_eq!(run.instances()[0].instance_lifecycle().map(|l| l.as_str()), Some("spot"));

        let warn_at = now() + Duration::from_secs(60);
        lock(&c).schedule_spot_interruption(&id, warn_at, true);

        let mut kinds = Vec::new();
        let mut warning_seen_at = None;
        // Bounded: each long poll lasts at most 20 s.
        for _ in 0..20 {
            for (at, body) in receive_all(&sqs, &url).await {
                assert_eq!(body["detail"]["instance-id"], id.as_str());
                let kind = body["detail-type"].as_str().unwrap_or_default().to_string();
                if kind == "EC2 Spot Instance Interruption Warning" {
                    warning_seen_at = Some(at);
                    assert_eq!(body["source"], "aws.ec2");
                    assert_eq!(body["detail"]["instance-action"], "terminate");
                }
                let state = body["detail"]["state"].as_str().map(str::to_string);
                kinds.push((kind, state));
            }
            if kinds.iter().any(|(_, s)| s.as_deref() == Some("terminated")) {
                break;
            }
        }
        let seen = warning_seen_at.expect("warning delivered");
        assert!(seen >= warn_at && seen < warn_at + Duration::from_secs(1), "long poll returns promptly: {seen:?}");
        let order: Vec<&str> = kinds.iter().map(|(k, _)| k.as_str()).collect();
        let rebalance = order.iter().position(|k| *k == "EC2 Instance Rebalance Recommendation").expect("rebalance");
        let warning = order.iter().position(|k| *k == "EC2 Spot Instance Interruption Warning").expect("warning");
        assert!(rebalance < warning);
        let states: Vec<&str> = kinds.iter().filter_map(|(_, s)| s.as_deref()).collect();
        assert_eq!(states, vec!["pending", "running", "shutting-down", "terminated"]);
        Ok(())
    });
    let cloud = lock(&cloud);
    let instance = cloud.instances().next().expect("instance still listed");
    assert_eq!(instance.state, InstanceState::Terminated);
    let reclaim = instance.reclaim_at.expect("warned");
    assert_eq!(instance.billing_end, Some(reclaim), "reclaimed exactly at warning + 120 s");
    assert_eq!(instance.state_reason.as_ref().map(|r| r.0.as_str()), Some("Server.SpotInstanceTermination"));
}

#[test]
fn a_spot_storm_interrupts_the_requested_share_of_a_zone() {
    let mut fake = FakeCloud::new(config(12), small_catalog());
    fake.create_interruption_queue("q");
    let (mut sim, cloud) = world(12, fake, Duration::from_secs(600));
    let c = cloud.clone();
    let end = run_controller(&mut sim, move |ec2, _sqs| async move {
        let ami = lock(&c).images().images.values().find(|i| i.architecture == "x86_64").expect("ami").id.clone();
        for zone in ["us-west-2a", "us-west-2b"] {
            ec2.run_instances()
                .image_id(&ami)
                .instance_type(InstanceType::C5Large)
                .min_count(10)
                .max_count(10)
                .placement(aws_sdk_ec2::types::Placement::builder().availability_zone(zone).build())
                .instance_market_options(
                    aws_sdk_ec2::types::InstanceMarketOptionsRequest::builder()
                        .market_type(aws_sdk_ec2::types::MarketType::Spot)
                        .build(),
                )
                .send()
                .await
                .expect("launch");
        }
        let at = now() + Duration::from_secs(30);
        lock(&c).schedule_spot_storm(
            at,
            SpotStorm { zone: Some("us-west-2a".into()), instance_types: vec![], fraction: 0.5 },
        );
        tokio::time::sleep(Duration::from_secs(300)).await;
        Ok(())
    });
    let mut cloud = lock(&cloud);
    cloud.advance_to(end);
    let reclaimed: Vec<_> = cloud.instances().filter(|i| i.reclaim_at.is_some()).collect();
    assert_eq!(reclaimed.len(), 5);
    assert!(reclaimed.iter().all(|i| i.zone == "us-west-2a" && i.state == InstanceState::Terminated));
    let warnings =
        cloud.sqs().queues["q"].messages.values().filter(|m| m.body.contains("Interruption Warning")).count();
    assert_eq!(warnings, 5);
}

#[test]
fn sqs_send_receive_delete_round_trip_with_duplicate_fault() {
    let fake = FakeCloud::new(config(13), small_catalog());
    let (mut sim, cloud) = world(13, fake, Duration::from_secs(120));
    lock(&cloud).set_faults(dovetail_fakecloud::Faults { sqs_duplicate_rate: 1.0, ..Default::default() });
    run_controller(&mut sim, move |_ec2, sqs| async move {
        let url =
            sqs.create_queue().queue_name("plain").send().await.expect("create").queue_url().expect("url").to_string();
        let sent = sqs.send_message().queue_url(&url).message_body("hello").send().await.expect("send");
        assert_eq!(sent.md5_of_message_body(), Some("5d41402abc4b2a76b9719d911017c592"));
        tokio::time::sleep(Duration::from_secs(6)).await;
        let got = sqs.receive_message().queue_url(&url).max_number_of_messages(10).send().await.expect("receive");
        assert_eq!(got.messages().len(), 2, "duplicated delivery");
        assert!(got.messages().iter().all(|m| m.message_id() == sent.message_id()));
        for m in got.messages() {
            sqs.delete_message()
                .queue_url(&url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .send()
                .await
                .expect("delete");
        }
        let err = sqs.get_queue_url().queue_name("missing").send().await.expect_err("no such queue");
        assert!(err.into_service_error().is_queue_does_not_exist());
        Ok(())
    });
    assert!(lock(&cloud).sqs().queues["plain"].is_empty());
}
