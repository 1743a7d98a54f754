//! Voluntary disruption in the simulated world: the production controller consolidates an
//! over-provisioned cluster down to a cost a careful human would reach, within budgets, never
//! through a PDB or a do-not-disrupt pod, never moving a pod that fits nowhere else, waiting
//! out consolidateAfter, without churn once settled, and with WhenEmpty only deleting empty
//! nodes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use dovetail_controller::apis::NodeClaim;
use dovetail_controller::apis::condition::StatusConditions;
use dovetail_fakecloud::cloud::{SharedCloud, lock};
use dovetail_tests::workloads::{deployment, is_ready, is_running, wait_pods};
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;

/// A bare pod (no controller), optionally with `karpenter.sh/do-not-disrupt: "true"`.
fn bare_pod(name: &str, cpu: &str, memory: &str, do_not_disrupt: bool) -> serde_json::Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    });
    if do_not_disrupt {
        pod["metadata"]["annotations"] = json!({"karpenter.sh/do-not-disrupt": "true"});
    }
    pod
}

/// The general-purpose on-demand pool and class, with `disruption` as the pool's block.
fn manifests(disruption: serde_json::Value) -> Vec<serde_json::Value> {
    let mut objects = general_purpose(&["on-demand"], None);
    objects[1]["spec"]["disruption"] = disruption;
    objects
}

async fn scale(client: &kube::Client, name: &str, replicas: u32) -> anyhow::Result<()> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.patch(name, &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": replicas}}))).await?;
    Ok(())
}

/// Scales `name` through `steps` replicas, waiting for each step to run, so that every step
/// launches its own node(s) and the cluster ends up with several nodes to consolidate.
async fn scale_in_steps(client: &kube::Client, name: &str, steps: &[u32]) -> anyhow::Result<()> {
    for &replicas in steps {
        scale(client, name, replicas).await?;
        wait_running(client, name, replicas as usize, Duration::from_secs(900)).await?;
    }
    Ok(())
}

/// Waits until `count` pods with label `app` run.
async fn wait_running(client: &kube::Client, app: &str, count: usize, limit: Duration) -> anyhow::Result<()> {
    wait_pods(client, app, count, is_running, limit).await.map(|_| ())
}

/// One look at the cluster through the API server.
struct Look {
    claims: Vec<NodeClaim>,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
}

async fn look(client: &kube::Client) -> anyhow::Result<Look> {
    let claims: Api<NodeClaim> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    Ok(Look {
        claims: claims.list(&ListParams::default()).await?.items,
        nodes: nodes.list(&ListParams::default()).await?.items,
        pods: pods.list(&ListParams::default()).await?.items,
    })
}

impl Look {
    /// NodeClaims disrupting now: deleting (until the instance is terminating) or their Node
    /// tainted `karpenter.sh/disrupted` — the nodes a budget counts.
    fn disrupting(&self) -> BTreeSet<String> {
        let tainted: BTreeSet<&str> = self
            .nodes
            .iter()
            .filter(|n| {
                n.metadata.deletion_timestamp.is_some()
                    || n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_some_and(|ts| ts.iter().any(|t| t.key == "karpenter.sh/disrupted"))
            })
            .filter_map(|n| n.metadata.name.as_deref())
            .collect();
        self.claims
            .iter()
            .filter(|c| {
                let node = c.status.as_ref().and_then(|s| s.node_name.as_deref());
                let deleting = c.metadata.deletion_timestamp.is_some() && !c.is_condition_true("InstanceTerminating");
                deleting || node.is_some_and(|n| tainted.contains(n))
            })
            .filter_map(|c| c.metadata.name.clone())
            .collect()
    }

    /// The node a pod runs on.
    fn node_of(&self, pod_name: &str) -> Option<(String, String)> {
        self.pods.iter().find(|p| p.metadata.name.as_deref() == Some(pod_name) && is_running(p)).map(|p| {
            (
                p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default(),
                p.metadata.uid.clone().unwrap_or_default(),
            )
        })
    }

