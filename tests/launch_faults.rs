//! The production controller against the fake cloud's failure modes: an ICE'd cheapest
//! offering is avoided for three minutes and then tried again, a NodePool limit caps launches,
//! and an instance nobody claims is garbage-collected.

use std::time::Duration;

use dovetail_fakecloud::cloud::{SharedCloud, lock};
use dovetail_fakecloud::{CapacityType, PoolKey};
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

/// A bare pod requesting `cpu` (one per 2-vCPU node when 1500m).
fn pod(name: &str, cpu: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    })
}

async fn wait_running(client: &kube::Client, name: &str, limit: Duration) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut waited = Duration::ZERO;
    loop {
        let pod = pods.get(name).await?;
        if pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") {
            return Ok(());
        }
        anyhow::ensure!(waited < limit, "pod {name} not running after {waited:?}");
        tokio::time::sleep(Duration::from_secs(5)).await;
        waited += Duration::from_secs(5);
    }
}

/// The cheapest on-demand amd64 c/m/r (generation > 2) type with 2 vCPUs, read from the fake
/// cloud's own catalog (not the controller's pricing), so the test knows what a correct
/// controller launches first.
fn cheapest_two_vcpu(cloud: &SharedCloud) -> String {
    let cloud = lock(cloud);
    cloud
        .catalog()
        .types()
        .filter(|t| t.vcpu == 2 && t.arch == "amd64" && t.gpu_count == 0 && !t.bare_metal)
        .filter(|t| {
            let category: String = t.family.chars().take_while(char::is_ascii_alphabetic).collect();
            let generation: u32 = t
                .family
                .chars()
                .skip_while(char::is_ascii_alphabetic)
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0);
            ["c", "m", "r"].contains(&category.as_str()) && generation > 2
        })
        .filter(|t| t.on_demand_price.is_some())
        .min_by(|a, b| {
            a.on_demand_price.partial_cmp(&b.on_demand_price).expect("prices").then_with(|| a.name.cmp(&b.name))
        })
        .map(|t| t.name.clone())
        .expect("a cheapest type")
}

fn set_capacity(cloud: &SharedCloud, instance_type: &str, free: u32) {
    let mut cloud = lock(cloud);
    let zones: Vec<String> = cloud.catalog().zones().iter().map(|z| z.name.clone()).collect();
    for zone in zones {
        if cloud.catalog().is_offered(instance_type, &zone) {
            cloud.set_pool(&PoolKey::new(instance_type, &zone, CapacityType::OnDemand), free, free.max(1), None);
        }
    }
}

/// Instance types in launch order.
fn launched_types(cloud: &SharedCloud) -> Vec<String> {
    let cloud = lock(cloud);
    let mut instances: Vec<_> =
        cloud.instances().map(|i| (i.launch_time, i.id.clone(), i.instance_type.clone())).collect();
    instances.sort();
    instances.into_iter().map(|(_, _, t)| t).collect()
}

#[test]
fn an_iced_offering_is_skipped_for_three_minutes_then_retried() {
    let (mut sim, _server, cloud) = karpenter_world(11);
    let cheapest = cheapest_two_vcpu(&cloud);
    set_capacity(&cloud, &cheapest, 0);
    let shared = cloud.clone();
    let iced = cheapest.clone();
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["on-demand"], None)).await?;
        install(&client, &[pod("first", "1500m")]).await?;
        wait_running(&client, "first", Duration::from_secs(600)).await?;
        let first_at = tokio::time::Instant::now();
        // Capacity is back, but the controller has cached the ICE for three minutes.
        set_capacity(&shared, &iced, 100);
        install(&client, &[pod("second", "1500m")]).await?;
        wait_running(&client, "second", Duration::from_secs(600)).await?;
        anyhow::ensure!(first_at.elapsed() < Duration::from_secs(150), "second pod took too long to test the cache");
        tokio::time::sleep(Duration::from_secs(200)).await;
        install(&client, &[pod("third", "1500m")]).await?;
        wait_running(&client, "third", Duration::from_secs(600)).await?;
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
    let types = launched_types(&cloud);
    assert_eq!(types.len(), 3, "one node per pod: {types:?}");
    assert_ne!(types[0], cheapest, "the ICE'd type cannot launch");
    assert_ne!(types[1], cheapest, "the ICE'd type is skipped while cached: {types:?}");
    assert_eq!(types[2], cheapest, "after three minutes the cheapest type is tried again: {types:?}");
}

#[test]
fn a_nodepool_cpu_limit_caps_launches() {
    let (mut sim, _server, cloud) = karpenter_world(12);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["on-demand"], Some(json!({"cpu": "8"})))).await?;
        let pods: Vec<_> = (0..20).map(|i| pod(&format!("p{i}"), "1500m")).collect();
        install(&client, &pods).await?;
        tokio::time::sleep(Duration::from_secs(300)).await;
        let list = Api::<Pod>::namespaced(client.clone(), "default").list(&ListParams::default()).await?;
        let pending =
            list.items.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending")).count();
        anyhow::ensure!(pending > 0, "a cpu limit of 8 cannot run twenty 1.5-CPU pods");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
    let cloud = lock(&cloud);
    let mut vcpus: Vec<u32> = cloud
        .instances()
        .filter(|i| i.state.is_live())
        .map(|i| cloud.catalog().get(&i.instance_type).map_or(0, |t| t.vcpu))
        .collect();
    vcpus.sort_unstable();
    let total: u32 = vcpus.iter().sum();
    let largest = vcpus.last().copied().unwrap_or(0);
    assert!(!vcpus.is_empty(), "something launched");
    // Karpenter's limit is pessimistic: it never launches once usage reaches the limit, so at
    // most the last launch can cross it.
    assert!(total - largest < 8, "launched {vcpus:?} vCPUs against a limit of 8");
}

