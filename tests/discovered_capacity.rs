//! The discovered-capacity cache in the simulated world (aws
//! `pkg/controllers/providers/instancetype/capacity/controller.go`,
//! `pkg/providers/instancetype/instancetype.go:270-272, 475-500`): once a node of a type has
//! registered, the controller's instance types carry the memory that node's kubelet reported
//! instead of the `VM_MEMORY_OVERHEAD_PERCENT` estimate, for the AMI set it registered under
//! only. A launched NodeClaim's `status.capacity` is its instance type's capacity as the
//! controller resolved it, so it shows what the controller plans with.

use std::time::Duration;

use dovetail_controller::apis::{EC2NodeClass, NodeClaim};
use dovetail_controller::scheduling::resources::parse_quantity_units;
use dovetail_fakecloud::cloud::lock;
use dovetail_tests::workloads::deployment;
use dovetail_tests::{client, install, karpenter_crds, karpenter_world_for};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

const MIB: i64 = 1024 * 1024;
/// The controller's estimate for an m5.large: 8192 MiB less ceil(7.5 %) (aws
/// `pkg/providers/instancetype/types.go` `memory`).
const ESTIMATE: i64 = (8192 - 615) * MIB;
/// The resolved instance-type list is rebuilt at least this often (upstream's 5-minute
/// `instanceTypesCache` TTL), which is when a discovered capacity reaches it.
const LIST_TTL: Duration = Duration::from_secs(5 * 60);

/// A class on `al2023@latest` and a pool of on-demand m5.large only.
fn class_and_pool() -> Vec<serde_json::Value> {
    let class = json!({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-dovetail",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}]
        }
    });
    let pool = json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "m5-large"},
        "spec": {
            "template": {"spec": {
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
            }},
            "disruption": {"consolidateAfter": "Never", "budgets": [{"nodes": "0"}]}
        }
    });
    vec![class, pool]
}

/// The claims by name, with their capacity memory once launched.
async fn claim_memory(client: &kube::Client) -> anyhow::Result<Vec<(String, Option<i64>)>> {
    let claims: Api<NodeClaim> = Api::all(client.clone());
    Ok(claims
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|c| {
            let memory = c
                .status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .and_then(|r| r.get("memory"))
                .and_then(|q| parse_quantity_units(&q.as_text()));
            (c.metadata.name.clone().unwrap_or_default(), memory)
        })
        .collect())
}