    fn ready(&self, app: &str) -> usize {
        self.pods
            .iter()
            .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str) == Some(app))
            .filter(|p| is_ready(p))
            .count()
    }
}

/// Running instances and their hourly on-demand cost, from the fake cloud's own catalog.
fn running_cost(cloud: &SharedCloud) -> (usize, f64, BTreeMap<String, usize>) {
    let cloud = lock(cloud);
    let mut types = BTreeMap::new();
    let mut cost = 0.0;
    let mut count = 0;
    for instance in cloud.instances().filter(|i| i.state.name() == "running") {
        count += 1;
        *types.entry(instance.instance_type.clone()).or_default() += 1;
        cost += cloud.catalog().get(&instance.instance_type).and_then(|t| t.on_demand_price).unwrap_or(0.0);
    }
    (count, cost, types)
}

/// The allowed types of `general_purpose` as (vCPU, GiB, $/h), from the fake cloud's catalog.
fn allowed_types(cloud: &SharedCloud) -> Vec<(f64, f64, f64)> {
    let cloud = lock(cloud);
    cloud
        .catalog()
        .types()
        .filter(|t| t.arch == "amd64" && t.family.starts_with(['c', 'm', 'r']) && t.gpu_count == 0)
        .filter(|t| t.family.chars().nth(1).and_then(|c| c.to_digit(10)).is_some_and(|g| g > 2))
        .filter_map(|t| Some((f64::from(t.vcpu), t.memory_mib as f64 / 1024.0, t.on_demand_price?)))
        .collect()
}

/// The LP lower bound over `(cpu, memory, price)` types: the invariant checker's own bound.
fn lp_lower_bound(types: &[(f64, f64, f64)], cpu: f64, mem: f64) -> f64 {
    use dovetail_sim::invariants::cost_bound::{Supply, lower_bound};
    use dovetail_sim::invariants::resources::Resources;
    let supply: Vec<Supply> = types
        .iter()
        .map(|&(c, m, price)| Supply { capacity: Resources { cpu: c, memory: m, pods: 0.0 }, price })
        .collect();
    lower_bound(&supply, &Resources { cpu, memory: mem, pods: 0.0 }).expect("an allowed type covers the demand")
}

/// The cheapest single allowed type that holds `cpu` vCPUs and `mem` GiB plus ~10% kubelet
/// overhead (what a careful human would run the workload on as one node).
fn cheapest_fit(types: &[(f64, f64, f64)], cpu: f64, mem: f64) -> f64 {
    types.iter().filter(|(c, m, _)| *c >= cpu * 1.1 && *m >= mem * 1.1).map(|t| t.2).fold(f64::MAX, f64::min)
}

async fn events(client: &kube::Client) -> anyhow::Result<Vec<Event>> {
    let api: Api<Event> = Api::all(client.clone());
    Ok(api.list(&ListParams::default()).await?.items)
}

