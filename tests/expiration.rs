//! Expiration in the simulated world, with the production controller and the fake cloud: nodes
//! whose NodePool says `expireAfter: 30m` are deleted 30 simulated minutes after creation and
//! replaced while a PodDisruptionBudget (maxUnavailable 1) holds at every sample; with a budget
//! that allows no disruption at all, `terminationGracePeriod: 5m` forces the drain at the grace
//! period.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use dovetail_controller::apis::NodeClaim;
use dovetail_controller::runtime::Clock;
use dovetail_controller::runtime::clock::{add, elapsed};
use dovetail_sim::controller_host::SimClock;
use dovetail_tests::workloads::{app_pods, deployment, is_ready, node_of, one_per_node, wait_pods, with_grace};
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world};
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

/// `general_purpose` (on-demand) with `spec.template.spec` fields merged in.
fn pool_and_class(template_spec: serde_json::Value) -> Vec<serde_json::Value> {
    let mut objects = general_purpose(&["on-demand"], None);
    for (key, value) in template_spec.as_object().expect("an object") {
        objects[1]["spec"]["template"]["spec"][key] = value.clone();
    }
    objects
}

/// `replicas` pods of `app`, one per node when `spread`, behind a PDB with `maxUnavailable`.
fn workload(app: &str, replicas: u32, spread: bool, max_unavailable: u32) -> Vec<serde_json::Value> {
    let mut web = with_grace(deployment(app, replicas, "1", "1Gi"), 10);
    if spread {
        web = one_per_node(web);
    }
    vec![
        web,
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": app, "namespace": "default"},
            "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}}}),
    ]
}

/// Waits until `count` pods of `app` are Ready; returns their nodes.
async fn wait_ready(
    client: &kube::Client,
    app: &str,
    count: usize,
    limit: Duration,
) -> anyhow::Result<BTreeSet<String>> {
    wait_pods(client, app, count, is_ready, limit).await
}

/// Every NodeClaim's (creation, deletion) times by name.
async fn claim_times(client: &kube::Client) -> anyhow::Result<BTreeMap<String, (Option<Time>, Option<Time>)>> {
    let claims: Api<NodeClaim> = Api::all(client.clone());
    Ok(claims
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|c| {
            (
                c.metadata.name.clone().unwrap_or_default(),
                (c.metadata.creation_timestamp, c.metadata.deletion_timestamp),
            )
        })
        .collect())
}

#[test]
fn expired_nodes_are_replaced_after_thirty_minutes_within_the_pdb() {
    let (mut sim, _server, _cloud) = karpenter_world(41);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &pool_and_class(json!({"expireAfter": "30m"}))).await?;
        install(&client, &workload("web", 3, true, 1)).await?;
        let old_nodes = wait_ready(&client, "web", 3, Duration::from_secs(600)).await?;
        let original = claim_times(&client).await?;
        anyhow::ensure!(original.len() == 3, "one NodeClaim per pod: {original:?}");
        // Sample every second until every original claim is gone and the pods run elsewhere.
        let mut fewest_ready = usize::MAX;
        let mut deleted_after: BTreeMap<String, Duration> = BTreeMap::new();
        let mut waited = Duration::ZERO;
        loop {
            let pods = app_pods(&client, "web").await?;
            let ready: Vec<&Pod> = pods.iter().filter(|p| is_ready(p)).collect();
            fewest_ready = fewest_ready.min(ready.len());
            anyhow::ensure!(ready.len() >= 2, "the PDB was violated: {} web pods ready", ready.len());
            let now = claim_times(&client).await?;
            for (name, (created, deleted)) in &now {
                if let (Some(created), Some(deleted)) = (created, deleted)
                    && original.contains_key(name)
                {
                    deleted_after
                        .entry(name.clone())
                        .or_insert_with(|| deleted.0.duration_since(created.0).unsigned_abs());
                }
            }
            let gone = original.keys().all(|name| !now.contains_key(name));
            let on_new = ready.len() == 3 && ready.iter().all(|p| node_of(p).is_some_and(|n| !old_nodes.contains(&n)));
            if gone && on_new {
                eprintln!("replaced after {waited:?} more; fewest ready {fewest_ready}; lifetimes {deleted_after:?}");
                break;
            }
            anyhow::ensure!(waited < Duration::from_secs(45 * 60), "after {waited:?}: claims {now:?}");
            tokio::time::sleep(Duration::from_secs(1)).await;
            waited += Duration::from_secs(1);
        }
        anyhow::ensure!(deleted_after.len() == 3, "every original claim was seen deleting: {deleted_after:?}");
        for (name, lifetime) in &deleted_after {
            anyhow::ensure!(
                *lifetime >= Duration::from_secs(30 * 60) && *lifetime <= Duration::from_secs(30 * 60 + 2),
                "{name} deleted {lifetime:?} after creation"
            );
        }
        let events: Api<Event> = Api::namespaced(client.clone(), "default");
        let expired = events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("DisruptionTerminating"))
            .filter(|e| e.message.as_deref() == Some("Disrupting NodeClaim: Expired"))
            .count();
        anyhow::ensure!(expired == 3, "{expired} expiration events on NodeClaims");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}

