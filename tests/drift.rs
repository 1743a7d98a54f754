//! Drift in the simulated world, with the production controller and the fake cloud: a new
//! AL2023 release behind `al2023@latest` marks every NodeClaim `Drifted=True/AMIDrift` within
//! the EC2NodeClass refresh period; editing the NodePool template marks them `NodePoolDrifted`,
//! while a requirements change the nodes still satisfy drifts nothing; and, with the disruption
//! loop, a drift roll-out under a one-node budget replaces every node one at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use dovetail_controller::apis::NodeClaim;
use dovetail_controller::apis::condition::StatusConditions;
use dovetail_fakecloud::cloud::lock;
use dovetail_tests::workloads::{deployment, is_running, one_per_node, wait_pods, with_grace};
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;

/// The NodeClass re-resolves AMIs every 5 minutes (`nodeclass::RESOLVE_INTERVAL`), waking at
/// most 30 s late; drift then reacts to the status change at once.
const AMI_DRIFT_DEADLINE: Duration = Duration::from_secs(6 * 60 + 30);

/// A Deployment of `replicas` pods of `cpu`, one per node (required anti-affinity on hostname).
fn spread_deployment(name: &str, replicas: u32, cpu: &str) -> serde_json::Value {
    one_per_node(with_grace(deployment(name, replicas, cpu, "1Gi"), 5))
}

/// Waits until `count` pods of `app` run; returns the names of the nodes they run on.
async fn wait_running(
    client: &kube::Client,
    app: &str,
    count: usize,
    limit: Duration,
) -> anyhow::Result<BTreeSet<String>> {
    wait_pods(client, app, count, is_running, limit).await
}

/// Every NodeClaim by name, with its Drifted condition's reason when it is True.
async fn drifted(client: &kube::Client) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    let claims: Api<NodeClaim> = Api::all(client.clone());
    Ok(claims
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|c| {
            let reason = c.condition("Drifted").filter(|d| d.is_true()).map(|d| d.reason().to_owned());
            (c.metadata.name.clone().unwrap_or_default(), reason)
        })
        .collect())
}

/// The pool and class of `general_purpose`, on-demand.
fn pool_and_class() -> Vec<serde_json::Value> {
    general_purpose(&["on-demand"], None)
}

#[test]
fn a_new_ami_release_drifts_every_node_claim_within_the_refresh_period() {
    let (mut sim, _server, cloud) = karpenter_world(31);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &pool_and_class()).await?;
        install(&client, &[spread_deployment("web", 3, "1")]).await?;
        let nodes = wait_running(&client, "web", 3, Duration::from_secs(600)).await?;
        anyhow::ensure!(nodes.len() == 3, "one pod per node: {nodes:?}");
        // Settled and not drifted: the launch stamped both hashes and the instance runs the
        // AMI the class resolves today.
        tokio::time::sleep(Duration::from_secs(60)).await;
        let before = drifted(&client).await?;
        anyhow::ensure!(before.len() == 3, "three NodeClaims: {before:?}");
        anyhow::ensure!(before.values().all(Option::is_none), "drifted before any change: {before:?}");
        let claims: Api<NodeClaim> = Api::all(client.clone());
        for name in before.keys() {
            let claim = claims.get(name).await?;
            let annotations = claim.metadata.annotations.clone().unwrap_or_default();
            for key in [
                "karpenter.sh/nodepool-hash",
                "karpenter.sh/nodepool-hash-version",
                "karpenter.k8s.aws/ec2nodeclass-hash",
                "karpenter.k8s.aws/ec2nodeclass-hash-version",
            ] {
                anyhow::ensure!(annotations.contains_key(key), "{name} lacks {key}: {annotations:?}");
            }
        }
        let released = lock(&cloud).release_ami("v20260201");
        anyhow::ensure!(!released.is_empty(), "the fake cloud released images");
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut waited = Duration::ZERO;
        loop {
            for (name, reason) in drifted(&client).await? {
                if let Some(reason) = reason
                    && before.contains_key(&name)
                {
                    seen.entry(name).or_insert(reason);
                }
            }
            if seen.len() == before.len() {
                eprintln!("every NodeClaim drifted {waited:?} after the AMI release: {seen:?}");
                break;
            }
            anyhow::ensure!(waited < AMI_DRIFT_DEADLINE, "after {waited:?} only {seen:?} of {before:?} drifted");
            tokio::time::sleep(Duration::from_secs(5)).await;
            waited += Duration::from_secs(5);
        }
        anyhow::ensure!(seen.values().all(|r| r == "AMIDrift"), "reasons: {seen:?}");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}

