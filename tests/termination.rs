//! Termination in the simulated cluster: deleting a NodeClaim drains its Node through the
//! Eviction API one pod at a time behind a PodDisruptionBudget, leaves do-not-disrupt pods until
//! the TerminationGracePeriod forces them, terminates the instance, and releases both finalizers.

mod support_cloud;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dovetail_controller::apis::NodeClaim;
use dovetail_controller::runtime::{Clock, EventRecorder};
use dovetail_controller::state::{Cluster, watchers};
use dovetail_controller::termination::Termination;
use dovetail_sim::controller_host::SimClock;
use dovetail_tests::{client, cluster_world, install, karpenter_crds, ready_node};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support_cloud::MemoryCloud;

const ZONE: &str = "us-east-1a";

fn provider_id(node: &str) -> String {
    format!("aws:///{ZONE}/i-{node}")
}

/// The production termination controller as a turmoil host, on its own watch-fed state.
fn add_termination_host(sim: &mut turmoil::Sim<'_>, cloud: Arc<MemoryCloud>, events: EventRecorder) {
    sim.host("controller", move || {
        let cloud = cloud.clone();
        let events = events.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let client = client();
            let cluster = Arc::new(Cluster::new());
            watchers::spawn_watchers(&client, &cluster, &dovetail_controller::runtime::SharedRng::from_seed(1));
            Termination::new(client, cluster, cloud, Arc::new(SimClock), events).run().await;
            Ok(())
        }
    });
}

/// Creates a Ready node carrying Karpenter's termination finalizer (as registration leaves it).
async fn managed_node(name: &str) -> anyhow::Result<()> {
    let api: Api<Node> = Api::all(client());
    let mut node = ready_node(name, ZONE, 16, 64);
    node.metadata.finalizers = Some(vec!["karpenter.sh/termination".into()]);
    node.metadata.labels.get_or_insert_default().insert("karpenter.sh/nodepool".into(), "default".into());
    let created = api.create(&PostParams::default(), &node).await?;
    let mut with_status = created.clone();
    with_status.status = node.status.clone();
    api.replace_status(name, &PostParams::default(), &with_status).await?;
    Ok(())
}

/// A plain Ready node with no Karpenter finalizer, where evicted pods land.
async fn plain_node(name: &str) -> anyhow::Result<()> {
    let api: Api<Node> = Api::all(client());
    let node = ready_node(name, ZONE, 16, 64);
    let created = api.create(&PostParams::default(), &node).await?;
    let mut with_status = created.clone();
    with_status.status = node.status.clone();
    api.replace_status(name, &PostParams::default(), &with_status).await?;
    Ok(())
}

