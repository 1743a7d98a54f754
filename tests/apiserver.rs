//! Conformance of the simulated API server, driven by an unmodified `kube::Client`
//! over the turmoil network: what the production controller will see.

use std::time::Duration;

use dovetail_tests::{apiserver_world, client};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

fn pod(name: &str, labels: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}
    }))
    .unwrap()
}

fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[test]
fn crud_round_trips_through_kube_client() {
    let (mut sim, _server, trace) = apiserver_world(1);
    sim.client("test", async {
        let pods: Api<Pod> = Api::default_namespaced(client());
        let created = pods.create(&PostParams::default(), &pod("web-1", json!({"app": "web"}))).await?;
        let meta = &created.metadata;
        assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
        assert_eq!(meta.generation, Some(1));
        assert_eq!(meta.creation_timestamp.as_ref().map(|t| t.0.to_string()).as_deref(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(created.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));

        let err = pods.create(&PostParams::default(), &pod("web-1", json!({}))).await.unwrap_err();
        assert_eq!(api_code(&err), Some(409));

        let got = pods.get("web-1").await?;
        assert_eq!(got.metadata.resource_version, created.metadata.resource_version);
        let list = pods.list(&ListParams::default()).await?;
        assert_eq!(list.items.len(), 1);

        let err = pods.get("missing").await.unwrap_err();
        assert_eq!(api_code(&err), Some(404));

        // Unscheduled pods are deleted at once.
        pods.delete("web-1", &DeleteParams::default()).await?;
        assert_eq!(api_code(&pods.get("web-1").await.unwrap_err()), Some(404));

        // Namespaced objects need their namespace.
        let other: Api<Pod> = Api::namespaced(client(), "nope");
        assert_eq!(api_code(&other.create(&PostParams::default(), &pod("x", json!({}))).await.unwrap_err()), Some(404));
        Ok(())
    });
    sim.run().unwrap();
    assert!(trace.render().contains("create       pods default/web-1"));
}

#[test]
fn stale_update_conflicts_and_generation_tracks_spec_only() {
    let (mut sim, _server, _) = apiserver_world(2);
    sim.client("test", async {
        let nodes: Api<Node> = Api::all(client());
        let n: Node = serde_json::from_value(
            json!({"metadata": {"name": "n1"}, "spec": {"providerID": "aws:///us-east-1a/i-1"}}),
        )?;
        let v1 = nodes.create(&PostParams::default(), &n).await?;

        let mut a = v1.clone();
        a.metadata.labels = Some([("x".to_string(), "1".to_string())].into());
        let v2 = nodes.replace("n1", &PostParams::default(), &a).await?;
        assert_eq!(v2.metadata.generation, Some(1), "metadata-only change keeps generation");

        let mut stale = v1.clone();
        stale.spec.as_mut().unwrap().unschedulable = Some(true);
        let err = nodes.replace("n1", &PostParams::default(), &stale).await.unwrap_err();
        assert_eq!(api_code(&err), Some(409));

        let mut b = v2.clone();
        b.spec.as_mut().unwrap().unschedulable = Some(true);
        let v3 = nodes.replace("n1", &PostParams::default(), &b).await?;
        assert_eq!(v3.metadata.generation, Some(2));

        // Status is a separate subresource: writes to the main resource don't touch it,
        // and status writes don't touch spec.
        let mut c = v3.clone();
        c.status = Some(serde_json::from_value(json!({"capacity": {"cpu": "2"}}))?);
        let v4 = nodes.replace("n1", &PostParams::default(), &c).await?;
        assert!(v4.status.as_ref().and_then(|s| s.capacity.as_ref()).is_none());
        let status = json!({"status": {"capacity": {"cpu": "2"}}, "spec": {"unschedulable": false}});
        let v5 = nodes.patch_status("n1", &PatchParams::default(), &Patch::Merge(&status)).await?;
        assert_eq!(v5.status.unwrap().capacity.unwrap()["cpu"].0, "2");
        assert_eq!(v5.spec.unwrap().unschedulable, Some(true));
        assert_eq!(v5.metadata.generation, Some(2));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn patch_types_and_server_side_apply() {
    let (mut sim, _server, _) = apiserver_world(3);
    sim.client("test", async {
        let nodes: Api<Node> = Api::all(client());
        let applied = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "1"}}});
        let n = nodes.patch("n1", &PatchParams::apply("dovetail"), &Patch::Apply(&applied)).await?;
        assert_eq!(n.metadata.labels.as_ref().unwrap()["a"], "1");

        let merge = json!({"metadata": {"labels": {"b": "2"}}});
        let n = nodes.patch("n1", &PatchParams::default(), &Patch::Merge(&merge)).await?;
        assert_eq!(n.metadata.labels.as_ref().unwrap().len(), 2);

        let ops: json_patch_ops::Patch = serde_json::from_value(json!([
            {"op": "add", "path": "/spec", "value": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
            {"op": "remove", "path": "/metadata/labels/a"}
        ]))?;
        let n = nodes.patch("n1", &PatchParams::default(), &Patch::<()>::Json(ops)).await?;
        assert_eq!(n.spec.unwrap().taints.unwrap()[0].key, "k");
        assert!(!n.metadata.labels.unwrap().contains_key("a"));

        let smp = json!({"metadata": {"labels": {"c": "3"}}});
        let n = nodes.patch("n1", &PatchParams::default(), &Patch::Strategic(&smp)).await?;
        assert_eq!(n.metadata.labels.unwrap()["c"], "3");

        // A failing JSON patch test is a 422 and changes nothing.
        let ops: json_patch_ops::Patch =
            serde_json::from_value(json!([{"op": "test", "path": "/metadata/name", "value": "other"}]))?;
        let err = nodes.patch("n1", &PatchParams::default(), &Patch::<()>::Json(ops)).await.unwrap_err();
        assert_eq!(api_code(&err), Some(422));
        Ok(())
    });
    sim.run().unwrap();
}

mod json_patch_ops {
    pub use json_patch::Patch;
}

#[test]
fn watcher_resumes_and_relists_after_410() {
    let (mut sim, server, _) = apiserver_world(4);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen2 = seen.clone();
    sim.client("watcher", async move {
        let pods: Api<Pod> = Api::default_namespaced(client());
        let mut stream = watcher(pods, watcher::Config::default()).boxed();
        let mut inits = 0;
        while let Some(ev) = stream.next().await {
            let ev = match ev {
                Ok(ev) => ev,
                // Watch errors are surfaced for backoff; the watcher then relists.
                Err(watcher::Error::WatchError(s)) => {
                    seen2.lock().unwrap().push(format!("error {}", s.code));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let line = match ev {
                watcher::Event::Init => {
                    inits += 1;
                    format!("init#{inits}")
                }
                watcher::Event::InitApply(p) => format!("init-apply {}", p.metadata.name.unwrap()),
                watcher::Event::InitDone => "init-done".to_string(),
                watcher::Event::Apply(p) => format!("apply {}", p.metadata.name.unwrap()),
                watcher::Event::Delete(p) => format!("delete {}", p.metadata.name.unwrap()),
            };
            seen2.lock().unwrap().push(line);
            if inits == 2 && seen2.lock().unwrap().last().map(String::as_str) == Some("init-done") {
                return Ok(());
            }
        }
        Ok(())
    });
    sim.client("writer", async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let pods: Api<Pod> = Api::default_namespaced(client());
        pods.create(&PostParams::default(), &pod("a", json!({}))).await?;
        pods.create(&PostParams::default(), &pod("b", json!({}))).await?;
        pods.delete("a", &DeleteParams::default()).await?;
        Ok(())
    });
    // After the writes, compact history and kill watches: the watcher must relist.
    let mut expired = false;
    while !sim.step().unwrap() {
        if !expired && sim.elapsed() > Duration::from_secs(5) {
            server.store.lock().unwrap().expire_watches();
            expired = true;
        }
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            "init#1",
            "init-done",
            "apply a",
            "apply b",
            "delete a",
            "error 410",
            "init#2",
            "init-apply b",
            "init-done"
        ],
        "{seen:?}"
    );
}

#[test]
fn eviction_honours_pod_disruption_budgets() {
    let (mut sim, server, _) = apiserver_world(5);
    sim.client("test", async {
        let pods: Api<Pod> = Api::default_namespaced(client());
        for name in ["w1", "w2"] {
            pods.create(&PostParams::default(), &pod(name, json!({"app": "web"}))).await?;
            let bound = json!({"spec": {"nodeName": "n1"}});
            // Bind through the binding subresource, as kube-scheduler does.
            let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": "n1"}});
            let req = http::Request::post(format!("/api/v1/namespaces/default/pods/{name}/binding"))
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&binding)?)?;
            client().request_text(req).await?;
            let _ = bound;
            let running = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
            pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&running)).await?;
        }
        assert_eq!(pods.get("w1").await?.spec.unwrap().node_name.as_deref(), Some("n1"));

        let pdbs: Api<PodDisruptionBudget> = Api::default_namespaced(client());
        let pdb: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": "web"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}
        }))?;
        pdbs.create(&PostParams::default(), &pdb).await?;
        // Status as the disruption controller would write it.
        let status = json!({"status": {"observedGeneration": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1}});
        pdbs.patch_status("web", &PatchParams::default(), &Patch::Merge(&status)).await?;

        pods.evict("w1", &EvictParams::default()).await?;
        let err = pods.evict("w2", &EvictParams::default()).await.unwrap_err();
        assert_eq!(api_code(&err), Some(429), "{err}");
        let pdb = pdbs.get("web").await?;
        let st = pdb.status.unwrap();
        assert_eq!(st.disruptions_allowed, 0);
        assert!(st.disrupted_pods.unwrap().contains_key("w1"));
        // w1 is bound, so it terminates gracefully (the kubelet would finish it).
        assert!(pods.get("w1").await?.metadata.deletion_timestamp.is_some());

        // A second PDB over the same pods makes eviction a 500.
        let mut second = pdb_named("web-2");
        second.metadata.resource_version = None;
        pdbs.create(&PostParams::default(), &second).await?;
        let err = pods.evict("w2", &EvictParams::default()).await.unwrap_err();
        assert_eq!(api_code(&err), Some(500), "{err}");
        Ok(())
    });
    sim.run().unwrap();
    let s = server.store.lock().unwrap();
    assert!(s.trace().render().contains("status       poddisruptionbudgets.policy default/web"));
}