#[test]
fn consolidation_reaches_a_careful_cost_without_breaking_pdbs_or_do_not_disrupt() {
    let (mut sim, _server, cloud) = karpenter_world_for(3, Duration::from_secs(2 * 3600));
    let shared = cloud.clone();
    let scenario = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &manifests(json!({"consolidateAfter": "30s"}))).await?;
        install(&client, &[bare_pod("pinned", "250m", "256Mi", true)]).await?;
        wait_running(&client, "pinned", 1, Duration::from_secs(300)).await?;
        install(&client, &[deployment("web", 8, "1", "2Gi")]).await?;
        wait_running(&client, "web", 8, Duration::from_secs(900)).await?;
        scale_in_steps(&client, "web", &[16, 24, 32, 40]).await?;
        install(
            &client,
            &[json!({
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"minAvailable": 6, "selector": {"matchLabels": {"app": "web"}}}
            })],
        )
        .await?;
        wait_running(&client, "web", 40, Duration::from_secs(900)).await?;
        wait_running(&client, "pinned", 1, Duration::from_secs(300)).await?;
        let before = running_cost(&shared);
        eprintln!("before scale-down: {} instances, ${:.3}/h {:?}", before.0, before.1, before.2);
        let first = look(&client).await?;
        let pinned = first.node_of("pinned").expect("pinned runs");
        let pinned_type = first
            .nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(pinned.0.as_str()))
            .and_then(|n| n.metadata.labels.as_ref()?.get("node.kubernetes.io/instance-type").cloned())
            .unwrap_or_default();
        // ~20% utilisation.
        scale(&client, "web", 8).await?;
        wait_running(&client, "web", 8, Duration::from_secs(300)).await?;
        let mut min_ready = usize::MAX;
        for _ in 0..(45 * 60 / 5) {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let now = look(&client).await?;
            min_ready = min_ready.min(now.ready("web"));
            anyhow::ensure!(now.node_of("pinned") == Some(pinned.clone()), "the do-not-disrupt pod moved");
        }
        anyhow::ensure!(min_ready >= 6, "the PDB (minAvailable 6) was violated: only {min_ready} ready");
        let evicted: Vec<Event> = events(&client)
            .await?
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some("pinned") && e.reason.as_deref() == Some("Evicted"))
            .collect();
        anyhow::ensure!(evicted.is_empty(), "the do-not-disrupt pod was evicted: {evicted:?}");
        eprintln!("web ready never dropped below {min_ready}; pinned on {pinned_type}");
        Ok::<_, anyhow::Error>(pinned_type)
    };
    let pinned_type = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let out = pinned_type.clone();
    sim.client("test", async move {
        *out.lock().expect("lock") = scenario.await?;
        Ok(())
    });
    sim.run().expect("the simulation");
    let (count, cost, types) = running_cost(&cloud);
    let allowed = allowed_types(&cloud);
    let pinned_type = pinned_type.lock().expect("lock").clone();
    let pinned_price =
        lock(&cloud).catalog().get(&pinned_type).and_then(|t| t.on_demand_price).expect("pinned node price");
    // 8 × (1 vCPU, 2 GiB) + the pinned pod: the LP bound ignores overhead and bin packing; the
    // careful human puts everything on the cheapest single node that fits.
    let lp = lp_lower_bound(&allowed, 8.25, 16.25);
    let human = cheapest_fit(&allowed, 8.25, 16.25);
    // The do-not-disrupt pod pins whatever node it landed on, so a careful human either fits
    // everything on one node or keeps the pinned node and fits the web pods beside it.
    let with_pinned = pinned_price + cheapest_fit(&allowed, 8.0, 16.0);
    let careful = with_pinned.min(human.max(pinned_price)).max(lp);
    eprintln!(
        "after: {count} instances {types:?} ${cost:.3}/h; LP bound ${lp:.3}/h, one-node fit ${human:.3}/h, \
         pinned {pinned_type} + fit ${with_pinned:.3}/h; ratio {:.2}",
        cost / careful
    );
    assert!(cost <= 1.5 * careful, "${cost:.3}/h is more than 1.5 × a careful ${careful:.3}/h");
}

/// Controller logs on stderr when `RUST_LOG` is set (e.g. `dovetail_controller::disruption=debug`).
fn init_logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .without_time()
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// Runs `scenario` in a fresh world with `seed` and returns what it returned.
fn run<T: Send + 'static>(
    seed: u64,
    scenario: impl std::future::Future<Output = anyhow::Result<T>> + 'static,
) -> (T, SharedCloud) {
    run_for(seed, Duration::from_secs(2 * 3600), scenario)
}