/// A registered NodeClaim for `node`, with the termination finalizer and a TGP.
async fn registered_claim(name: &str, node: &str, tgp: &str) -> anyhow::Result<()> {
    let api: Api<NodeClaim> = Api::all(client());
    let claim: NodeClaim = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "finalizers": ["karpenter.sh/termination"],
                     "labels": {"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand",
                                "topology.kubernetes.io/zone": ZONE, "node.kubernetes.io/instance-type": "m5.4xlarge"}},
        "spec": {"requirements": [], "terminationGracePeriod": tgp,
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    }))?;
    api.create(&PostParams::default(), &claim).await?;
    let now = SimClock.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let conditions: Vec<serde_json::Value> = ["Launched", "Registered", "Initialized"]
        .iter()
        .map(|t| json!({"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": now}))
        .collect();
    let status = json!({"status": {"providerID": provider_id(node), "nodeName": node, "conditions": conditions}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await?;
    Ok(())
}

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn node_of(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default()
}

/// What the watcher saw while the node drained.
#[derive(Debug, Default)]
struct Observed {
    web_ready_min: usize,
    web_terminating_on_node_max: usize,
    keeper_deleted_at: Option<Time>,
    keeper_grace: Option<i64>,
    web_left_node_by: Option<Time>,
    claim_deleted_at: Option<Time>,
    saw_deadline_annotation: bool,
    saw_taint: bool,
    saw_drained: bool,
    saw_instance_terminating: bool,
    finished: bool,
}

#[test]
fn deleting_a_node_claim_drains_one_pod_at_a_time_within_the_pdb_and_forces_do_not_disrupt_at_tgp() {
    for seed in [11, 13, 17] {
        drain_behind_pdb_with_a_do_not_disrupt_pod(seed);
    }
}

fn drain_behind_pdb_with_a_do_not_disrupt_pod(seed: u64) {
    let (mut sim, _server, _trace) = cluster_world(seed);
    let cloud = MemoryCloud::new(Arc::new(SimClock), Duration::from_secs(10));
    let events = EventRecorder::new();
    add_termination_host(&mut sim, cloud.clone(), events.clone());
    let observed = Arc::new(Mutex::new(Observed { web_ready_min: usize::MAX, ..Observed::default() }));
    let seen = observed.clone();
    let test_cloud = cloud.clone();
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        managed_node("node-a").await?;
        test_cloud.add(&provider_id("node-a"));
        registered_claim("claim-a", "node-a", "5m").await?;
        install(
            &client,
            &[
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                            "terminationGracePeriodSeconds": 5,
                            "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}}}),
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keeper", "namespace": "default",
                        "annotations": {"karpenter.sh/do-not-disrupt": "true"}},
                    "spec": {"terminationGracePeriodSeconds": 30,
                        "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}),
            ],
        )
        .await?;
        let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
        // Everything runs on node-a, the only node.
        for waited in 0.. {
            let list = pods.list(&ListParams::default()).await?;
            let on_a = list.items.iter().filter(|p| is_ready(p) && node_of(p) == "node-a").count();
            if on_a == 4 {
                break;
            }
            anyhow::ensure!(waited < 120, "only {on_a}/4 pods ready on node-a");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        plain_node("node-b").await?;
        let claims: Api<NodeClaim> = Api::all(client.clone());
        let nodes: Api<Node> = Api::all(client.clone());
        claims.delete("claim-a", &DeleteParams::default()).await?;
        for waited in 0.. {
            let claim = claims.get_opt("claim-a").await?;
            let node = nodes.get_opt("node-a").await?;
            let list = pods.list(&ListParams::default()).await?;
            let now = Time(SimClock.now());
            let finished = {
                let mut o = seen.lock().expect("observed");
                let web: Vec<&Pod> = list
                    .items
                    .iter()
                    .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get("app")).is_some())
                    .collect();
                o.web_ready_min = o.web_ready_min.min(web.iter().filter(|p| is_ready(p)).count());
                let terminating_on_a =
                    web.iter().filter(|p| node_of(p) == "node-a" && p.metadata.deletion_timestamp.is_some()).count();
                o.web_terminating_on_node_max = o.web_terminating_on_node_max.max(terminating_on_a);
                if o.web_left_node_by.is_none() && !web.iter().any(|p| node_of(p) == "node-a") {
                    o.web_left_node_by = Some(now);
                }
                if let Some(keeper) = list.items.iter().find(|p| p.metadata.name.as_deref() == Some("keeper"))
                    && let Some(at) = &keeper.metadata.deletion_timestamp
                    && o.keeper_deleted_at.is_none()
                {
                    o.keeper_deleted_at = Some(at.clone());
                    o.keeper_grace = keeper.metadata.deletion_grace_period_seconds;
                }
                if let Some(claim) = &claim {
                    o.claim_deleted_at = claim.metadata.deletion_timestamp.clone();
                    o.saw_deadline_annotation |= claim
                        .metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key("karpenter.sh/nodeclaim-termination-timestamp"));
                    let conditions = claim.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
                    o.saw_drained |= conditions.iter().any(|c| c.type_ == "Drained" && c.is_true());
                    o.saw_instance_terminating |=
                        conditions.iter().any(|c| c.type_ == "InstanceTerminating" && c.is_true());
                }
                if let Some(node) = &node {
                    o.saw_taint |= node.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|t| {
                        t.iter().any(|t| t.key == "karpenter.sh/disrupted" && t.effect == "NoSchedule")
                    });
                }
                o.finished = claim.is_none() && node.is_none();
                anyhow::ensure!(
                    o.finished || waited < 4 * 900,
                    "node-a or claim-a still present after 15 minutes: {o:?}"
                );
                o.finished
            };
            if finished {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");

    let o = observed.lock().expect("observed");
    assert!(o.finished);
    // The PDB (3 replicas, maxUnavailable 1) held at every sample: at most one web pod was ever
    // disrupted without a ready replacement. (An evicted pod may still be shutting down when the
    // next eviction is allowed, once its replacement is Ready, so terminating pods can overlap.)
    assert!(o.web_ready_min >= 2, "web had only {} ready pods at some point", o.web_ready_min);
    assert!(o.web_terminating_on_node_max >= 1, "web pods were evicted");
    assert!(o.saw_deadline_annotation && o.saw_taint && o.saw_drained && o.saw_instance_terminating, "{o:?}");
    // The do-not-disrupt pod stayed until deletion + TGP (5 min) − its grace (30 s).
    let deleted = o.claim_deleted_at.clone().expect("claim deletion time");
    let keeper = o.keeper_deleted_at.clone().expect("keeper was force-deleted");
    let web_gone = o.web_left_node_by.clone().expect("web pods left node-a");
    assert!(web_gone.0 < keeper.0, "web drained ({:?}) before the keeper was forced ({:?})", web_gone, keeper);
    // A pod's deletionTimestamp is when its grace runs out: the delete happened `grace` earlier.
    let grace = o.keeper_grace.expect("keeper deleted with a grace period");
    assert!((25..=30).contains(&grace), "keeper grace {grace}");
    let forced_after = keeper.0.duration_since(deleted.0).as_secs() - grace;
    assert!((270..=275).contains(&forced_after), "keeper forced {forced_after}s after deletion");
    // The instance was terminated through the cloud provider.
    assert!(!cloud.deletes().is_empty());
    let events = events.drain();
    let count = |reason: &str| events.iter().filter(|e| e.reason == reason).count();
    assert!(count("Evicted") >= 3, "{} Evicted events", count("Evicted"));
    assert_eq!(count("Disrupted"), 1, "the keeper's forced delete");
    // The drain was reported as failing while pods waited. The eviction queue's "violates a
    // PDB" report shares the node's dedupe key with it (core terminator/eviction.go publishes
    // NodeFailedToDrain, DedupeValues: node name), so Karpenter's recorder drops it within 2 min.
    // The drain took under 6 minutes (TGP 5 min), so at most three 2-minute windows.
    assert!((1..=3).contains(&count("FailedDraining")), "{} FailedDraining events", count("FailedDraining"));
}

