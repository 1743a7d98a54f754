//! The production controller in the simulated world: pending pods become nodes on the cheapest
//! allowed offerings, NodePool limits cap launches, capacity errors fall back to other offerings.

use std::time::Duration;

use dovetail_sim::invariants::cost_bound::{Supply, lower_bound};
use dovetail_sim::invariants::resources::Resources;
use dovetail_tests::workloads::deployment;
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

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
                eprintln!("all 500 pods running after {waited:?} of simulated time");
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
    let cloud = dovetail_fakecloud::cloud::lock(&cloud);
    let running: Vec<_> = cloud.instances().filter(|i| i.state.name() == "running").collect();
    assert!(!running.is_empty());
    // Every instance is on-demand, from the allowed categories and generations.
    for instance in &running {
        let family = instance.instance_type.split('.').next().unwrap_or_default();
        assert!(family.starts_with(['c', 'm', 'r']), "{} is outside the NodePool's categories", instance.instance_type);
    }
    // Cost against a lower bound no packing can beat: the LP relaxation over the allowed
    // types covering the requested CPU and memory (ignoring kubelet overhead and bin-packing).
    let allowed: Vec<(f64, f64, f64)> = cloud
        .catalog()
        .types()
        .filter(|t| t.arch == "amd64" && t.family.starts_with(['c', 'm', 'r']) && t.gpu_count == 0)
        .filter(|t| t.family.chars().nth(1).and_then(|c| c.to_digit(10)).is_some_and(|g| g > 2))
        .filter_map(|t| Some((f64::from(t.vcpu), t.memory_mib as f64 / 1024.0, t.on_demand_price?)))
        .collect();
    let supply: Vec<Supply> = allowed
        .iter()
        .map(|&(cpu, memory, price)| Supply { capacity: Resources { cpu, memory, pods: 0.0 }, price })
        .collect();
    let bound = lower_bound(&supply, &Resources { cpu: 375.0, memory: 1050.0, pods: 0.0 })
        .expect("the allowed types cover CPU and memory");
    let cost: f64 =
        running.iter().filter_map(|i| cloud.catalog().get(&i.instance_type).and_then(|t| t.on_demand_price)).sum();
    let mut types: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for instance in &running {
        *types.entry(instance.instance_type.as_str()).or_default() += 1;
    }
    eprintln!(
        "{} instances {types:?}: ${cost:.3}/h against an LP lower bound of ${bound:.3}/h (ratio {:.2})",
        running.len(),
        cost / bound
    );
    assert!(cost <= 1.5 * bound, "${cost:.3}/h is more than 1.5 × the lower bound ${bound:.3}/h");
}

/// One small provisioning run; returns the fake cloud's digest (every instance, launch
/// template, API call and bill, in order).
fn provisioning_digest(seed: u64) -> (String, usize) {
    let (mut sim, _server, cloud) = karpenter_world(seed);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["spot", "on-demand"], None)).await?;
        install(&client, &[deployment("a", 30, "500m", "1Gi"), deployment("b", 10, "2", "4Gi")]).await?;
        tokio::time::sleep(Duration::from_secs(240)).await;
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
    let cloud = dovetail_fakecloud::cloud::lock(&cloud);
    (cloud.digest(), cloud.instances().count())
}

#[test]
fn the_controller_in_the_simulator_is_deterministic() {
    let first = provisioning_digest(21);
    assert!(first.1 > 0, "the run launched instances");
    assert_eq!(first, provisioning_digest(21), "same seed, same cloud history");
}