#[test]
fn a_template_edit_drifts_the_pool_but_a_still_satisfied_requirements_change_does_not() {
    let (mut sim, _server, _cloud) = karpenter_world(32);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &pool_and_class()).await?;
        install(&client, &[spread_deployment("web", 3, "1")]).await?;
        wait_running(&client, "web", 3, Duration::from_secs(600)).await?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let before = drifted(&client).await?;
        anyhow::ensure!(before.len() == 3 && before.values().all(Option::is_none), "{before:?}");
        let pools: Api<dovetail_controller::apis::NodePool> = Api::all(client.clone());
        let pool = pools.get("general-purpose").await?;
        let annotations = pool.metadata.annotations.clone().unwrap_or_default();
        anyhow::ensure!(
            annotations.get("karpenter.sh/nodepool-hash-version").map(String::as_str) == Some("v3"),
            "the pool carries its hash version: {annotations:?}"
        );
        // Widen the categories and lower the generation bound: every node still satisfies them.
        let widened = json!({"spec": {"template": {"spec": {"requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]},
            {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r", "t"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["1"]}
        ]}}}});
        pools.patch("general-purpose", &PatchParams::default(), &Patch::Merge(&widened)).await?;
        for _ in 0..12 {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let now = drifted(&client).await?;
            anyhow::ensure!(now.values().all(Option::is_none), "a still-satisfied change drifted: {now:?}");
        }
        // A template label is a static field: every claim of the pool drifts.
        let labelled = json!({"spec": {"template": {"metadata": {"labels": {"team": "payments"}}}}});
        pools.patch("general-purpose", &PatchParams::default(), &Patch::Merge(&labelled)).await?;
        let mut waited = Duration::ZERO;
        loop {
            let now = drifted(&client).await?;
            let of_before: Vec<&Option<String>> = before.keys().filter_map(|n| now.get(n)).collect();
            if of_before.len() == before.len() && of_before.iter().all(|r| r.is_some()) {
                anyhow::ensure!(of_before.iter().all(|r| r.as_deref() == Some("NodePoolDrifted")), "reasons: {now:?}");
                eprintln!("every NodeClaim drifted {waited:?} after the template edit");
                break;
            }
            anyhow::ensure!(waited < Duration::from_secs(60), "after {waited:?}: {now:?}");
            tokio::time::sleep(Duration::from_secs(2)).await;
            waited += Duration::from_secs(2);
        }
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}

#[test]
fn drift_rollout_respects_budget() {
    let (mut sim, _server, cloud) = karpenter_world(33);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut objects = pool_and_class();
        objects[1]["spec"]["disruption"] = json!({"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]});
        install(&client, &objects).await?;
        install(&client, &[spread_deployment("web", 4, "1")]).await?;
        let old_nodes = wait_running(&client, "web", 4, Duration::from_secs(600)).await?;
        let original: BTreeSet<String> = drifted(&client).await?.into_keys().collect();
        anyhow::ensure!(original.len() == 4, "four NodeClaims: {original:?}");
        lock(&cloud).release_ami("v20260201");
        let claims: Api<NodeClaim> = Api::all(client.clone());
        let mut most_disrupting = 0;
        let mut waited = Duration::ZERO;
        loop {
            let list = claims.list(&ListParams::default()).await?;
            let present: BTreeSet<String> = list.items.iter().filter_map(|c| c.metadata.name.clone()).collect();
            let disrupting = list.items.iter().filter(|c| c.metadata.deletion_timestamp.is_some()).count();
            most_disrupting = most_disrupting.max(disrupting);
            anyhow::ensure!(disrupting <= 1, "{disrupting} NodeClaims disrupting at once under a budget of 1");
            if original.is_disjoint(&present) {
                break;
            }
            anyhow::ensure!(waited < Duration::from_secs(45 * 60), "after {waited:?} still {present:?}");
            tokio::time::sleep(Duration::from_secs(2)).await;
            waited += Duration::from_secs(2);
        }
        anyhow::ensure!(most_disrupting == 1, "nodes were replaced");
        let new_nodes = wait_running(&client, "web", 4, Duration::from_secs(600)).await?;
        anyhow::ensure!(new_nodes.is_disjoint(&old_nodes), "pods run on replacements: {new_nodes:?}");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}
