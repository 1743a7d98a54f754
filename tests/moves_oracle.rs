//! The `untakenMoves` invariant and the moves oracle end to end: a move Karpenter's rules
//! allow that the controller is kept from taking from outside (its link to the API server
//! cut) is reported with the node, the move and its saving; the same world with the link
//! up reports nothing, because the controller takes the move; and the report's cost
//! section names the rule keeping each node. Multi-node: two nodes that only a merge into
//! one node cheaper than their sum consolidates, with the controller cut off, are an
//! untaken multi-node move (and unconverged at the end); with a budget of one node,
//! upstream's multi-node search has a single candidate and nothing is claimed.

use std::time::Duration;

use dovetail_fakecloud::cloud::SharedCloud;
use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::invariants::InvariantsReport;
use dovetail_sim::kube_client::ClientFaults;
use dovetail_sim::scenario::invariants::InvariantConfig;
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world_with};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};

/// A Deployment of `replicas` 500m pods kept in `zone`.
fn deployment(name: &str, replicas: u32, zone: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "nodeSelector": {"topology.kubernetes.io/zone": zone},
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}}}
    })
}

/// Two zones' worth of pods (so two nodes), a pool that consolidates after 30 s; once
/// settled, `before_scale_down` runs (inside the simulation), then zone b's Deployment
/// scales to zero, leaving its node empty.
async fn empty_one_of_two_nodes(before_scale_down: impl FnOnce()) -> anyhow::Result<()> {
    let client = client();
    install(&client, &karpenter_crds()).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut pool = general_purpose(&["on-demand"], None);
    for object in pool.iter_mut().filter(|o| o["kind"] == "NodePool") {
        object["spec"]["disruption"] =
            json!({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"});
    }
    install(&client, &pool).await?;
    install(&client, &[deployment("a", 2, "us-east-1a"), deployment("b", 2, "us-east-1b")]).await?;
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), "default");
    let mut waited = Duration::ZERO;
    loop {
        let list = pods.list(&ListParams::default()).await?;
        let running =
            list.items.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
        if running.count() == 4 {
            break;
        }
        anyhow::ensure!(waited < Duration::from_secs(600), "pods not running after {waited:?}");
        tokio::time::sleep(Duration::from_secs(5)).await;
        waited += Duration::from_secs(5);
    }
    before_scale_down();
    let deployments: kube::Api<Deployment> = kube::Api::namespaced(client.clone(), "default");
    deployments.patch("b", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 0}}))).await?;
    tokio::time::sleep(Duration::from_secs(480)).await;
    Ok(())
}

/// Runs the world to its end, ticking the checker every simulated second.
fn run(
    sim: turmoil::Sim<'_>,
    server: &ApiServer,
    cloud: &SharedCloud,
    driver: impl std::future::Future<Output = anyhow::Result<()>> + 'static,
) -> InvariantsReport {
    dovetail_tests::run_checked(sim, server, cloud, InvariantConfig::default(), driver).0
}

fn summary(report: &InvariantsReport) -> String {
    report.violations.iter().map(|v| format!("  {v}\n")).collect()
}

#[test]
fn an_empty_node_the_controller_cannot_reach_is_an_untaken_move() {
    let (sim, server, cloud) = karpenter_world_with(31, ClientFaults::default());
    // The controller loses the API server just before the node empties: consolidation is
    // stopped from outside, and the empty node's delete stays available.
    let driver = empty_one_of_two_nodes(|| turmoil::partition("controller", "apiserver"));
    let report = run(sim, &server, &cloud, driver);
    let found: Vec<_> = report.violations.iter().filter(|v| v.invariant == "untakenMoves").collect();
    assert_eq!(found.len(), 1, "one empty node:\n{}", summary(&report));
    let v = found[0];
    eprintln!("{v}");
    assert!(
        v.objects.iter().any(|o| o.starts_with("Node ")) && v.objects.contains(&"NodePool general-purpose".to_string())
    );
    assert!(v.message.contains("delete empty node") && v.message.contains("saving at least $"), "{}", v.message);
    assert!(v.trace_position > 0 && v.at > Duration::ZERO);
    assert!(report.checked.iter().any(|c| c == "untakenMoves"));
    // The move is still open at the end, and the report's cost section says so.
    assert_eq!(report.cost.untaken.len(), 1, "{:?}", report.cost);
    assert!(
        report.cost.kept.iter().any(|k| k.rule.contains("fit on no other node") || k.rule.contains("no cheaper")),
        "{:?}",
        report.cost.kept
    );
}

