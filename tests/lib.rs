//! Shared helpers for the integration tests.

pub mod workloads;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use dovetail_sim::apiserver::{self, ApiServer};
use dovetail_sim::run::{Outcome, RunOptions, run_world};
use dovetail_sim::world::ScenarioWorld;
use dovetail_sim::world::{Trace, World, WorldConfig};

/// A simulation with an API server host, for `seed`.
pub fn apiserver_world<'a>(seed: u64) -> (turmoil::Sim<'a>, ApiServer, Trace) {
    let world = World::builder(seed).build().expect("an API-server world has no catalog to load");
    (world.sim, world.server, world.trace)
}

/// Runs a story's `world` to its end, handing `observe` the API server at the first step of
/// every simulated second: the loop of the tests that watch a library story from outside.
pub fn run_each_second(world: ScenarioWorld, mut observe: impl FnMut(&ApiServer, Duration) + 'static) -> Outcome {
    let server: Rc<RefCell<Option<ApiServer>>> = Rc::default();
    let on_start = {
        let server = server.clone();
        move |s: &ApiServer| *server.borrow_mut() = Some(s.clone())
    };
    let mut next_second = 0;
    let before_step = move |now: Duration| {
        if now.as_secs() >= next_second {
            next_second = now.as_secs() + 1;
            if let Some(server) = server.borrow().as_ref() {
                observe(server, now);
            }
        }
    };
    let mut options = RunOptions {
        on_start: Some(Box::new(on_start)),
        before_step: Some(Box::new(before_step)),
        ..RunOptions::default()
    };
    run_world(world, &mut options).expect("run")
}

/// A kube client for the simulated API server; call inside a turmoil host or client.
pub fn client() -> kube::Client {
    dovetail_sim::kube_client::sim_kube_client("apiserver", apiserver::API_PORT)
}

/// A simulation with the API server and the cluster's actors (scheduler, kubelets,
/// workload controllers, PDB status, pod GC).
pub fn cluster_world<'a>(seed: u64) -> (turmoil::Sim<'a>, ApiServer, Trace) {
    let world = World::builder(seed).cluster_actors().build().expect("a cluster world has no catalog to load");
    (world.sim, world.server, world.trace)
}

/// A Ready node in `zone` with `cpu` cores and `mem_gi` GiB allocatable.
pub fn ready_node(name: &str, zone: &str, cpu: u32, mem_gi: u32) -> k8s_openapi::api::core::v1::Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
            "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}},
        "spec": {"providerID": format!("aws:///{zone}/i-{name}")},
        "status": {
            "capacity": {"cpu": cpu.to_string(), "memory": format!("{mem_gi}Gi"), "pods": "110"},
            "allocatable": {"cpu": cpu.to_string(), "memory": format!("{mem_gi}Gi"), "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    }))
    .expect("a valid node")
}

/// A cluster world whose nodes are the fake cloud's instances (us-east-1), with the
/// cloud also served as the `aws` host.
pub fn cloud_world<'a>(seed: u64) -> (turmoil::Sim<'a>, ApiServer, dovetail_fakecloud::cloud::SharedCloud) {
    cloud_world_for(seed, WorldConfig::new(seed).duration)
}

/// [`cloud_world`] whose simulation may run for `duration` of simulated time.
pub fn cloud_world_for<'a>(
    seed: u64,
    duration: std::time::Duration,
) -> (turmoil::Sim<'a>, ApiServer, dovetail_fakecloud::cloud::SharedCloud) {
    let world = World::builder(seed)
        .duration(duration)
        .cloud("us-east-1")
        .build()
        .expect("the EC2 catalog in ../shared/data/ec2");
    split_cloud_world(world)
}

/// The simulation, API server and fake cloud of a world built with a cloud.
fn split_cloud_world(world: World<'_>) -> (turmoil::Sim<'_>, ApiServer, dovetail_fakecloud::cloud::SharedCloud) {
    let cloud = world.cloud.expect("the world was built with a cloud");
    (world.sim, world.server, cloud)
}

/// The Karpenter CRDs, as the upstream manifests (what a user installs with Helm).
pub fn karpenter_crds() -> Vec<serde_json::Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/crds");
    ["karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.k8s.aws_ec2nodeclasses.yaml"]
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap_or_else(|e| panic!("{file}: {e}"));
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
        })
        .collect()
}

/// A NodePool and EC2NodeClass for the fake cloud (cluster `dovetail`): Karpenter's
/// general-purpose example with the cluster name filled in, and `extra` requirements appended.
pub fn general_purpose(capacity_types: &[&str], limits: Option<serde_json::Value>) -> Vec<serde_json::Value> {
    let mut pool = serde_json::json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": "general-purpose"},
        "spec": {
            "template": {"spec": {
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity_types},
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
            }},
            "disruption": {"consolidateAfter": "Never"}
        }
    });
    if let Some(limits) = limits {
        pool["spec"]["limits"] = limits;
    }
    let class = serde_json::json!({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-dovetail",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}]
        }
    });
    vec![class, pool]
}