#[test]
fn an_expired_node_behind_a_blocking_pdb_is_drained_by_force_at_the_grace_period() {
    let (mut sim, _server, _cloud) = karpenter_world(42);
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &pool_and_class(json!({"expireAfter": "15m", "terminationGracePeriod": "5m"}))).await?;
        install(&client, &workload("db", 2, false, 0)).await?;
        let old_nodes = wait_ready(&client, "db", 2, Duration::from_secs(600)).await?;
        let original = claim_times(&client).await?;
        anyhow::ensure!(!original.is_empty(), "{original:?}");
        // Wait for the expiry.
        let mut deleted: Option<Time> = None;
        let mut waited = Duration::ZERO;
        while deleted.is_none() {
            deleted = claim_times(&client).await?.into_values().filter_map(|(_, d)| d).min_by_key(|t| t.0);
            anyhow::ensure!(waited < Duration::from_secs(20 * 60), "nothing expired after {waited:?}");
            tokio::time::sleep(Duration::from_secs(1)).await;
            waited += Duration::from_secs(1);
        }
        let deleted = deleted.expect("a deletion time");
        // The PDB allows no eviction: the pods stay until deletion + TGP, then are deleted with
        // the remaining grace (their deletionTimestamp lands at the deadline).
        let deadline = add(deleted.0, Duration::from_secs(300));
        let mut forced: Option<Time> = None;
        loop {
            let pods = app_pods(&client, "db").await?;
            let on_old: Vec<&Pod> =
                pods.iter().filter(|p| node_of(p).is_some_and(|n| old_nodes.contains(&n))).collect();
            let now = SimClock.now();
            if forced.is_none()
                && let Some(at) =
                    on_old.iter().filter_map(|p| p.metadata.deletion_timestamp.clone()).min_by_key(|t| t.0)
            {
                forced = Some(at);
            }
            if forced.is_none() {
                anyhow::ensure!(
                    on_old.iter().filter(|p| is_ready(p)).count() == 2,
                    "a db pod left before the grace period ran out"
                );
            }
            if forced.is_some() && on_old.is_empty() {
                break;
            }
            anyhow::ensure!(now < add(deadline, Duration::from_secs(120)), "not drained 2 min past the deadline");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let forced = forced.expect("the pods were deleted");
        let off = elapsed(forced.0, deadline) + elapsed(deadline, forced.0);
        anyhow::ensure!(
            off <= Duration::from_secs(15),
            "pods deleted at {forced:?}, {off:?} from the deadline {deadline}"
        );
        // The node goes away and the pods run on a new one.
        let new_nodes = wait_ready(&client, "db", 2, Duration::from_secs(600)).await?;
        anyhow::ensure!(new_nodes.is_disjoint(&old_nodes), "{new_nodes:?} vs {old_nodes:?}");
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
}