#[test]
fn the_controller_takes_the_same_move_when_it_can() {
    let (sim, server, cloud) = karpenter_world_with(31, ClientFaults::default());
    let report = run(sim, &server, &cloud, empty_one_of_two_nodes(|| ()));
    assert!(report.violations.is_empty(), "violations:\n{}", summary(&report));
    assert!(report.cost.untaken.is_empty(), "{:?}", report.cost.untaken);
    assert_eq!(report.cost.kept.len(), 1, "one node left: {:?}", report.cost.kept);
    assert!(report.cost.lower_bound_per_hour > 0.0 && report.cost.gap.is_some(), "{:?}", report.cost);
}

/// A Deployment of one pod asking for little CPU and most of a small node's memory: alone
/// it fills a 4 GiB node, two of them fit an 8 GiB node cheaper than two 4 GiB ones.
fn memory_heavy(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "250m", "memory": "2500Mi"}}}]}}}
    })
}

/// Waits until `n` pods run.
async fn running(client: &kube::Client, n: usize) -> anyhow::Result<()> {
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), "default");
    for _ in 0..120 {
        let list = pods.list(&ListParams::default()).await?;
        let up = list.items.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
        if up.count() == n {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    anyhow::bail!("{n} pods not running after 600s")
}

/// One memory-heavy pod, then another (so two nodes), a pool consolidating after 60 s under
/// `budgets`; once both run and their claims initialize, the controller loses the API
/// server for the rest of the run.
async fn two_half_used_nodes(budgets: Value) -> anyhow::Result<()> {
    let client = client();
    install(&client, &karpenter_crds()).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut pool = general_purpose(&["on-demand"], None);
    for object in pool.iter_mut().filter(|o| o["kind"] == "NodePool") {
        object["spec"]["disruption"] =
            json!({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "60s", "budgets": budgets});
    }
    install(&client, &pool).await?;
    install(&client, &[memory_heavy("a")]).await?;
    running(&client, 1).await?;
    install(&client, &[memory_heavy("b")]).await?;
    running(&client, 2).await?;
    tokio::time::sleep(Duration::from_secs(20)).await;
    turmoil::partition("controller", "apiserver");
    tokio::time::sleep(Duration::from_secs(600)).await;
    Ok(())
}

#[test]
fn two_nodes_only_a_merge_consolidates_are_an_untaken_multi_node_move() {
    let (sim, server, cloud) = karpenter_world_with(32, ClientFaults::default());
    let report = run(sim, &server, &cloud, two_half_used_nodes(json!([{"nodes": "2"}])));
    eprintln!("{}\nkept: {:?}\nuntaken: {:?}", summary(&report), report.cost.kept, report.cost.untaken);
    let untaken: Vec<_> = report.violations.iter().filter(|v| v.invariant == "untakenMoves").collect();
    assert_eq!(untaken.len(), 1, "one merge:\n{}", summary(&report));
    assert!(untaken[0].message.contains("replace nodes together"), "{}", untaken[0].message);
    assert_eq!(untaken[0].objects.iter().filter(|o| o.starts_with("Node ")).count(), 2, "{:?}", untaken[0].objects);
    assert!(report.cost.untaken.iter().all(|m| m.nodes.len() == 2), "no single-node move: {:?}", report.cost.untaken);
    // Still open at the end: the Liveness phase's convergence check says so too.
    let end: Vec<_> = report.violations.iter().filter(|v| v.invariant == "convergence").collect();
    assert!(end.iter().any(|v| v.message.contains("consolidation move(s)")), "{}", summary(&report));
}

#[test]
fn a_budget_of_one_node_leaves_upstreams_multi_node_search_one_candidate() {
    let (sim, server, cloud) = karpenter_world_with(32, ClientFaults::default());
    let report = run(sim, &server, &cloud, two_half_used_nodes(json!([{"nodes": "1"}])));
    assert!(
        report.violations.iter().all(|v| v.invariant != "untakenMoves" && !v.message.contains("consolidation move")),
        "{}",
        summary(&report)
    );
    assert!(report.cost.untaken.is_empty(), "{:?}", report.cost.untaken);
    assert_eq!(report.cost.kept.len(), 2, "{:?}", report.cost.kept);
}
