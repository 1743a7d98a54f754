//! Interruption in the simulated world: the fake cloud's EventBridge messages reach the
//! production interruption controller over SQS; a spot interruption warning deletes the
//! NodeClaim and ICE-caches the spot offering, a rebalance recommendation only makes events, and
//! a garbage message is deleted and counted; the messages of one receive are handled at once.

mod support_cloud;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dovetail_controller::apis::NodeClaim;
use dovetail_controller::cloudprovider::CloudProvider;
use dovetail_controller::interruption::{Interruption, InterruptionStats, Kind};
use dovetail_controller::runtime::EventRecorder;
use dovetail_controller::state::{Cluster, watchers};
use dovetail_fakecloud::RunInstancesRequest;
use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::sdk::{SdkOptions, sqs_client};
use dovetail_sim::controller_host::{AWS_ENDPOINT, INTERRUPTION_QUEUE, SimClock};
use dovetail_tests::{client, cloud_world, install, karpenter_crds};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use support_cloud::MemoryCloud;

const INSTANCE_TYPE: &str = "m5.large";

/// `count` spot `INSTANCE_TYPE` instances launched directly in the first zone (no AWS
/// provider), and that zone.
fn spot_instances(fake: &dovetail_fakecloud::cloud::SharedCloud, count: u32) -> (Vec<String>, String) {
    let mut cloud = lock(fake);
    let image = cloud
        .images()
        .images
        .values()
        .find(|i| i.architecture == "x86_64")
        .map(|i| i.id.clone())
        .expect("an x86_64 image");
    let zone = cloud.catalog().zones().first().map(|z| z.name.clone()).expect("a zone");
    let out = cloud
        .run_instances(&RunInstancesRequest {
            image_id: Some(image),
            instance_type: Some(INSTANCE_TYPE.into()),
            min_count: count,
            max_count: count,
            availability_zone: Some(zone.clone()),
            spot: true,
            ..RunInstancesRequest::default()
        })
        .expect("spot instances");
    (out.instance_ids, zone)
}

