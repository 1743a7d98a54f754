//! Stateful workloads (issue 20): StatefulSets whose claims bind zonal volumes. The
//! simulated cluster provisions a claim's volume in the zone of the node its first pod
//! landed on, keeps the claim when the pod goes, and places the pod again only in that
//! zone; the controller launches a pod's node in its volume's zone.

use std::time::Duration;

use dovetail_tests::{client, cluster_world, general_purpose, install, karpenter_crds, karpenter_world, ready_node};
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

const ZONE: &str = "topology.kubernetes.io/zone";

fn storage_class() -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
        "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"})
}

fn stateful_set(replicas: u32, cpu: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
        "spec": {"replicas": replicas, "serviceName": "db", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db",
                "image": "postgres", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "storageClassName": "gp3", "resources": {"requests": {"storage": "10Gi"}}}}]}})
}

async fn add_node(name: &str, zone: &str) -> anyhow::Result<()> {
    let api: Api<Node> = Api::all(client());
    let n = ready_node(name, zone, 4, 16);
    let created = api.create(&PostParams::default(), &n).await?;
    let mut with_status = created.clone();
    with_status.status = n.status.clone();
    api.replace_status(name, &PostParams::default(), &with_status).await?;
    Ok(())
}

async fn pod(name: &str) -> anyhow::Result<Option<Pod>> {
    Ok(Api::<Pod>::default_namespaced(client()).get_opt(name).await?)
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

/// The zone a volume's required node affinity names.
fn volume_zone(volume: &PersistentVolume) -> Option<String> {
    let terms = &volume.spec.as_ref()?.node_affinity.as_ref()?.required.as_ref()?.node_selector_terms;
    let e = terms.first()?.match_expressions.as_ref()?.iter().find(|e| e.key == ZONE)?;
    e.values.as_ref()?.first().cloned()
}

/// Polls every second until `f` gives `Some`, for at most `limit`.
async fn wait_for<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let mut waited = Duration::ZERO;
    loop {
        if let Some(t) = f().await? {
            return Ok(t);
        }
        anyhow::ensure!(waited < limit, "{what}: not after {waited:?}");
        tokio::time::sleep(Duration::from_secs(1)).await;
        waited += Duration::from_secs(1);
    }
}

/// The StatefulSet makes a claim per ordinal; the first pod's node picks the volume's
/// zone; the claim survives the pod; the recreated pod (same name) waits while only a node
/// in another zone has room, and binds as soon as a node in its volume's zone appears.
#[test]
fn a_recreated_pod_waits_for_a_node_in_its_volume_zone() {
    let (mut sim, _server, _trace) = cluster_world(3);
    sim.client("test", async move {
        let client = client();
        add_node("a1", "us-east-1a").await?;
        install(&client, &[storage_class(), stateful_set(1, "1")]).await?;
        let first = wait_for(Duration::from_secs(60), "db-0 bound", || async {
            Ok(pod("db-0").await?.and_then(|p| node_of(&p)))
        })
        .await?;
        assert_eq!(first, "a1");
        let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client.clone());
        let volume_name = wait_for(Duration::from_secs(60), "data-db-0 bound", || async {
            Ok(claims.get("data-db-0").await?.spec.and_then(|s| s.volume_name))
        })
        .await?;
        let claim = claims.get("data-db-0").await?;
        let annotations = claim.metadata.annotations.unwrap_or_default();
        assert_eq!(annotations.get("volume.kubernetes.io/selected-node").map(String::as_str), Some("a1"));
        assert_eq!(annotations.get("pv.kubernetes.io/bind-completed").map(String::as_str), Some("yes"));
        let volume = Api::<PersistentVolume>::all(client.clone()).get(&volume_name).await?;
        assert_eq!(volume_zone(&volume).as_deref(), Some("us-east-1a"));

        // Zone a's node goes; a node in zone b has room.
        add_node("b1", "us-east-1b").await?;
        Api::<Node>::all(client.clone()).delete("a1", &DeleteParams::default()).await?;
        Api::<Pod>::default_namespaced(client.clone()).delete("db-0", &DeleteParams::background()).await?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let waiting = pod("db-0").await?.expect("the StatefulSet recreated db-0");
        assert_eq!(node_of(&waiting), None, "db-0 must not go to zone b, away from its volume");
        let message = waiting
            .status
            .and_then(|s| s.conditions)
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled")
            .and_then(|c| c.message)
            .unwrap_or_default();
        assert!(message.contains("volume node affinity conflict"), "{message}");
        assert_eq!(claims.get("data-db-0").await?.spec.and_then(|s| s.volume_name), Some(volume_name));

        add_node("a2", "us-east-1a").await?;
        let second = wait_for(Duration::from_secs(120), "db-0 bound again", || async {
            Ok(pod("db-0").await?.and_then(|p| node_of(&p)))
        })
        .await?;
        assert_eq!(second, "a2");
        Ok(())
    });
    sim.run().expect("the simulation");
}