#[test]
fn a_not_ready_node_whose_instance_is_gone_is_released_without_draining() {
    let (mut sim, _server, _trace) = cluster_world(12);
    let cloud = MemoryCloud::new(Arc::new(SimClock), Duration::from_secs(10));
    let events = EventRecorder::new();
    add_termination_host(&mut sim, cloud.clone(), events.clone());
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        managed_node("node-a").await?;
        // No instance in the cloud; the claim has no TGP, so a drain would wait for ever.
        registered_claim("claim-a", "node-a", "720h").await?;
        install(
            &client,
            &[json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keeper", "namespace": "default",
                    "annotations": {"karpenter.sh/do-not-disrupt": "true"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}})],
        )
        .await?;
        tokio::time::sleep(Duration::from_secs(10)).await;
        let nodes: Api<Node> = Api::all(client.clone());
        let not_ready = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        nodes.patch_status("node-a", &PatchParams::default(), &Patch::Merge(&not_ready)).await?;
        nodes.delete("node-a", &DeleteParams::default()).await?;
        let claims: Api<NodeClaim> = Api::all(client.clone());
        for waited in 0.. {
            if nodes.get_opt("node-a").await?.is_none() && claims.get_opt("claim-a").await?.is_none() {
                break;
            }
            anyhow::ensure!(waited < 120, "node-a or claim-a still present");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Ok::<_, anyhow::Error>(())
    };
    sim.client("test", async move { scenario.await.map_err(Into::into) });
    sim.run().expect("the simulation");
    assert!(events.drain().iter().all(|e| e.reason != "Evicted" && e.reason != "Disrupted"));
}