fn pdb_named(name: &str) -> PodDisruptionBudget {
    serde_json::from_value(json!({
        "metadata": {"name": name}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    }))
    .unwrap()
}

#[test]
fn finalizers_delay_deletion_and_owners_collect_dependents() {
    let (mut sim, _server, _) = apiserver_world(6);
    sim.client("test", async {
        let nss: Api<Namespace> = Api::all(client());
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}}))?;
        nss.create(&PostParams::default(), &ns).await?;
        let nodes: Api<Node> = Api::all(client());
        let n: Node =
            serde_json::from_value(json!({"metadata": {"name": "n1", "finalizers": ["karpenter.sh/termination"]}}))?;
        let created = nodes.create(&PostParams::default(), &n).await?;

        nodes.delete("n1", &DeleteParams::default()).await?;
        let deleting = nodes.get("n1").await?;
        assert!(deleting.metadata.deletion_timestamp.is_some());
        // No new finalizers on an object being deleted.
        let add = json!({"metadata": {"finalizers": ["karpenter.sh/termination", "other"]}});
        assert_eq!(
            api_code(&nodes.patch("n1", &PatchParams::default(), &Patch::Merge(&add)).await.unwrap_err()),
            Some(422)
        );

        // A pod owned by the node is collected when the node goes.
        let pods: Api<Pod> = Api::namespaced(client(), "team");
        let mut p = pod("owned", json!({}));
        p.metadata.owner_references = Some(vec![serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node", "name": "n1", "uid": created.metadata.uid.clone().unwrap()
        }))?]);
        pods.create(&PostParams::default(), &p).await?;

        let clear = json!({"metadata": {"finalizers": null}});
        nodes.patch("n1", &PatchParams::default(), &Patch::Merge(&clear)).await?;
        assert_eq!(api_code(&nodes.get("n1").await.unwrap_err()), Some(404));
        assert_eq!(api_code(&pods.get("owned").await.unwrap_err()), Some(404));

        // Deleting a namespace deletes what is in it.
        pods.create(&PostParams::default(), &pod("inside", json!({}))).await?;
        nss.delete("team", &DeleteParams::default()).await?;
        assert_eq!(api_code(&pods.get("inside").await.unwrap_err()), Some(404));
        assert_eq!(api_code(&nss.get("team").await.unwrap_err()), Some(404));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn selectors_and_pagination() {
    let (mut sim, _server, _) = apiserver_world(7);
    sim.client("test", async {
        let pods: Api<Pod> = Api::default_namespaced(client());
        for i in 0..7 {
            let tier = if i % 2 == 0 { "web" } else { "batch" };
            pods.create(&PostParams::default(), &pod(&format!("p{i}"), json!({"tier": tier}))).await?;
        }
        let web = pods.list(&ListParams::default().labels("tier=web")).await?;
        assert_eq!(web.items.len(), 4);
        let not_web = pods.list(&ListParams::default().labels("tier notin (web)")).await?;
        assert_eq!(not_web.items.len(), 3);
        let one = pods.list(&ListParams::default().fields("metadata.name=p3")).await?;
        assert_eq!(one.items.len(), 1);

        let mut names = Vec::new();
        let mut lp = ListParams::default().limit(3);
        loop {
            let page = pods.list(&lp).await?;
            names.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
                _ => break,
            }
        }
        assert_eq!(names, ["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn injected_api_faults_reach_the_client_and_the_trace() {
    let (mut sim, server, trace) = apiserver_world(8);
    server.faults.lock().unwrap().throttle_rate = 1.0;
    sim.client("test", async {
        let pods: Api<Pod> = Api::default_namespaced(client());
        let err = pods.list(&ListParams::default()).await.unwrap_err();
        assert_eq!(api_code(&err), Some(429));
        Ok(())
    });
    sim.run().unwrap();
    assert!(trace.render().contains("fault     api-429      GET pods"), "{}", trace.render());
    assert_eq!(server.faults.lock().unwrap().injected.throttled, 1);
}

#[test]
fn streaming_list_watch_and_server_side_apply_conflicts() {
    let (mut sim, _server, _) = apiserver_world(9);
    sim.client("test", async {
        let nodes: Api<Node> = Api::all(client());
        nodes.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "n0"}}))?).await?;
        // sendInitialEvents: initial ADDED events then the initial-events-end bookmark.
        let mut stream = watcher(nodes.clone(), watcher::Config::default().streaming_lists()).boxed();
        let mut got = Vec::new();
        while let Some(ev) = stream.next().await {
            match ev? {
                watcher::Event::InitApply(n) => got.push(n.metadata.name.unwrap()),
                watcher::Event::InitDone => break,
                _ => {}
            }
        }
        assert_eq!(got, ["n0"]);

        let a = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "labels": {"team": "a"}}});
        nodes.patch("n0", &PatchParams::apply("alice"), &Patch::Apply(&a)).await?;
        let b = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "labels": {"team": "b"}}});
        let err = nodes.patch("n0", &PatchParams::apply("bob"), &Patch::Apply(&b)).await.unwrap_err();
        assert_eq!(api_code(&err), Some(409), "{err}");
        let n = nodes.patch("n0", &PatchParams::apply("bob").force(), &Patch::Apply(&b)).await?;
        assert_eq!(n.metadata.labels.unwrap()["team"], "b");
        let managers: Vec<String> = n.metadata.managed_fields.unwrap().into_iter().filter_map(|m| m.manager).collect();
        assert!(managers.contains(&"bob".to_string()), "{managers:?}");

        // dryRun stores nothing.
        let pods: Api<Pod> = Api::default_namespaced(client());
        pods.create(&PostParams { dry_run: true, ..Default::default() }, &pod("dry", json!({}))).await?;
        assert_eq!(api_code(&pods.get("dry").await.unwrap_err()), Some(404));
        Ok(())
    });
    sim.run().unwrap();
}