/// A pod whose claim is bound to a volume in us-east-1c gets a node launched in
/// us-east-1c, though cheaper zones exist (core `volumetopology.go`). The volume names the
/// EBS CSI driver's zone key, which the controller normalizes to the zone
/// (karpenter-provider-aws `pkg/operator/operator.go` l. 82) and which the node carries
/// once the driver registered on it (so the kube-scheduler's VolumeBinding binds the pod).
#[test]
fn the_controller_launches_in_the_volume_zone() {
    let (mut sim, _server, cloud) = karpenter_world(5);
    sim.client("test", async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["on-demand"], None)).await?;
        let volume = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-c"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                "claimRef": {"namespace": "default", "name": "data-db-0"},
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0c"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["us-east-1c"]}]}]}}}});
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-db-0", "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "volumeName": "pv-c",
                "resources": {"requests": {"storage": "10Gi"}}}});
        install(&client, &[storage_class(), volume, claim, stateful_set(1, "1")]).await?;
        let node = wait_for(Duration::from_secs(300), "db-0 bound", || async {
            Ok(pod("db-0").await?.and_then(|p| node_of(&p)))
        })
        .await?;
        let node = Api::<Node>::all(client.clone()).get(&node).await?;
        let zone = node.metadata.labels.unwrap_or_default().get(ZONE).cloned();
        assert_eq!(zone.as_deref(), Some("us-east-1c"));
        Ok(())
    });
    sim.run().expect("the simulation");
    let cloud = dovetail_fakecloud::cloud::lock(&cloud);
    let zones: Vec<String> =
        cloud.instances().filter(|i| i.state.name() == "running").map(|i| i.zone.clone()).collect();
    assert!(!zones.is_empty() && zones.iter().all(|z| z == "us-east-1c"), "launched in {zones:?}");
}

/// Claims of a three-replica set land in the zones of their pods, and the pods run.
#[test]
fn each_ordinal_gets_its_claim_and_volume() {
    let (mut sim, _server, _trace) = cluster_world(4);
    sim.client("test", async move {
        let client = client();
        add_node("a1", "us-east-1a").await?;
        add_node("b1", "us-east-1b").await?;
        install(&client, &[storage_class(), stateful_set(3, "1")]).await?;
        let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client.clone());
        let volumes: Api<PersistentVolume> = Api::all(client.clone());
        wait_for(Duration::from_secs(120), "three bound claims", || async {
            let list = claims.list(&ListParams::default()).await?.items;
            let bound = list.iter().filter(|c| c.spec.as_ref().and_then(|s| s.volume_name.as_ref()).is_some()).count();
            Ok((bound == 3).then_some(()))
        })
        .await?;
        for i in 0..3 {
            let p = pod(&format!("db-{i}")).await?.expect("the pod");
            let node = Api::<Node>::all(client.clone()).get(&node_of(&p).expect("bound")).await?;
            let claim = claims.get(&format!("data-db-{i}")).await?;
            let volume = volumes.get(claim.spec.and_then(|s| s.volume_name).as_deref().unwrap_or("")).await?;
            assert_eq!(volume_zone(&volume), node.metadata.labels.unwrap_or_default().get(ZONE).cloned());
        }
        Ok(())
    });
    sim.run().expect("the simulation");
}
