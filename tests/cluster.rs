//! The simulated cluster's actors working together: scheduling, kubelets, workload
//! controllers, PDB status and eviction, pod GC.

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_tests::{client, cluster_world, ready_node};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, EvictParams, ListParams, PostParams};
use serde_json::json;

async fn add_nodes(nodes: &[(&str, &str, u32)]) -> anyhow::Result<()> {
    let api: Api<Node> = Api::all(client());
    for (name, zone, cpu) in nodes {
        let n = ready_node(name, zone, *cpu, 16);
        let created = api.create(&PostParams::default(), &n).await?;
        let mut with_status = created.clone();
        with_status.status = n.status.clone();
        api.replace_status(name, &PostParams::default(), &with_status).await?;
    }
    Ok(())
}

fn deployment(name: &str, replicas: i32, cpu: &str, spread: bool) -> Deployment {
    let mut spec = json!({"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]});
    if spread {
        spec["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": name}}}]);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}
    }))
    .unwrap()
}

async fn running_by_zone(app: &str) -> anyhow::Result<BTreeMap<String, usize>> {
    let pods: Api<Pod> = Api::default_namespaced(client());
    let nodes: Api<Node> = Api::all(client());
    let zone_of: BTreeMap<String, String> = nodes
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|n| {
            let zone = n.metadata.labels.as_ref().unwrap()["topology.kubernetes.io/zone"].clone();
            (n.metadata.name.unwrap(), zone)
        })
        .collect();
    let mut out = BTreeMap::new();
    for p in pods.list(&ListParams::default().labels(&format!("app={app}"))).await?.items {
        if p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") {
            let node = p.spec.unwrap().node_name.unwrap();
            *out.entry(zone_of[&node].clone()).or_default() += 1;
        }
    }
    Ok(out)
}

/// Pods of `app` that are Ready and not terminating.
async fn ready_pods(app: &str) -> anyhow::Result<usize> {
    let pods: Api<Pod> = Api::default_namespaced(client());
    let ready = pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await?
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count();
    Ok(ready)
}

#[test]
fn zone_spread_deployment_lands_evenly_and_runs() {
    let (mut sim, _server, _) = cluster_world(11);
    sim.client("test", async {
        add_nodes(&[
            ("a1", "us-east-1a", 8),
            ("b1", "us-east-1b", 8),
            ("c1", "us-east-1c", 8),
            ("a2", "us-east-1a", 8),
        ])
        .await?;
        let deploys: Api<Deployment> = Api::default_namespaced(client());
        deploys.create(&PostParams::default(), &deployment("web", 9, "250m", true)).await?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let by_zone = running_by_zone("web").await?;
        assert_eq!(by_zone.values().copied().collect::<Vec<_>>(), vec![3, 3, 3], "{by_zone:?}");
        let d = deploys.get("web").await?;
        assert_eq!(d.status.unwrap().ready_replicas, Some(9));
        Ok(())
    });
    sim.run().unwrap();
}