/// A world with the API server and cluster actors, the fake cloud (`aws`) and the production
/// controller (`controller`). The caller installs CRDs and manifests through a client.
pub fn karpenter_world<'a>(seed: u64) -> (turmoil::Sim<'a>, ApiServer, dovetail_fakecloud::cloud::SharedCloud) {
    karpenter_world_for(seed, WorldConfig::new(seed).duration)
}

/// [`karpenter_world`] whose simulation may run for `duration` of simulated time.
pub fn karpenter_world_for<'a>(
    seed: u64,
    duration: std::time::Duration,
) -> (turmoil::Sim<'a>, ApiServer, dovetail_fakecloud::cloud::SharedCloud) {
    karpenter_world_full(seed, duration, dovetail_sim::kube_client::ClientFaults::default())
}

/// [`karpenter_world`] whose controller's kube client injects `faults`.
pub fn karpenter_world_with<'a>(
    seed: u64,
    faults: dovetail_sim::kube_client::ClientFaults,
) -> (turmoil::Sim<'a>, ApiServer, dovetail_fakecloud::cloud::SharedCloud) {
    karpenter_world_full(seed, WorldConfig::new(seed).duration, faults)
}

/// [`karpenter_world`] with a simulation length and client-side faults.
pub fn karpenter_world_full<'a>(
    seed: u64,
    duration: std::time::Duration,
    faults: dovetail_sim::kube_client::ClientFaults,
) -> (turmoil::Sim<'a>, ApiServer, dovetail_fakecloud::cloud::SharedCloud) {
    let world = World::builder(seed)
        .duration(duration)
        .cloud("us-east-1")
        .controller(dovetail_sim::controller_host::default_settings("us-east-1"))
        .client_faults(faults)
        .build()
        .expect("the EC2 catalog in ../shared/data/ec2");
    split_cloud_world(world)
}

/// Creates every object through the API (CRDs first, then a short wait so they register).
pub async fn install(client: &kube::Client, objects: &[serde_json::Value]) -> anyhow::Result<()> {
    use kube::api::{DynamicObject, PostParams};
    use kube::discovery::ApiResource;
    for obj in objects {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let plural = match kind {
            "CustomResourceDefinition" => "customresourcedefinitions".to_string(),
            "EC2NodeClass" => "ec2nodeclasses".to_string(),
            "NodePool" => "nodepools".to_string(),
            "PodDisruptionBudget" => "poddisruptionbudgets".to_string(),
            "StorageClass" => "storageclasses".to_string(),
            other => format!("{}s", other.to_lowercase()),
        };
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: kind.into(),
            plural,
        };
        let namespaced = !matches!(
            kind,
            "CustomResourceDefinition"
                | "EC2NodeClass"
                | "NodePool"
                | "Node"
                | "Namespace"
                | "StorageClass"
                | "PersistentVolume"
                | "VolumeAttachment"
        );
        let api: kube::Api<DynamicObject> = if namespaced {
            kube::Api::namespaced_with(
                client.clone(),
                obj["metadata"]["namespace"].as_str().unwrap_or("default"),
                &resource,
            )
        } else {
            kube::Api::all_with(client.clone(), &resource)
        };
        let object: DynamicObject = serde_json::from_value(obj.clone())?;
        api.create(&PostParams::default(), &object).await?;
    }
    Ok(())
}

/// A scripted cloud error that refuses every TerminateInstances (403, for the rest of the
/// run): instances live on whatever the controller decides, as with an IAM role missing
/// `ec2:TerminateInstances`.
pub fn refuse_terminations() -> dovetail_fakecloud::ScriptedError {
    dovetail_fakecloud::ScriptedError {
        action: Some("TerminateInstances".into()),
        code: "UnauthorizedOperation".into(),
        status: 403,
        count: 1_000_000,
    }
}

/// Runs a world to its end with an invariant checker ticked every simulated second (the
/// run's own observation pass), and returns the checker's report with the pending-time
/// statistics of the same pass. The self-tests of every invariant drive worlds this way.
pub fn run_checked(
    mut sim: turmoil::Sim<'_>,
    server: &ApiServer,
    cloud: &dovetail_fakecloud::cloud::SharedCloud,
    config: dovetail_sim::scenario::invariants::InvariantConfig,
    driver: impl std::future::Future<Output = anyhow::Result<()>> + 'static,
) -> (dovetail_sim::invariants::InvariantsReport, dovetail_sim::run::observe::pending::PendingStats) {
    use dovetail_sim::invariants::{Checker, Phase};
    let mut checker = Checker::new(&config, server);
    checker.set_phase(Phase::Heal, std::time::Duration::ZERO);
    let mut observer = dovetail_sim::run::observe::Observer::new(Some(cloud));
    sim.client("test", async move { driver.await.map_err(Into::into) });
    let mut next = std::time::Duration::ZERO;
    loop {
        let done = sim.step().expect("the simulation");
        let now = sim.elapsed();
        if now >= next {
            observer.sample(server, Some(cloud), Some(&mut checker), now);
            next = now + std::time::Duration::from_secs(1);
        }
        if done {
            let report = observer.judge(server, cloud, checker, now);
            return (report, observer.pending(now));
        }
    }
}