/// Waits for a claim not in `known` to launch, and returns its name and capacity memory.
async fn next_claim(client: &kube::Client, known: &[String]) -> anyhow::Result<(String, i64)> {
    for _ in 0..120 {
        for (name, memory) in claim_memory(client).await? {
            if let Some(memory) = memory
                && !known.contains(&name)
            {
                return Ok((name, memory));
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    anyhow::bail!("no new NodeClaim launched in 10 minutes (known: {known:?})")
}

/// Waits for `count` registered nodes and returns the capacity memory of each.
async fn registered_memory(client: &kube::Client, count: usize) -> anyhow::Result<Vec<i64>> {
    let nodes: Api<Node> = Api::all(client.clone());
    for _ in 0..120 {
        let memory: Vec<i64> = nodes
            .list(&ListParams::default().labels("karpenter.sh/registered=true"))
            .await?
            .items
            .iter()
            .filter_map(|n| {
                let quantity = n.status.as_ref()?.capacity.as_ref()?.get("memory")?;
                parse_quantity_units(&quantity.0)
            })
            .collect();
        if memory.len() >= count {
            return Ok(memory);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    anyhow::bail!("fewer than {count} nodes registered in 10 minutes")
}

#[test]
fn a_registered_node_s_memory_replaces_the_estimate_for_its_ami_set_only() {
    let (mut sim, _server, cloud) = karpenter_world_for(41, Duration::from_secs(3600));
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &class_and_pool()).await?;
        // One pod per m5.large (1930m allocatable CPU).
        install(&client, &[deployment("first", 1, "1500m", "256Mi")]).await?;
        let (first, first_memory) = next_claim(&client, &[]).await?;
        anyhow::ensure!(first_memory == ESTIMATE, "nothing registered yet: the estimate, got {first_memory}");
        let reported = registered_memory(&client, 1).await?[0];
        anyhow::ensure!(reported > ESTIMATE, "the simulated kubelet reports more than the estimate: {reported}");

        // After the list's TTL, a new m5.large is planned with what the node reported.
        tokio::time::sleep(LIST_TTL + Duration::from_secs(10)).await;
        install(&client, &[deployment("second", 1, "1500m", "256Mi")]).await?;
        let (second, second_memory) = next_claim(&client, std::slice::from_ref(&first)).await?;
        anyhow::ensure!(
            second_memory == reported,
            "discovered: {reported} ({} MiB), got {second_memory} ({} MiB)",
            reported / MIB,
            second_memory / MIB
        );
        registered_memory(&client, 2).await?;

        // A new AMI behind the alias: a new AMI set, whose key nothing was recorded under; the
        // registered nodes run the old image, so they are not recorded under it either.
        let classes: Api<EC2NodeClass> = Api::all(client.clone());
        let amis = |class: &EC2NodeClass| class.status.as_ref().and_then(|s| s.amis.clone()).unwrap_or_default();
        let before = amis(&classes.get("default").await?);
        let released = lock(&cloud).release_ami("v20261201");
        anyhow::ensure!(!released.is_empty(), "the fake cloud released images");
        let mut waited = Duration::ZERO;
        while amis(&classes.get("default").await?) == before {
            anyhow::ensure!(waited < Duration::from_secs(900), "the class's AMIs did not change");
            tokio::time::sleep(Duration::from_secs(5)).await;
            waited += Duration::from_secs(5);
        }
        install(&client, &[deployment("third", 1, "1500m", "256Mi")]).await?;
        let (_, third_memory) = next_claim(&client, &[first, second]).await?;
        anyhow::ensure!(third_memory == ESTIMATE, "a new AMI set: the estimate again, got {third_memory}");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}

/// A pool of `types`, on-demand, consolidating after 30 s; with a taint, when given.
fn pool(name: &str, types: &[&str], taint: Option<&str>) -> serde_json::Value {
    let mut pool = json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {
            "template": {"spec": {
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
            }},
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"}
        }
    });
    if let Some(key) = taint {
        pool["spec"]["template"]["spec"]["taints"] = json!([{"key": key, "effect": "NoSchedule"}]);
    }
    pool
}

/// The instance types of the live nodes of NodePool `pool`.
async fn pool_types(client: &kube::Client, pool: &str) -> anyhow::Result<Vec<String>> {
    let nodes: Api<Node> = Api::all(client.clone());
    let selector = format!("karpenter.sh/nodepool={pool}");
    Ok(nodes
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .filter_map(|n| n.metadata.labels.as_ref()?.get("node.kubernetes.io/instance-type").cloned())
        .collect())
}

/// The consequence in generated story 458153806: seven 2 GiB pods do not fit an m5a.xlarge by
/// the estimate (16384 − ceil(7.5 %) − 893 − 100 = 14162 MiB < 14336) but do by what its kubelet
/// reports (≈ 14590 MiB), so they first land on an r5a.xlarge ($0.226/h). Once an m5a.xlarge
/// has registered (here in another, tainted pool of the same EC2NodeClass, so the pods cannot
/// simply move onto it), upstream plans m5a.xlarge with its real memory and replaces the
/// r5a.xlarge by a cheaper m5a.xlarge ($0.172/h); with the estimate alone it never could.
#[test]
fn a_discovered_capacity_lets_consolidation_replace_a_node_by_a_smaller_cheaper_type() {
    let (mut sim, _server, _cloud) = karpenter_world_for(43, Duration::from_secs(3600));
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let class = class_and_pool().remove(0);
        let pools = [pool("main", &["m5a.xlarge", "r5a.xlarge"], None), pool("probe", &["m5a.xlarge"], Some("probe"))];
        install(&client, &[class, pools[0].clone(), pools[1].clone()]).await?;
        install(&client, &[deployment("big", 7, "100m", "2Gi")]).await?;
        let mut waited = Duration::ZERO;
        while pool_types(&client, "main").await? != ["r5a.xlarge"] {
            anyhow::ensure!(waited < Duration::from_secs(600), "no r5a.xlarge for the seven 2 GiB pods");
            tokio::time::sleep(Duration::from_secs(5)).await;
            waited += Duration::from_secs(5);
        }
        // An m5a.xlarge registers in the tainted pool: its memory is discovered.
        let mut probe = deployment("probe", 1, "3", "1Gi");
        probe["spec"]["template"]["spec"]["nodeSelector"] = json!({"karpenter.sh/nodepool": "probe"});
        probe["spec"]["template"]["spec"]["tolerations"] = json!([{"key": "probe", "operator": "Exists"}]);
        install(&client, &[probe]).await?;
        registered_memory(&client, 2).await?;
        let mut waited = Duration::ZERO;
        loop {
            let types = pool_types(&client, "main").await?;
            if types == ["m5a.xlarge"] {
                eprintln!("r5a.xlarge replaced by m5a.xlarge {waited:?} after the probe registered");
                break;
            }
            anyhow::ensure!(waited < Duration::from_secs(1500), "main pool still {types:?} after {waited:?}");
            tokio::time::sleep(Duration::from_secs(10)).await;
            waited += Duration::from_secs(10);
        }
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}
