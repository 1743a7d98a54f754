//! Self-tests of the disruption invariants' newer rules (issue 18, "close the holes"): each
//! runs the controller in a world where one rule is broken from outside the controller (a
//! rogue replica, an EC2 client, a client-side fault, a forged annotation) and checks the
//! checker reports it; each rule that excuses something has a test where the excuse does not
//! apply. `tests/invariants.rs` holds the older self-tests.

use std::time::Duration;

use dovetail_fakecloud::Faults;
use dovetail_fakecloud::cloud::{SharedCloud, lock};
use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::invariants::InvariantsReport;
use dovetail_sim::kube_client::ClientFaults;
use dovetail_sim::scenario::invariants::InvariantConfig;
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world_with};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

/// A Deployment of `replicas` pods of `cpu`, optionally pinned to a zone, with pod annotations.
fn deployment(name: &str, replicas: u32, cpu: &str, zone: Option<&str>, annotations: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}}}]});
    if let Some(z) = zone {
        spec["nodeSelector"] = json!({"topology.kubernetes.io/zone": z});
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}, "annotations": annotations}, "spec": spec}}
    })
}

fn pdb(name: &str, min_available: u32) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}}})
}

fn nodeclaims(client: &kube::Client) -> kube::Api<DynamicObject> {
    let r = ApiResource {
        group: "karpenter.sh".into(),
        version: "v1".into(),
        api_version: "karpenter.sh/v1".into(),
        kind: "NodeClaim".into(),
        plural: "nodeclaims".into(),
    };
    kube::Api::all_with(client.clone(), &r)
}

/// Two deployments pinned to two zones: at least two nodes.
fn two_zones() -> [Value; 2] {
    [
        deployment("a", 1, "500m", Some("us-east-1a"), json!({})),
        deployment("b", 1, "500m", Some("us-east-1b"), json!({})),
    ]
}

/// Installs the CRDs, the general-purpose pool with `pool_spec` merged into its `spec`, and
/// `objects`.
async fn setup(client: &kube::Client, pool_spec: Value, objects: &[Value]) -> anyhow::Result<()> {
    install(client, &karpenter_crds()).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut manifests = general_purpose(&["on-demand"], None);
    json_patch::merge(&mut manifests[1]["spec"], &pool_spec);
    install(client, &manifests).await?;
    install(client, objects).await
}

/// Waits until `n` NodeClaims exist and every pod in `default` runs.
async fn settle(client: &kube::Client, claims: usize) -> anyhow::Result<()> {
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), "default");
    for _ in 0..120 {
        let list = pods.list(&ListParams::default()).await?;
        let running = list.items.iter().all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
        let n = nodeclaims(client).list(&ListParams::default()).await?.items.len();
        if running && !list.items.is_empty() && n >= claims {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    anyhow::bail!("not settled after 600s")
}

/// Names of the nodes running pods of `app`.
async fn nodes_of(client: &kube::Client, app: &str) -> anyhow::Result<Vec<String>> {
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), "default");
    let list = pods.list(&ListParams::default().labels(&format!("app={app}"))).await?;
    let mut nodes: Vec<String> =
        list.items.iter().filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone())).collect();
    nodes.sort();
    nodes.dedup();
    Ok(nodes)
}

/// Runs the world to its end, ticking the checker every simulated second.
fn run(
    sim: turmoil::Sim<'_>,
    server: &ApiServer,
    cloud: &SharedCloud,
    driver: impl std::future::Future<Output = anyhow::Result<()>> + 'static,
) -> InvariantsReport {
    run_with(sim, server, cloud, InvariantConfig::default(), driver)
}

/// [`run`] with invariant settings.
fn run_with(
    sim: turmoil::Sim<'_>,
    server: &ApiServer,
    cloud: &SharedCloud,
    config: InvariantConfig,
    driver: impl std::future::Future<Output = anyhow::Result<()>> + 'static,
) -> InvariantsReport {
    dovetail_tests::run_checked(sim, server, cloud, config, driver).0
}

