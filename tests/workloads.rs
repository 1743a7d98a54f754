//! Workload manifests and waits the integration tests share: pause-container Deployments
//! labelled `app: <name>`, and polling the API server until their pods reach a state.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

/// A Deployment of `replicas` pause pods labelled `app: <name>` in `default`, each
/// requesting `cpu` and `memory`.
pub fn deployment(name: &str, replicas: u32, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
            }
        }
    })
}

/// `deployment` with required anti-affinity on hostname: one pod per node, so every pod
/// needs its own node and every node hosts one of them.
pub fn one_per_node(mut deployment: Value) -> Value {
    let app = deployment["metadata"]["name"].clone();
    deployment["spec"]["template"]["spec"]["affinity"] = json!({"podAntiAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    ]}});
    deployment
}

/// `deployment` with its pods' terminationGracePeriodSeconds set (drains finish sooner).
pub fn with_grace(mut deployment: Value, seconds: u32) -> Value {
    deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = json!(seconds);
    deployment
}

/// Phase Running and not being deleted.
pub fn is_running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") && pod.metadata.deletion_timestamp.is_none()
}

/// Running with the Ready condition True.
pub fn is_ready(pod: &Pod) -> bool {
    is_running(pod)
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The node a pod is bound to.
pub fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

/// The pods labelled `app: <app>` in `default`.
pub async fn app_pods(client: &kube::Client, app: &str) -> anyhow::Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    Ok(pods.list(&ListParams::default().labels(&format!("app={app}"))).await?.items)
}

/// Polls every 5 s until exactly `count` pods of `app` pass `state` (for example
/// [`is_running`] or [`is_ready`]); returns the nodes they are on. Fails after `limit`.
pub async fn wait_pods(
    client: &kube::Client,
    app: &str,
    count: usize,
    state: fn(&Pod) -> bool,
    limit: Duration,
) -> anyhow::Result<BTreeSet<String>> {
    let mut waited = Duration::ZERO;
    loop {
        let pods = app_pods(client, app).await?;
        let matching: Vec<&Pod> = pods.iter().filter(|p| state(p)).collect();
        if matching.len() == count {
            return Ok(matching.iter().filter_map(|p| node_of(p)).collect());
        }
        anyhow::ensure!(waited < limit, "{}/{count} {app} pods in the awaited state after {waited:?}", matching.len());
        tokio::time::sleep(Duration::from_secs(5)).await;
        waited += Duration::from_secs(5);
    }
}