/// The `watchExpiry` fault ends every watch with 410 Gone, the actors' own included: they
/// relist and carry on (a workload created and a node added after the expiry are both seen),
/// where they once went deaf for the rest of the run (generated story 127992462: no Node
/// ever joined after the fault, so stuckNodeClaim and convergence fired).
#[test]
fn the_cluster_actors_relist_after_their_watches_expire() {
    let (mut sim, server, _) = cluster_world(13);
    sim.client("test", async move {
        add_nodes(&[("a1", "us-east-1a", 4)]).await?;
        let deploys: Api<Deployment> = Api::default_namespaced(client());
        deploys.create(&PostParams::default(), &deployment("web", 2, "250m", false)).await?;
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(running_by_zone("web").await?.values().sum::<usize>(), 2);
        server.store.lock().unwrap().expire_watches();
        tokio::time::sleep(Duration::from_secs(1)).await;
        add_nodes(&[("b1", "us-east-1b", 8)]).await?;
        // Three 3-CPU pods: one fits beside web on a1, two on b1.
        deploys.create(&PostParams::default(), &deployment("late", 3, "3", false)).await?;
        tokio::time::sleep(Duration::from_secs(20)).await;
        let by_zone = running_by_zone("late").await?;
        assert_eq!(by_zone.values().copied().collect::<Vec<_>>(), vec![1, 2], "{by_zone:?}");
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_pod_that_fits_nowhere_is_marked_unschedulable_with_the_reason() {
    let (mut sim, _server, _) = cluster_world(12);
    sim.client("test", async {
        add_nodes(&[("a1", "us-east-1a", 2), ("b1", "us-east-1b", 2)]).await?;
        let pods: Api<Pod> = Api::default_namespaced(client());
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "huge"}, "spec": {"containers": [
            {"name": "app", "image": "x", "resources": {"requests": {"cpu": "64"}}}]}}))?;
        pods.create(&PostParams::default(), &pod).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let p = pods.get("huge").await?;
        let cond = p.status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "PodScheduled").unwrap();
        assert_eq!((cond.status.as_str(), cond.reason.as_deref()), ("False", Some("Unschedulable")));
        assert_eq!(
            cond.message.as_deref(),
            Some("0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn eviction_under_a_pdb_removes_one_pod_at_a_time_while_replacements_schedule() {
    let (mut sim, _server, _) = cluster_world(13);
    sim.client("test", async {
        add_nodes(&[("a1", "us-east-1a", 8), ("b1", "us-east-1b", 8)]).await?;
        let deploys: Api<Deployment> = Api::default_namespaced(client());
        deploys.create(&PostParams::default(), &deployment("web", 4, "100m", false)).await?;
        let pdbs: Api<PodDisruptionBudget> = Api::default_namespaced(client());
        let pdb = serde_json::from_value(json!({"metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))?;
        pdbs.create(&PostParams::default(), &pdb).await?;
        tokio::time::sleep(Duration::from_secs(20)).await;

        let pods: Api<Pod> = Api::default_namespaced(client());
        let originals: Vec<String> = pods
            .list(&ListParams::default().labels("app=web"))
            .await?
            .items
            .into_iter()
            .map(|p| p.metadata.name.unwrap())
            .collect();
        assert_eq!(originals.len(), 4);
        let (mut evicted, mut refused) = (0, 0);
        for name in &originals {
            loop {
                match pods.evict(name, &EvictParams::default()).await {
                    Ok(_) => {
                        evicted += 1;
                        break;
                    }
                    Err(kube::Error::Api(s)) if s.code == 429 => {
                        refused += 1;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            // Never more than one pod of four unavailable.
            let ready = ready_pods("web").await?;
            assert!(ready >= 3, "only {ready} ready after evicting {name}");
        }
        assert_eq!(evicted, 4);
        assert!(refused > 0, "the PDB should have refused some evictions while replacements started");
        tokio::time::sleep(Duration::from_secs(30)).await;
        let now: Vec<String> = pods
            .list(&ListParams::default().labels("app=web"))
            .await?
            .items
            .into_iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .map(|p| p.metadata.name.unwrap())
            .collect();
        assert_eq!(now.len(), 4);
        assert!(now.iter().all(|n| !originals.contains(n)));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn losing_a_node_recreates_its_pods_elsewhere_and_jobs_complete() {
    let (mut sim, _server, _) = cluster_world(14);
    sim.client("test", async {
        add_nodes(&[("a1", "us-east-1a", 8), ("b1", "us-east-1b", 8)]).await?;
        let deploys: Api<Deployment> = Api::default_namespaced(client());
        deploys.create(&PostParams::default(), &deployment("web", 6, "100m", false)).await?;
        let jobs: Api<Job> = Api::default_namespaced(client());
        let job =
            serde_json::from_value(json!({"metadata": {"name": "batch"}, "spec": {"completions": 3, "parallelism": 2,
            "template": {"metadata": {"annotations": {"dovetail.dev/run-duration": "2m"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "busybox"}]}}}}))?;
        jobs.create(&PostParams::default(), &job).await?;
        tokio::time::sleep(Duration::from_secs(20)).await;
        let before = running_by_zone("web").await?;
        assert_eq!(before.values().sum::<usize>(), 6);

        let nodes: Api<Node> = Api::all(client());
        nodes.delete("a1", &DeleteParams::default()).await?;
        tokio::time::sleep(Duration::from_secs(20)).await;
        let after = running_by_zone("web").await?;
        assert_eq!(after, BTreeMap::from([("us-east-1b".to_string(), 6)]));

        tokio::time::sleep(Duration::from_secs(300)).await;
        let j = jobs.get("batch").await?.status.unwrap();
        assert_eq!(j.succeeded, Some(3), "{j:?}");
        assert!(j.conditions.unwrap().iter().any(|c| c.type_ == "Complete" && c.status == "True"));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn nodes_follow_instances_and_a_killed_instance_moves_its_pods() {
    use base64::Engine as _;
    use dovetail_fakecloud::cloud::lock;
    use dovetail_fakecloud::{LaunchTemplateRef, LaunchTemplateSpec, RunInstancesRequest};
    let (mut sim, _server, cloud) = dovetail_tests::cloud_world(15);
    let user_data = base64::engine::general_purpose::STANDARD.encode(
        "spec:\n  kubelet:\n    flags:\n    - --node-labels=\"team=web\"\n    - --register-with-taints=\"example.com/startup:NoSchedule\"\n",
    );
    let ids: Vec<String> = {
        let mut c = lock(&cloud);
        let image = c.images().images.keys().next().cloned();
        let lt = c
            .create_launch_template(LaunchTemplateSpec {
                name: "web".into(),
                user_data: Some(user_data),
                ..Default::default()
            })
            .unwrap();
        let mut ids = Vec::new();
        for zone in ["us-east-1a", "us-east-1b"] {
            let out = c
                .run_instances(&RunInstancesRequest {
                    instance_type: Some("m5.large".into()),
                    image_id: image.clone(),
                    min_count: 1,
                    max_count: 1,
                    availability_zone: Some(zone.into()),
                    launch_template: Some(LaunchTemplateRef::Id(lt.id.clone())),
                    ..Default::default()
                })
                .unwrap();
            ids.extend(out.instance_ids.iter().cloned());
        }
        ids
    };
    let cloud2 = cloud.clone();
    sim.client("test", async move {
        tokio::time::sleep(Duration::from_secs(120)).await;
        let nodes: Api<Node> = Api::all(client());
        let list = nodes.list(&ListParams::default().labels("team=web")).await?.items;
        assert_eq!(list.len(), 2, "both instances registered as nodes");
        for n in &list {
            let labels = n.metadata.labels.as_ref().unwrap();
            assert_eq!(labels["node.kubernetes.io/instance-type"], "m5.large");
            assert!(n.spec.as_ref().unwrap().provider_id.as_ref().unwrap().starts_with("aws:///us-east-1"));
            assert!(
                n.spec.as_ref().unwrap().taints.as_ref().is_none_or(|t| t.is_empty()),
                "startup taint removed by the agent"
            );
            assert_eq!(n.status.as_ref().unwrap().allocatable.as_ref().unwrap()["pods"].0, "29");
        }
        let deploys: Api<Deployment> = Api::default_namespaced(client());
        deploys.create(&PostParams::default(), &deployment("web", 4, "100m", true)).await?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(running_by_zone("web").await?.values().sum::<usize>(), 4);

        // The instance in us-east-1a dies: its node goes and its pods come back in 1b.
        let dead = ids[0].clone();
        lock(&cloud2).terminate_instances(&[dead]).unwrap();
        tokio::time::sleep(Duration::from_secs(180)).await;
        assert_eq!(nodes.list(&ListParams::default().labels("team=web")).await?.items.len(), 1);
        // With no node left in us-east-1a, that zone is no spread domain: all four pods
        // run in us-east-1b, recreated by their ReplicaSet.
        assert_eq!(running_by_zone("web").await?, BTreeMap::from([("us-east-1b".to_string(), 4)]));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn daemonsets_cover_every_node_and_deployments_roll_within_their_budget() {
    let (mut sim, _server, _) = cluster_world(16);
    sim.client("test", async {
        add_nodes(&[("a1", "us-east-1a", 4), ("b1", "us-east-1b", 4), ("c1", "us-east-1c", 4)]).await?;
        let ds: Api<k8s_openapi::api::apps::v1::DaemonSet> = Api::default_namespaced(client());
        let daemon = serde_json::from_value(json!({"metadata": {"name": "logs"}, "spec": {
            "selector": {"matchLabels": {"app": "logs"}},
            "template": {"metadata": {"labels": {"app": "logs"}}, "spec": {"containers": [
                {"name": "fluent", "image": "fluent-bit", "resources": {"requests": {"cpu": "100m"}}}]}}}}))?;
        ds.create(&PostParams::default(), &daemon).await?;
        let deploys: Api<Deployment> = Api::default_namespaced(client());
        deploys.create(&PostParams::default(), &deployment("web", 4, "100m", false)).await?;
        tokio::time::sleep(Duration::from_secs(20)).await;
        let status = ds.get("logs").await?.status.unwrap();
        assert_eq!((status.desired_number_scheduled, status.number_ready), (3, 3));
        let pods: Api<Pod> = Api::default_namespaced(client());
        let mut nodes: Vec<String> = pods
            .list(&ListParams::default().labels("app=logs"))
            .await?
            .items
            .into_iter()
            .map(|p| p.spec.unwrap().node_name.unwrap())
            .collect();
        nodes.sort();
        assert_eq!(nodes, ["a1", "b1", "c1"]);

        // Change the template: a new ReplicaSet takes over, never dropping below
        // replicas - maxUnavailable (4 - 1) ready pods.
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2",
            "resources": {"requests": {"cpu": "100m"}}}]}}}});
        deploys.patch("web", &kube::api::PatchParams::default(), &kube::api::Patch::Strategic(&patch)).await?;
        let mut min_ready = usize::MAX;
        for _ in 0..60 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let ready = ready_pods("web").await?;
            min_ready = min_ready.min(ready);
        }
        assert!(min_ready >= 3, "ready pods fell to {min_ready} during the rollout");
        let d = deploys.get("web").await?.status.unwrap();
        assert_eq!((d.updated_replicas, d.ready_replicas), (Some(4), Some(4)), "{d:?}");
        let images: Vec<String> = pods
            .list(&ListParams::default().labels("app=web"))
            .await?
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| p.spec.unwrap().containers[0].image.clone().unwrap())
            .collect();
        assert_eq!(images, ["nginx:2"; 4]);
        Ok(())
    });
    sim.run().unwrap();
}