/// [`run`] with a simulation allowed to last `duration` of simulated time.
fn run_for<T: Send + 'static>(
    seed: u64,
    duration: Duration,
    scenario: impl std::future::Future<Output = anyhow::Result<T>> + 'static,
) -> (T, SharedCloud) {
    init_logs();
    let (mut sim, _server, cloud) = karpenter_world_for(seed, duration);
    let out = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = out.clone();
    sim.client("test", async move {
        let value = scenario.await?;
        *slot.lock().expect("lock") = Some(value);
        Ok(())
    });
    sim.run().expect("the simulation");
    let value = out.lock().expect("lock").take().expect("the scenario finished");
    (value, cloud)
}

async fn setup(client: &kube::Client, disruption: serde_json::Value) -> anyhow::Result<()> {
    install(client, &karpenter_crds()).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    install(client, &manifests(disruption)).await
}

#[test]
fn a_budget_of_one_node_never_has_two_nodes_disrupting() {
    let ((max, total, nodes_before, nodes_after), _) = run(5, async move {
        let client = client();
        setup(&client, json!({"consolidateAfter": "30s", "budgets": [{"nodes": "1"}]})).await?;
        install(&client, &[deployment("a", 6, "1", "2Gi"), deployment("b", 12, "500m", "1Gi")]).await?;
        wait_running(&client, "a", 6, Duration::from_secs(900)).await?;
        wait_running(&client, "b", 12, Duration::from_secs(900)).await?;
        scale_in_steps(&client, "a", &[12, 18, 24]).await?;
        let nodes_before = look(&client).await?.nodes.len();
        scale(&client, "a", 4).await?;
        scale(&client, "b", 3).await?;
        let mut max = 0;
        let mut seen = BTreeSet::new();
        for _ in 0..(40 * 60) {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let disrupting = look(&client).await?.disrupting();
            max = max.max(disrupting.len());
            anyhow::ensure!(disrupting.len() <= 1, "two nodes disrupting at once: {disrupting:?}");
            seen.extend(disrupting);
        }
        let nodes_after = look(&client).await?.nodes.len();
        Ok((max, seen.len(), nodes_before, nodes_after))
    });
    eprintln!("nodes {nodes_before} → {nodes_after}; {total} disrupted one at a time (max concurrent {max})");
    assert_eq!(max, 1);
    assert!(total >= 2, "at least two nodes were consolidated, one at a time: {total}");
    assert!(nodes_after < nodes_before, "consolidation happened");
}

#[test]
fn a_node_whose_pod_fits_nowhere_else_is_never_consolidated() {
    let ((big_node, survived, nodes), _) = run(9, async move {
        let client = client();
        setup(&client, json!({"consolidateAfter": "30s"})).await?;
        install(&client, &[bare_pod("big", "3", "4Gi", false)]).await?;
        wait_running(&client, "big", 1, Duration::from_secs(600)).await?;
        install(&client, &[deployment("small", 3, "1", "1Gi")]).await?;
        wait_running(&client, "small", 3, Duration::from_secs(600)).await?;
        let big = look(&client).await?.node_of("big").expect("big runs");
        scale(&client, "small", 1).await?;
        let mut survived = true;
        for _ in 0..(30 * 60 / 5) {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let now = look(&client).await?;
            survived &= now.node_of("big") == Some(big.clone()) && !now.disrupting().contains(&big.0);
        }
        Ok((big.0, survived, look(&client).await?.nodes.len()))
    });
    eprintln!("big pod stayed on {big_node}; {nodes} nodes at the end");
    assert!(survived, "the node of the pod that fits nowhere else was disrupted");
}

#[test]
fn consolidate_after_ten_minutes_waits_ten_simulated_minutes() {
    let ((scaled_at, first_disruption), _) = run(13, async move {
        let client = client();
        setup(&client, json!({"consolidateAfter": "10m"})).await?;
        install(&client, &[deployment("a", 12, "1", "2Gi")]).await?;
        wait_running(&client, "a", 12, Duration::from_secs(900)).await?;
        let start = tokio::time::Instant::now();
        scale(&client, "a", 2).await?;
        let scaled_at = start.elapsed();
        let mut first = None;
        for _ in 0..(25 * 60 / 2) {
            tokio::time::sleep(Duration::from_secs(2)).await;
            if !look(&client).await?.disrupting().is_empty() {
                first = Some(start.elapsed());
                break;
            }
        }
        Ok((scaled_at, first))
    });
    let first = first_disruption.expect("consolidation eventually acted");
    eprintln!("scaled down at {scaled_at:?}, first disruption {first:?} later");
    assert!(first >= Duration::from_secs(600), "disrupted after only {first:?}");
    assert!(first <= Duration::from_secs(900), "took {first:?}");
}