/// The scale subresource as `kubectl scale` and an HPA use it: discovery names its
/// autoscaling/v1 Scale kind, GET shows replicas and the selector string, a merge patch
/// sets the replicas, a stale resourceVersion conflicts and negative replicas are invalid.
#[test]
fn deployments_serve_the_scale_subresource() {
    use k8s_openapi::api::apps::v1::Deployment;
    let (mut sim, _server, _) = apiserver_world(11);
    sim.client("test", async {
        let discovery = client().list_api_group_resources("apps/v1").await?;
        let scale = discovery.resources.iter().find(|r| r.name == "deployments/scale").expect("deployments/scale listed");
        assert_eq!((scale.kind.as_str(), scale.group.as_deref(), scale.version.as_deref()), ("Scale", Some("autoscaling"), Some("v1")));

        let deployments: Api<Deployment> = Api::default_namespaced(client());
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "front"}},
                     "template": {"metadata": {"labels": {"app": "web", "tier": "front"}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
        }))?;
        deployments.create(&PostParams::default(), &d).await?;

        let s = deployments.get_scale("web").await?;
        assert_eq!(s.spec.as_ref().and_then(|s| s.replicas), Some(3));
        assert_eq!(s.status.as_ref().and_then(|s| s.selector.as_deref()), Some("app=web,tier=front"));

        let s = deployments
            .patch_scale("web", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 5}})))
            .await?;
        assert_eq!(s.spec.as_ref().and_then(|s| s.replicas), Some(5));
        assert_eq!(deployments.get("web").await?.spec.and_then(|s| s.replicas), Some(5));

        let stale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "1"}, "spec": {"replicas": 7}});
        let err = deployments.replace_scale("web", &PostParams::default(), &serde_json::from_value(stale)?).await.unwrap_err();
        assert_eq!(api_code(&err), Some(409));

        let negative = deployments
            .patch_scale("web", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": -1}})))
            .await
            .unwrap_err();
        assert_eq!(api_code(&negative), Some(422));
        assert_eq!(deployments.get("web").await?.spec.and_then(|s| s.replicas), Some(5), "nothing half-written");

        let fresh = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 0}});
        let s = deployments.replace_scale("web", &PostParams::default(), &serde_json::from_value(fresh)?).await?;
        assert_eq!(s.spec.as_ref().and_then(|s| s.replicas), None, "ScaleSpec.replicas is omitempty");
        assert_eq!(deployments.get("web").await?.spec.and_then(|s| s.replicas), Some(0));
        Ok(())
    });
    sim.run().unwrap();
}