#[test]
fn a_spot_interruption_warning_deletes_the_node_claim_and_ice_caches_the_offering() {
    let (mut sim, _server, fake) = cloud_world(21);
    let queue_path = lock(&fake).create_interruption_queue(INTERRUPTION_QUEUE);
    // A spot instance the fake cloud will interrupt, launched directly (no AWS provider yet).
    let (instances, zone) = spot_instances(&fake, 1);
    let instance_id = instances[0].clone();
    let provider = MemoryCloud::new(Arc::new(SimClock), Duration::from_secs(10));
    let events = EventRecorder::new();
    let stats: Arc<Mutex<Option<Arc<InterruptionStats>>>> = Arc::default();
    {
        let provider = provider.clone();
        let events = events.clone();
        let stats = stats.clone();
        sim.host("controller", move || {
            let provider = provider.clone();
            let events = events.clone();
            let stats = stats.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let client = client();
                let cluster = Arc::new(Cluster::new());
                watchers::spawn_watchers(&client, &cluster, &dovetail_controller::runtime::SharedRng::from_seed(1));
                let sqs = sqs_client(&SdkOptions::sqs(AWS_ENDPOINT, "us-east-1"));
                let controller =
                    Interruption::new(client, cluster, provider, sqs, INTERRUPTION_QUEUE, Arc::new(SimClock), events);
                *stats.lock().expect("stats slot") = Some(controller.stats());
                controller.run().await;
                Ok(())
            }
        });
    }
    let test_fake = fake.clone();
    let test_provider = provider.clone();
    let test_stats = stats.clone();
    let test_zone = zone.clone();
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let claims: Api<NodeClaim> = Api::all(client.clone());
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "spot-claim", "labels": {
                "karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot",
                "topology.kubernetes.io/zone": test_zone, "node.kubernetes.io/instance-type": INSTANCE_TYPE}},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
        }))?;
        claims.create(&PostParams::default(), &claim).await?;
        let status = json!({"status": {"providerID": format!("aws:///{test_zone}/{instance_id}")}});
        claims.patch_status("spot-claim", &Default::default(), &kube::api::Patch::Merge(&status)).await?;
        // Let the controller sync and start polling, then put garbage and the interruption on the queue.
        tokio::time::sleep(Duration::from_secs(30)).await;
        {
            let mut cloud = lock(&test_fake);
            cloud.sqs_send(&queue_path, "this is not an EventBridge event {", Duration::ZERO).expect("send garbage");
            let at = turmoil::sim_elapsed().unwrap_or_default() + Duration::from_secs(5);
            cloud.schedule_spot_interruption(&instance_id, at, true);
        }
        for waited in 0.. {
            if claims.get_opt("spot-claim").await?.is_none() {
                break;
            }
            anyhow::ensure!(waited < 120, "spot-claim still present 2 minutes after the warning");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        anyhow::ensure!(
            test_provider.unavailable_offerings().is_unavailable("spot", INSTANCE_TYPE, &test_zone),
            "the spot offering is ICE-cached"
        );
        anyhow::ensure!(
            !test_provider.unavailable_offerings().is_unavailable("on-demand", INSTANCE_TYPE, &test_zone),
            "only spot is cached"
        );
        // Every message is deleted once handled.
        let stats = test_stats.lock().expect("stats slot").clone().expect("controller started");
        for waited in 0.. {
            let counts = stats.counts();
            let (visible, in_flight) = lock(&test_fake).sqs_counts(&queue_path).expect("queue");
            if counts.deleted >= 3 && visible == 0 && in_flight == 0 {
                break;
            }
            anyhow::ensure!(
                waited < 60,
                "messages left on the queue: {visible} visible, {in_flight} in flight; {counts:?}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");

    let counts = stats.lock().expect("stats slot").clone().expect("controller started").counts();
    assert_eq!(counts.unparseable, 1, "{counts:?}");
    assert_eq!(counts.received_of(Kind::SpotInterrupted), 1, "{counts:?}");
    assert_eq!(counts.received_of(Kind::RebalanceRecommendation), 1, "{counts:?}");
    assert_eq!(counts.node_claims_deleted, 1);
    assert!(counts.deleted >= 3, "garbage, rebalance and spot warning deleted: {counts:?}");
    let events = events.drain();
    let reasons: Vec<&str> = events.iter().map(|e| e.reason.as_str()).collect();
    assert!(reasons.contains(&"SpotRebalanceRecommendation"), "{reasons:?}");
    assert!(reasons.contains(&"SpotInterrupted"), "{reasons:?}");
    assert!(reasons.contains(&"TerminatingOnInterruption"), "{reasons:?}");
}

/// Ten spot warnings arrive in one receive while every API request takes a second there and
/// back. Karpenter handles a receive's messages ten at a time (aws
/// `pkg/controllers/interruption/controller.go`, `workqueue.ParallelizeUntil(ctx, 10, ...)`),
/// so the ten NodeClaims are gone within a few round trips of each other; one by one, the
/// last would go at least nine round trips after the first. Simulated time, not wall time.
#[test]
fn the_messages_of_one_receive_are_handled_in_parallel() {
    const CLAIMS: u32 = 10;
    let (mut sim, _server, fake) = cloud_world(22);
    lock(&fake).create_interruption_queue(INTERRUPTION_QUEUE);
    let (instances, zone) = spot_instances(&fake, CLAIMS);
    let provider = MemoryCloud::new(Arc::new(SimClock), Duration::from_secs(10));
    sim.host("controller", move || {
        let provider = provider.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let client = client();
            let cluster = Arc::new(Cluster::new());
            watchers::spawn_watchers(&client, &cluster, &dovetail_controller::runtime::SharedRng::from_seed(1));
            let sqs = sqs_client(&SdkOptions::sqs(AWS_ENDPOINT, "us-east-1"));
            let events = EventRecorder::new();
            Interruption::new(client, cluster, provider, sqs, INTERRUPTION_QUEUE, Arc::new(SimClock), events)
                .run()
                .await;
            Ok(())
        }
    });
    let test_fake = fake.clone();
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let claims: Api<NodeClaim> = Api::all(client.clone());
        for (n, instance_id) in instances.iter().enumerate() {
            let name = format!("spot-{n}");
            let claim: NodeClaim = serde_json::from_value(json!({
                "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                "metadata": {"name": name, "labels": {
                    "karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot",
                    "topology.kubernetes.io/zone": zone, "node.kubernetes.io/instance-type": INSTANCE_TYPE}},
                "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
            }))?;
            claims.create(&PostParams::default(), &claim).await?;
            let status = json!({"status": {"providerID": format!("aws:///{zone}/{instance_id}")}});
            claims.patch_status(&name, &Default::default(), &kube::api::Patch::Merge(&status)).await?;
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
        {
            let mut cloud = lock(&test_fake);
            let at = turmoil::sim_elapsed().unwrap_or_default() + Duration::from_secs(5);
            for instance_id in &instances {
                cloud.schedule_spot_interruption(instance_id, at, false);
            }
        }
        let (mut first_gone, mut last_gone) = (None, None);
        for waited in 0.. {
            let left = claims.list(&Default::default()).await?.items.len();
            let now = turmoil::sim_elapsed().unwrap_or_default();
            if left < CLAIMS as usize {
                first_gone.get_or_insert(now);
            }
            if left == 0 {
                last_gone = Some(now);
                break;
            }
            anyhow::ensure!(waited < 1_200, "{left} claims still present 2 minutes after the warnings");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let spread = last_gone.zip(first_gone).map(|(l, f)| l - f).unwrap_or_default();
        // A round trip is 2 s here (1 s each way); nine more in a row would take 18 s.
        anyhow::ensure!(spread <= Duration::from_secs(6), "the ten claims went {spread:?} apart");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.set_link_latency("controller", "apiserver", Duration::from_secs(1));
    sim.run().expect("the simulation");
}