/// The report has a violation of `invariant` naming an object containing `object` and a
/// message containing `message`, with a time and a trace position.
fn assert_violation(report: &InvariantsReport, invariant: &str, object: &str, message: &str) {
    let found = report.violations.iter().find(|v| {
        v.invariant == invariant && v.objects.iter().any(|o| o.contains(object)) && v.message.contains(message)
    });
    let Some(v) = found else {
        let all: String = report.violations.iter().map(|v| format!("  {v}\n")).collect();
        panic!("no {invariant} violation naming {object:?} saying {message:?}; got:\n{all}");
    };
    eprintln!("{v}");
    assert!(v.at > Duration::ZERO && v.trace_position > 0, "{v}");
}

/// A rogue replica removes a Node with running pods (its finalizer dropped, then deleted):
/// no eviction was sent, yet the pods are gone with it.
#[test]
fn a_node_removed_under_running_pods_breaks_their_pdb() {
    let (mut sim, server, cloud) = karpenter_world_with(31, ClientFaults::default());
    sim.client("controller-rogue", async move {
        let client = client();
        tokio::time::sleep(Duration::from_secs(5)).await;
        settle(&client, 1).await.map_err(|e| e.to_string())?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let nodes: kube::Api<Node> = kube::Api::all(client.clone());
        for node in nodes_of(&client, "web").await.map_err(|e| e.to_string())? {
            let drop_finalizers = json!({"metadata": {"finalizers": null}});
            nodes
                .patch(&node, &PatchParams::default(), &Patch::Merge(&drop_finalizers))
                .await
                .map_err(|e| e.to_string())?;
            nodes.delete(&node, &DeleteParams::default()).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let driver = async move {
        let client = client();
        setup(&client, json!({}), &[deployment("web", 3, "500m", None, json!({})), pdb("web", 3)]).await?;
        tokio::time::sleep(Duration::from_secs(420)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, driver);
    assert_violation(&report, "pdb", "PodDisruptionBudget default/web", "Node removed");
}

/// An EC2 client terminates the instance under running do-not-disrupt pods: neither the
/// annotation nor the PDB saw a request, yet both were broken. Not the cloud's doing (no
/// interruption warning, `Client.UserInitiatedShutdown`), so no involuntary-loss excuse.
#[test]
fn an_instance_terminated_under_running_pods_breaks_pdb_and_do_not_disrupt() {
    let (mut sim, server, cloud) = karpenter_world_with(32, ClientFaults::default());
    let rogue_cloud = cloud.clone();
    sim.client("controller-rogue", async move {
        let client = client();
        tokio::time::sleep(Duration::from_secs(5)).await;
        settle(&client, 1).await.map_err(|e| e.to_string())?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let nodes: kube::Api<Node> = kube::Api::all(client.clone());
        for node in nodes_of(&client, "batch").await.map_err(|e| e.to_string())? {
            let node = nodes.get(&node).await.map_err(|e| e.to_string())?;
            let provider = node.spec.and_then(|s| s.provider_id).unwrap_or_default();
            let id = provider.rsplit('/').next().unwrap_or_default().to_string();
            lock(&rogue_cloud).terminate_instances(&[id]).map_err(|e| format!("{e:?}"))?;
        }
        Ok(())
    });
    let driver = async move {
        let client = client();
        let dnd = json!({"karpenter.sh/do-not-disrupt": "true"});
        setup(&client, json!({}), &[deployment("batch", 2, "500m", None, dnd), pdb("batch", 2)]).await?;
        tokio::time::sleep(Duration::from_secs(420)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, driver);
    assert_violation(&report, "pdb", "PodDisruptionBudget default/batch", "terminated");
    assert_violation(&report, "doNotDisrupt", "Pod default/batch-", "terminated");
}

/// The grace-period excuse is computed from the NodeClaim's deletionTimestamp and the pool's
/// `terminationGracePeriod` (1 h here), not from the `nodeclaim-termination-timestamp`
/// annotation: a rogue writes a deadline in the past on the claim before it is deleted, the
/// controller trusts its annotation and forces the do-not-disrupt pod off at once, and the
/// checker, which does not, reports it.
#[test]
fn a_forged_termination_timestamp_does_not_excuse_forcing_pods_off() {
    let (mut sim, server, cloud) = karpenter_world_with(33, ClientFaults::default());
    sim.client("controller-rogue", async move {
        let client = client();
        tokio::time::sleep(Duration::from_secs(5)).await;
        settle(&client, 1).await.map_err(|e| e.to_string())?;
        let api = nodeclaims(&client);
        let forged = json!({"metadata": {"annotations": {"karpenter.sh/nodeclaim-termination-timestamp": "2026-01-01T00:00:00Z"}}});
        for c in api.list(&ListParams::default()).await.map_err(|e| e.to_string())?.items {
            let name = c.metadata.name.unwrap_or_default();
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&forged)).await.map_err(|e| e.to_string())?;
            api.delete(&name, &DeleteParams::default()).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let driver = async move {
        let client = client();
        let dnd = json!({"karpenter.sh/do-not-disrupt": "true"});
        let pool = json!({"template": {"spec": {"terminationGracePeriod": "1h"}}});
        setup(&client, pool, &[deployment("batch", 1, "500m", None, dnd)]).await?;
        tokio::time::sleep(Duration::from_secs(420)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, driver);
    assert_violation(&report, "doNotDisrupt", "Pod default/batch-", "do-not-disrupt pod");
}

/// Nodes annotated `karpenter.sh/do-not-disrupt: "true"` must not be consolidated; a
/// client-side fault hides the annotation from the controller, which then deletes the empty
/// node.
#[test]
fn a_hidden_do_not_disrupt_annotation_on_a_node_gets_it_consolidated() {
    let faults = ClientFaults { hide_do_not_disrupt: true, ..ClientFaults::default() };
    let (sim, server, cloud) = karpenter_world_with(34, faults);
    let driver = async move {
        let client = client();
        let pool = json!({"disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "20s"}});
        setup(&client, pool, &two_zones()).await?;
        settle(&client, 2).await?;
        let nodes: kube::Api<Node> = kube::Api::all(client.clone());
        let protect = json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}});
        for n in nodes.list(&ListParams::default()).await?.items {
            nodes.patch(&n.metadata.name.unwrap_or_default(), &PatchParams::default(), &Patch::Merge(&protect)).await?;
        }
        let deployments: kube::Api<DynamicObject> = kube::Api::namespaced_with(
            client.clone(),
            "default",
            &ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()),
        );
        let scale = json!({"spec": {"replicas": 0}});
        deployments.patch("a", &PatchParams::default(), &Patch::Merge(&scale)).await?;
        tokio::time::sleep(Duration::from_secs(300)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, driver);
    assert_violation(&report, "doNotDisrupt", "NodeClaim ", "annotated karpenter.sh/do-not-disrupt");
}

/// Each reason's budget holds on its own: with `Empty` nodes at 0 and everything else at 100%,
/// the loosest reason allows every node, but a rogue replica marking both nodes disrupted
/// for `Empty` (the disrupted taint and the `DisruptionReason` condition, as Karpenter's
/// queue writes them) breaks the `Empty` budget.
#[test]
fn a_rogue_replica_disrupting_for_a_reason_with_a_zero_budget_breaks_it() {
    let (mut sim, server, cloud) = karpenter_world_with(35, ClientFaults::default());
    sim.client("controller-rogue", async move {
        let client = client();
        tokio::time::sleep(Duration::from_secs(5)).await;
        settle(&client, 2).await.map_err(|e| e.to_string())?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let api = nodeclaims(&client);
        let nodes: kube::Api<Node> = kube::Api::all(client.clone());
        for c in api.list(&ListParams::default()).await.map_err(|e| e.to_string())?.items {
            let name = c.metadata.name.clone().unwrap_or_default();
            let node = c.data["status"]["nodeName"].as_str().unwrap_or_default().to_string();
            let taint = json!({"spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}});
            nodes.patch(&node, &PatchParams::default(), &Patch::Merge(&taint)).await.map_err(|e| e.to_string())?;
            let mut conditions = c.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
            conditions.push(json!({"type": "DisruptionReason", "status": "True", "reason": "Empty",
                "message": "Empty", "lastTransitionTime": "2026-01-01T00:10:00Z"}));
            let status = json!({"status": {"conditions": conditions}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let driver = async move {
        let client = client();
        let pool = json!({"disruption": {"budgets": [{"nodes": "100%"}, {"nodes": "0", "reasons": ["Empty"]}]}});
        setup(&client, pool, &two_zones()).await?;
        tokio::time::sleep(Duration::from_secs(420)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, driver);
    assert_violation(&report, "disruptionBudgets", "NodePool general-purpose", "for Empty");
}

/// A rogue autoscaler creates a NodeClaim in the general-purpose pool for a burstable `t3`
/// type with none of the pool's taints; the controller launches what the claim says, so the
/// instance breaks the pool's `instance-category In [c m r]` and its Node lacks the pool's
/// taint.
#[test]
fn a_rogue_node_claim_outside_its_pool_launches_a_nonconforming_instance() {
    let (mut sim, server, cloud) = karpenter_world_with(36, ClientFaults::default());
    sim.client("rogue-autoscaler", async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        let claim: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "rogue-t3", "labels": {"karpenter.sh/nodepool": "general-purpose"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["t3.large"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
                ]
            }
        }))
        .map_err(|e| e.to_string())?;
        nodeclaims(&client()).create(&Default::default(), &claim).await.map_err(|e| e.to_string())?;
        Ok(())
    });
    let driver = async move {
        let client = client();
        let pool =
            json!({"template": {"spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}}});
        setup(&client, pool, &[]).await?;
        tokio::time::sleep(Duration::from_secs(300)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, driver);
    assert_violation(&report, "launchConformance", "NodeClaim rogue-t3", "instance-category");
    assert_violation(&report, "launchConformance", "NodeClaim rogue-t3", "dedicated=infra:NoSchedule");
}

/// A drifted node must be replaced within what the Drifted budget allows; a scripted cloud
/// that refuses every TerminateInstances keeps the drifted node alive with nothing blocking
/// its replacement, and the checker reports it, during the run (`driftConvergence`) and at
/// its end (the Liveness phase's `convergence`, clause "drift converged"; its clause "no
/// reachable move untaken" fires in `tests/moves_oracle.rs`).
#[test]
fn a_cloud_refusing_terminations_keeps_a_drifted_node() {
    let (sim, server, cloud) = karpenter_world_with(37, ClientFaults::default());
    lock(&cloud).set_faults(Faults { scripted: vec![dovetail_tests::refuse_terminations()], ..Faults::default() });
    let driver = async move {
        let client = client();
        setup(&client, json!({}), &[deployment("web", 1, "500m", None, json!({}))]).await?;
        settle(&client, 1).await?;
        let pools: kube::Api<DynamicObject> = kube::Api::all_with(
            client.clone(),
            &ApiResource {
                group: "karpenter.sh".into(),
                version: "v1".into(),
                api_version: "karpenter.sh/v1".into(),
                kind: "NodePool".into(),
                plural: "nodepools".into(),
            },
        );
        let relabel = json!({"spec": {"template": {"metadata": {"labels": {"team": "blue"}}}}});
        pools.patch("general-purpose", &PatchParams::default(), &Patch::Merge(&relabel)).await?;
        tokio::time::sleep(Duration::from_secs(900)).await;
        Ok(())
    };
    let mut config = InvariantConfig::default();
    config.drift_convergence.replace_within = dovetail_sim::scenario::SimDuration(Duration::from_secs(240));
    let report = run_with(sim, &server, &cloud, config, driver);
    assert_violation(&report, "driftConvergence", "NodeClaim ", "and unblocked for");
    assert_violation(&report, "convergence", "NodeClaim ", "drifted NodeClaim(s) not replaced");
}