/// `deployment` with its pods spread evenly over zones (maxSkew 1, DoNotSchedule), so the
/// settled cluster keeps a node in every zone and consolidation has several nodes to weigh.
fn zone_spread(mut deployment: serde_json::Value) -> serde_json::Value {
    let app = deployment["metadata"]["name"].clone();
    deployment["spec"]["template"]["spec"]["topologySpreadConstraints"] = json!([{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}}
    }]);
    deployment
}

/// Consolidation actions (NodeClaims deleted by disruption) in the two simulated hours after a
/// steady workload settled for 40 minutes.
fn churn(seed: u64) -> (usize, usize) {
    // Provisioning, 40 minutes settling and two hours watching: four simulated hours suffice.
    let (counts, _) = run_for(seed, Duration::from_secs(4 * 3600), async move {
        let client = client();
        setup(&client, json!({"consolidateAfter": "30s"})).await?;
        install(
            &client,
            &[
                deployment("a", 5, "700m", "1536Mi"),
                deployment("b", 9, "1500m", "3Gi"),
                zone_spread(deployment("c", 30, "250m", "512Mi")),
            ],
        )
        .await?;
        wait_running(&client, "c", 30, Duration::from_secs(900)).await?;
        wait_running(&client, "a", 5, Duration::from_secs(900)).await?;
        scale_in_steps(&client, "a", &[10, 15, 20]).await?;
        scale(&client, "a", 11).await?;
        tokio::time::sleep(Duration::from_secs(40 * 60)).await;
        let settled: BTreeSet<String> =
            look(&client).await?.claims.iter().filter_map(|c| c.metadata.name.clone()).collect();
        let mut disrupted = BTreeSet::new();
        for _ in 0..(2 * 3600 / 10) {
            tokio::time::sleep(Duration::from_secs(10)).await;
            disrupted.extend(look(&client).await?.disrupting());
        }
        Ok((settled.len(), disrupted.len()))
    });
    counts
}

#[test]
fn a_steady_workload_does_not_churn_after_settling() {
    for seed in [17, 2, 31] {
        let (nodes, actions) = churn(seed);
        eprintln!("seed {seed}: {nodes} nodes settled, {actions} disrupted in the next two hours");
        assert!(actions <= 2, "seed {seed}: {actions} disruptions in two hours of a steady workload");
    }
}

#[test]
fn when_empty_only_deletes_empty_nodes() {
    let ((terminating, nodes_before, nodes_after), _) = run(19, async move {
        let client = client();
        setup(&client, json!({"consolidateAfter": "30s", "consolidationPolicy": "WhenEmpty"})).await?;
        install(&client, &[deployment("a", 4, "1", "2Gi")]).await?;
        wait_running(&client, "a", 4, Duration::from_secs(900)).await?;
        scale_in_steps(&client, "a", &[8, 12, 16]).await?;
        let nodes_before = look(&client).await?.nodes.len();
        scale(&client, "a", 5).await?;
        tokio::time::sleep(Duration::from_secs(30 * 60)).await;
        let terminating: Vec<String> = events(&client)
            .await?
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("DisruptionTerminating"))
            .filter_map(|e| e.message)
            .collect();
        Ok((terminating, nodes_before, look(&client).await?.nodes.len()))
    });
    eprintln!("nodes {nodes_before} → {nodes_after}: {terminating:?}");
    assert!(terminating.iter().all(|m| m.contains("Empty")), "a non-empty node was disrupted: {terminating:?}");
}
