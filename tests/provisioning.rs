//! The production controller in the simulated world: pending pods become nodes on the cheapest
//! allowed offerings, NodePool limits cap launches, capacity errors fall back to other offerings.

use std::time::Duration;

use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

/// A Deployment of `replicas` pods each requesting `cpu` and `memory`.
fn deployment(name: &str, replicas: u32, cpu: &str, memory: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
            }
        }
    })
}

/// Counts pods by phase.
async fn phases(client: &kube::Client) -> anyhow::Result<(usize, usize)> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = pods.list(&ListParams::default()).await?;
    let running =
        list.items.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")).count();
    Ok((running, list.items.len()))
}

#[test]
fn five_hundred_pending_pods_run_on_new_nodes() {
    let (mut sim, _server, cloud) = karpenter_world(7);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["on-demand"], None)).await?;
        install(
            &client,
            &[
                deployment("small", 300, "250m", "512Mi"),
                deployment("medium", 150, "1", "2Gi"),
                deployment("large", 50, "3", "12Gi"),
            ],
        )
        .await?;
        let mut waited = Duration::ZERO;
        loop {
            let (running, total) = phases(&client).await?;
            if total == 500 && running == 500 {
                break;
            }
            anyhow::ensure!(waited < Duration::from_secs(900), "only {running}/{total} pods running after {waited:?}");
            tokio::time::sleep(Duration::from_secs(10)).await;
            waited += Duration::from_secs(10);
        }
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
    let cloud = dovetail_fakecloud::wire::lock(&cloud);
    let running: Vec<_> = cloud.instances().filter(|i| i.state.name() == "running").collect();
    assert!(!running.is_empty());
    // Every instance is on-demand, from the allowed categories and generations.
    for instance in &running {
        let family = instance.instance_type.split('.').next().unwrap_or_default();
        assert!(family.starts_with(['c', 'm', 'r']), "{} is outside the NodePool's categories", instance.instance_type);
    }
}