#[test]
fn a_leaked_instance_is_terminated() {
    let (mut sim, _server, cloud) = karpenter_world(13);
    let shared = cloud.clone();
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["on-demand"], None)).await?;
        // Someone (a crashed controller mid-launch) left a tagged instance with no NodeClaim.
        let ec2 = dovetail_fakecloud::sdk::ec2_client(&dovetail_fakecloud::sdk::SdkOptions::ec2(
            dovetail_sim::controller_host::AWS_ENDPOINT,
            "us-east-1",
        ));
        let image = {
            let cloud = lock(&shared);
            cloud.images().images.keys().next().cloned().expect("an image")
        };
        let tags = aws_sdk_ec2::types::TagSpecification::builder()
            .resource_type(aws_sdk_ec2::types::ResourceType::Instance)
            .tags(aws_sdk_ec2::types::Tag::builder().key("karpenter.sh/nodepool").value("general-purpose").build())
            .tags(aws_sdk_ec2::types::Tag::builder().key("karpenter.k8s.aws/ec2nodeclass").value("default").build())
            .tags(aws_sdk_ec2::types::Tag::builder().key("eks:eks-cluster-name").value("dovetail").build())
            .build();
        let output = ec2
            .run_instances()
            .image_id(image)
            .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
            .min_count(1)
            .max_count(1)
            .tag_specifications(tags)
            .send()
            .await?;
        let id = output.instances()[0].instance_id().unwrap_or_default().to_owned();
        let mut waited = Duration::ZERO;
        loop {
            let state = lock(&shared).instance(&id).map(|i| i.state.name().to_owned()).unwrap_or_default();
            if state == "shutting-down" || state == "terminated" {
                break;
            }
            anyhow::ensure!(waited < Duration::from_secs(300), "leaked instance {id} still {state} after {waited:?}");
            tokio::time::sleep(Duration::from_secs(5)).await;
            waited += Duration::from_secs(5);
        }
        anyhow::ensure!(waited >= Duration::from_secs(30), "GC must leave instances younger than 30 s alone");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}

/// Pods of `app` that are Running, Ready and not terminating, with their node names.
async fn ready_pods(client: &kube::Client, app: &str) -> anyhow::Result<Vec<(String, String)>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = pods.list(&ListParams::default().labels(&format!("app={app}"))).await?;
    Ok(list
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default(),
            )
        })
        .collect())
}

#[test]
fn a_spot_interruption_drains_within_the_pdb_before_the_instance_is_reclaimed() {
    let (mut sim, _server, cloud) = karpenter_world(14);
    let shared = cloud.clone();
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["spot"], None)).await?;
        let web = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}
        });
        let pdb = json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}
        });
        install(&client, &[web, pdb]).await?;
        let mut waited = Duration::ZERO;
        let pods = loop {
            let pods = ready_pods(&client, "web").await?;
            if pods.len() == 4 {
                break pods;
            }
            anyhow::ensure!(waited < Duration::from_secs(600), "only {} web pods ready", pods.len());
            tokio::time::sleep(Duration::from_secs(5)).await;
            waited += Duration::from_secs(5);
        };
        // Interrupt the node running the first pod.
        let node_name = pods[0].1.clone();
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
        let node = nodes.get(&node_name).await?;
        let provider_id = node.spec.and_then(|s| s.provider_id).unwrap_or_default();
        let instance = provider_id.rsplit('/').next().unwrap_or_default().to_owned();
        {
            let mut cloud = lock(&shared);
            let at = cloud.now() + Duration::from_secs(1);
            cloud.schedule_spot_interruption(&instance, at, true);
        }
        let mut min_ready = 4;
        let mut reclaimed_with = None;
        let mut last = (usize::MAX, String::new());
        for second in 0..240 {
            let ready = ready_pods(&client, "web").await?;
            min_ready = min_ready.min(ready.len());
            let on_node = ready.iter().filter(|(_, node)| *node == node_name).count();
            let state_now = lock(&shared).instance(&instance).map(|i| i.state.name().to_owned()).unwrap_or_default();
            if (ready.len(), state_now.clone()) != last {
                eprintln!(
                    "t+{second}s: {} ready ({on_node} on the interrupted node), instance {state_now}",
                    ready.len()
                );
                last = (ready.len(), state_now);
            }
            let state = lock(&shared).instance(&instance).map(|i| i.state.name().to_owned()).unwrap_or_default();
            if reclaimed_with.is_none() && (state == "shutting-down" || state == "terminated") {
                reclaimed_with = Some(ready.iter().filter(|(_, node)| *node != node_name).count());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        anyhow::ensure!(min_ready >= 3, "the PDB allows one unavailable pod, but only {min_ready} were ready");
        let elsewhere = reclaimed_with.ok_or_else(|| anyhow::anyhow!("the instance was never reclaimed"))?;
        anyhow::ensure!(elsewhere >= 3, "only {elsewhere} pods ran elsewhere when the instance was reclaimed");
        let claims: Api<dovetail_controller::apis::NodeClaim> = Api::all(client.clone());
        let claims = claims.list(&ListParams::default()).await?;
        anyhow::ensure!(
            claims.items.iter().all(|c| c.status.as_ref().and_then(|s| s.provider_id.as_deref()) != Some(&provider_id)),
            "the interrupted NodeClaim is gone"
        );
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}
