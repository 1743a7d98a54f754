//! Self-tests of the `overProvisioning` invariant: each rule is broken from outside the
//! controller (a rogue client creating NodeClaims, or writing Karpenter-style `Nominated`
//! Events), and each excuse has a twin the invariant does not excuse: a wave under watch
//! lag is packed pass by pass, and the rogue claims beyond even that packing still fire.
//! The library's `scenarios/burst-watch-lag.yaml` runs today's controller under that lag.

use std::time::Duration;

use dovetail_fakecloud::cloud::SharedCloud;
use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::invariants::InvariantsReport;
use dovetail_sim::kube_client::ClientFaults;
use dovetail_sim::scenario::invariants::InvariantConfig;
use dovetail_tests::{client, install, karpenter_crds, karpenter_world_full};
use k8s_openapi::api::core::v1::Event;
use kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};

const NAME: &str = "overProvisioning";

fn pool(name: &str, disruption: Value) -> Value {
    json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {"spec": {
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]}
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
            }},
            "disruption": disruption
        }
    })
}

fn node_class() -> Value {
    json!({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-dovetail",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}]
        }
    })
}

fn deployment(name: &str, replicas: u32, cpu: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app",
                "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]}}}
    })
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
            // Nothing launches for it: no pool offers arm64 here, so it stays pending.
            "nodeSelector": {"kubernetes.io/arch": "arm64"}
        }
    })
}

fn nodeclaims(client: &kube::Client) -> kube::Api<DynamicObject> {
    let resource = ApiResource {
        group: "karpenter.sh".into(),
        version: "v1".into(),
        api_version: "karpenter.sh/v1".into(),
        kind: "NodeClaim".into(),
        plural: "nodeclaims".into(),
    };
    kube::Api::all_with(client.clone(), &resource)
}

/// A NodeClaim of one on-demand `m5.large` in `pool`, as another autoscaler might write it.
fn rogue_claim(name: &str, pool: &str) -> Result<DynamicObject, String> {
    rogue_claim_of(name, pool, "on-demand")
}

/// A NodeClaim of one `m5.large` of `capacity_type` in `pool`.
fn rogue_claim_of(name: &str, pool: &str, capacity_type: &str) -> Result<DynamicObject, String> {
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": pool}},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity_type]}
            ]
        }
    }))
    .map_err(|e| e.to_string())
}

async fn create_claim(client: &kube::Client, name: &str, pool: &str) -> Result<(), String> {
    nodeclaims(client).create(&PostParams::default(), &rogue_claim(name, pool)?).await.map_err(|e| e.to_string())?;
    Ok(())
}

/// Now, as a Kubernetes timestamp in simulated time (the epoch is 2026-01-01; these worlds
/// last minutes).
fn sim_timestamp() -> String {
    let s = turmoil::sim_elapsed().unwrap_or_default().as_secs();
    format!("2026-01-01T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
}

/// A `Nominated` Event as Karpenter's provisioner writes it (core scheduling/events.go).
async fn nominate(client: &kube::Client, pod: &str, claim: &str, n: u32) -> Result<(), String> {
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": format!("{pod}.nominated-{n}"), "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod, "apiVersion": "v1"},
        "reason": "Nominated",
        "type": "Normal",
        "message": format!("Pod should schedule on: nodeclaim/{claim}"),
        "firstTimestamp": sim_timestamp(),
        "source": {"component": "rogue"}
    }))
    .map_err(|e| e.to_string())?;
    let api: kube::Api<Event> = kube::Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &event).await.map_err(|e| e.to_string())?;
    Ok(())
}

/// Runs the world, ticking the checker every simulated second.
fn run(
    sim: turmoil::Sim<'_>,
    server: &ApiServer,
    cloud: &SharedCloud,
    config: InvariantConfig,
    driver: impl std::future::Future<Output = anyhow::Result<()>> + 'static,
) -> InvariantsReport {
    dovetail_tests::run_checked(sim, server, cloud, config, driver).0
}

fn ours(report: &InvariantsReport) -> Vec<String> {
    report.violations.iter().filter(|v| v.invariant == NAME).map(|v| format!("{v}")).collect()
}

fn names(report: &InvariantsReport, object: &str, message: &str) -> bool {
    report
        .violations
        .iter()
        .any(|v| v.invariant == NAME && v.message.contains(message) && v.objects.iter().any(|o| o.contains(object)))
}

/// A world where four small pods (created at 31 s) wait while a second autoscaler, 45 s
/// in, creates `rogue_claims` NodeClaims in their pool; every watch is delivered
/// `watch_delay` late. Returns the checker's report.
fn rogue_burst(seed: u64, rogue_claims: usize, watch_delay: Duration) -> InvariantsReport {
    let (mut sim, server, cloud) = karpenter_world_full(seed, Duration::from_secs(300), ClientFaults::default());
    server.faults.lock().unwrap_or_else(|e| e.into_inner()).watch_delay = watch_delay;
    sim.client("rogue-autoscaler", async move {
        tokio::time::sleep(Duration::from_secs(45)).await;
        let client = client();
        for n in 0..rogue_claims {
            create_claim(&client, &format!("rogue-{n}"), "general-purpose").await?;
        }
        Ok(())
    });
    let driver = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &[node_class(), pool("general-purpose", json!({"consolidateAfter": "Never"}))]).await?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        install(&client, &[deployment("web", 4, "250m")]).await?;
        tokio::time::sleep(Duration::from_secs(240)).await;
        Ok(())
    };
    run(sim, &server, &cloud, InvariantConfig::default(), driver)
}

/// A second autoscaler launches six nodes for four small pods while they wait: the wave
/// needs one node (plus one for the pool), so the NodeClaims created during it are too many.
#[test]
fn node_claims_beyond_the_packing_of_a_wave_are_over_provisioning() {
    let report = rogue_burst(31, 6, Duration::ZERO);
    assert!(names(&report, "NodeClaim rogue-", "first-fit-decreasing"), "{:#?}", ours(&report));
    let v = report.violations.iter().find(|v| v.invariant == NAME).expect("a violation");
    assert!(v.at > Duration::from_secs(31) && v.trace_position > 0, "{v}");
}

/// The same burst under a 2 s watch lag, where Karpenter may see the pods one pass at a
/// time and so need a node for each pass's overflow: the packing allows a few more nodes,
/// pass by pass, but a second autoscaler's ten NodeClaims still exceed it and the
/// invariant says so, naming the lag it allowed for.
#[test]
fn node_claims_beyond_the_pass_by_pass_packing_under_watch_lag_are_over_provisioning() {
    let report = rogue_burst(34, 10, Duration::from_secs(2));
    assert!(names(&report, "NodeClaim rogue-", "2s watch lag"), "{:#?}", ours(&report));
}

/// Two idle NodeClaims: one in a pool that keeps empty nodes (`consolidateAfter: Never`,
/// excused), one in a pool that would remove them but whose budget lets none go — nobody
/// uses its capacity, and the invariant says so.
#[test]
fn an_initialized_node_claim_nobody_uses_is_over_provisioning_unless_its_pool_keeps_empty_nodes() {
    let (mut sim, server, cloud) = karpenter_world_full(32, Duration::from_secs(600), ClientFaults::default());
    sim.client("rogue-autoscaler", async move {
        tokio::time::sleep(Duration::from_secs(20)).await;
        let client = client();
        create_claim(&client, "idle-kept", "keeps-empty").await?;
        create_claim(&client, "idle-blocked", "removes-empty").await?;
        Ok(())
    });
    let driver = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(
            &client,
            &[
                node_class(),
                pool("keeps-empty", json!({"consolidateAfter": "Never"})),
                pool("removes-empty", json!({"consolidateAfter": "30s", "budgets": [{"nodes": "0"}]})),
            ],
        )
        .await?;
        tokio::time::sleep(Duration::from_secs(560)).await;
        Ok(())
    };
    let mut config = InvariantConfig::default();
    config.over_provisioning.unused_for = dovetail_sim::scenario::SimDuration(Duration::from_secs(120));
    let report = run(sim, &server, &cloud, config, driver);
    assert!(names(&report, "NodeClaim idle-blocked", "no pod was bound or nominated"), "{:#?}", ours(&report));
    assert!(
        !names(&report, "NodeClaim idle-kept", ""),
        "a consolidateAfter: Never pool keeps empty nodes: {:#?}",
        ours(&report)
    );
}

/// A pod nominated to an in-flight NodeClaim, then to a second new one, was provisioned
/// twice when nobody is nominated or bound to the first any more (its pods ask for arm64,
/// which the m5.large `first` is not, so no pod is ever bound to it: neither of the
/// "still wanted" excuses applies); a pod whose first NodeClaim was
/// deleted before the second was created was not, nor one whose first claim another pod
/// took (Karpenter re-simulates every pending pod each pass).
#[test]
fn a_second_node_claim_for_a_pod_nominated_to_an_in_flight_one_is_a_duplicate() {
    let (mut sim, server, cloud) = karpenter_world_full(33, Duration::from_secs(300), ClientFaults::default());
    sim.client("rogue-provisioner", async move {
        tokio::time::sleep(Duration::from_secs(40)).await;
        let client = client();
        create_claim(&client, "first", "general-purpose").await?;
        nominate(&client, "twice", "first", 1).await?;
        create_claim(&client, "failed", "general-purpose").await?;
        nominate(&client, "retried", "failed", 1).await?;
        nominations_then_duplicates(&client).await?;
        Ok(())
    });
    sim.client("late-nominator", async move {
        tokio::time::sleep(Duration::from_secs(40)).await;
        let client = client();
        create_claim(&client, "early", "general-purpose").await?;
        nominate(&client, "late", "early", 1).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        create_claim(&client, "ready", "general-purpose").await?;
        nominate_once_initialized(&client, "late", "ready").await?;
        Ok(())
    });
    let driver = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &[node_class(), pool("general-purpose", json!({"consolidateAfter": "Never"}))]).await?;
        install(&client, &[pod("twice"), pod("retried"), pod("moved"), pod("filler"), pod("late")]).await?;
        tokio::time::sleep(Duration::from_secs(280)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, InvariantConfig::default(), driver);
    assert!(names(&report, "NodeClaim second", "duplicate launch"), "{:#?}", ours(&report));
    assert!(names(&report, "Pod default/twice", "duplicate launch"), "{:#?}", ours(&report));
    assert!(!names(&report, "Pod default/retried", "duplicate"), "the first claim was gone: {:#?}", ours(&report));
    assert!(
        !names(&report, "Pod default/moved", "duplicate"),
        "its first claim is still wanted (filler nominated to it): {:#?}",
        ours(&report)
    );
    assert!(
        !names(&report, "Pod default/late", "duplicate"),
        "nominated to `ready` only once its node had initialized: no launch decision: {:#?}",
        ours(&report)
    );
}

/// Nominates `pod` to `claim` a few seconds after the claim is Initialized (its node
/// registered and ready).
async fn nominate_once_initialized(client: &kube::Client, pod: &str, claim: &str) -> Result<(), String> {
    for _ in 0..200 {
        let object = nodeclaims(client).get(claim).await.map_err(|e| e.to_string())?;
        let initialized = object.data["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Initialized" && c["status"] == "True"));
        if initialized {
            // Seconds later: Events carry whole seconds.
            tokio::time::sleep(Duration::from_secs(3)).await;
            return nominate(client, pod, claim, 2).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(format!("{claim} never initialized"))
}

/// Two seconds on: the claim `failed` is deleted (a launch that failed), then both pods get
/// a new NodeClaim each while `first` is still launching.
async fn nominations_then_duplicates(client: &kube::Client) -> Result<(), String> {
    tokio::time::sleep(Duration::from_secs(2)).await;
    nodeclaims(client).delete("failed", &DeleteParams::default()).await.map_err(|e| e.to_string())?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    create_claim(client, "second", "general-purpose").await?;
    nominate(client, "twice", "second", 2).await?;
    create_claim(client, "third", "general-purpose").await?;
    nominate(client, "retried", "third", 2).await?;
    // Karpenter's own re-simulation: `moved` goes to a new claim because `filler` took its
    // room on `busy`, which stays wanted. Not a duplicate.
    create_claim(client, "busy", "general-purpose").await?;
    nominate(client, "moved", "busy", 1).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    create_claim(client, "fourth", "general-purpose").await?;
    nominate(client, "moved", "fourth", 2).await?;
    nominate(client, "filler", "busy", 1).await
}

/// A pending arm64 pod (nothing launches for it here) that prefers spot capacity.
fn spot_preferring_pod(name: &str) -> Value {
    let mut p = pod(name);
    p["spec"]["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}}
    ]}});
    p
}

/// Two pods that prefer spot, each nominated to an in-flight on-demand claim and then to a
/// second claim. `moved` goes to a spot claim, as Karpenter moves a pod it had to relax
/// onto a claim its preference rejects (core scheduling/scheduler.go `trySchedule` relaxes
/// only after `add` fails with the preference in force): no duplicate, but the on-demand
/// claim it left behind, nobody nominated or bound to it since, is judged as unused
/// capacity. `twice` goes to another on-demand claim, which its preference ranks no
/// higher: the excuse does not apply, and that is a duplicate launch.
#[test]
fn a_move_to_a_claim_the_pods_preference_ranks_higher_is_no_duplicate_but_leaves_unused_capacity() {
    let (mut sim, server, cloud) = karpenter_world_full(35, Duration::from_secs(600), ClientFaults::default());
    sim.client("rogue-provisioner", async move {
        tokio::time::sleep(Duration::from_secs(40)).await;
        let client = client();
        let claims = nodeclaims(&client);
        let create = |name: &'static str, capacity_type: &'static str| {
            let claims = claims.clone();
            async move {
                let claim = rogue_claim_of(name, "mixed", capacity_type)?;
                claims.create(&PostParams::default(), &claim).await.map_err(|e| e.to_string()).map(drop)
            }
        };
        create("left-behind", "on-demand").await?;
        nominate(&client, "moved", "left-behind", 1).await?;
        create("first", "on-demand").await?;
        nominate(&client, "twice", "first", 1).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        create("preferred", "spot").await?;
        nominate(&client, "moved", "preferred", 2).await?;
        create("second", "on-demand").await?;
        nominate(&client, "twice", "second", 2).await?;
        Ok(())
    });
    let driver = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut mixed = pool("mixed", json!({"consolidateAfter": "30s", "budgets": [{"nodes": "0"}]}));
        mixed["spec"]["template"]["spec"]["requirements"][1]["values"] = json!(["spot", "on-demand"]);
        install(&client, &[node_class(), mixed]).await?;
        install(&client, &[spot_preferring_pod("moved"), spot_preferring_pod("twice")]).await?;
        tokio::time::sleep(Duration::from_secs(580)).await;
        Ok(())
    };
    let mut config = InvariantConfig::default();
    config.over_provisioning.unused_for = dovetail_sim::scenario::SimDuration(Duration::from_secs(120));
    let report = run(sim, &server, &cloud, config, driver);
    assert!(names(&report, "Pod default/twice", "duplicate launch"), "{:#?}", ours(&report));
    assert!(!names(&report, "Pod default/moved", "duplicate"), "a preference move: {:#?}", ours(&report));
    assert!(names(&report, "NodeClaim left-behind", "no pod was bound or nominated"), "{:#?}", ours(&report));
    assert!(
        !names(&report, "NodeClaim first", "no pod was bound"),
        "a duplicate's first claim was used: {:#?}",
        ours(&report)
    );
}

/// An unmanaged Node carrying Karpenter's `karpenter.sh/disrupted` taint, as a disruption
/// command leaves its candidates while their replacements launch.
fn disrupted_node(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name},
        "spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}
    })
}

/// Puts the `karpenter.sh/disrupted` taint back on the Node `outsider`.
async fn taint(nodes: &kube::Api<k8s_openapi::api::core::v1::Node>) -> Result<(), String> {
    let patch = json!({"spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}});
    nodes
        .patch("outsider", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch))
        .await
        .map_err(|e| e.to_string())
        .map(drop)
}

/// The per-claim judgement and its replacement excuse, from outside the controller. Four
/// arm64 pods wait (nothing here can host them, so their wave may have no node but the
/// pool's slack). While a Node carries the `karpenter.sh/disrupted` taint (the rogue keeps
/// putting it back: the controller strips it from a node no command holds), a second
/// autoscaler creates four NodeClaims: they are judged as disruption replacements, not the
/// wave's (core `disruption/queue.go` taints the candidates before it launches their
/// replacements), and none is named. Once the taint is gone the excuse no longer applies:
/// each of three more NodeClaims is judged when it is created, and the second is over the
/// wave's bound.
#[test]
fn node_claims_created_after_the_disrupted_taint_is_gone_are_judged_against_the_wave() {
    let (mut sim, server, cloud) = karpenter_world_full(35, Duration::from_secs(240), ClientFaults::default());
    sim.client("rogue-autoscaler", async move {
        tokio::time::sleep(Duration::from_secs(40)).await;
        let client = client();
        install(&client, &[disrupted_node("outsider")]).await?;
        let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client.clone());
        // Karpenter strips the taint from a node no disruption command holds (as core's
        // disruption controller does), so the rogue puts it back every 100 ms while it
        // creates its claims and a few seconds after.
        for n in 0..40 {
            taint(&nodes).await?;
            if n % 5 == 0 && n < 20 {
                create_claim(&client, &format!("replacement-{}", n / 5), "general-purpose").await?;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        nodes.delete("outsider", &DeleteParams::default()).await.map_err(|e| e.to_string())?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        for n in 0..3 {
            create_claim(&client, &format!("rogue-{n}"), "general-purpose").await?;
        }
        Ok(())
    });
    let driver = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &[node_class(), pool("general-purpose", json!({"consolidateAfter": "Never"}))]).await?;
        install(&client, &[pod("stuck-0"), pod("stuck-1"), pod("stuck-2"), pod("stuck-3")]).await?;
        tokio::time::sleep(Duration::from_secs(220)).await;
        Ok(())
    };
    let report = run(sim, &server, &cloud, InvariantConfig::default(), driver);
    assert!(names(&report, "NodeClaim rogue-", "first-fit-decreasing"), "{:#?}", ours(&report));
    assert!(
        !report.violations.iter().any(|v| v.invariant == NAME && v.objects.iter().any(|o| o.contains("replacement-"))),
        "claims created while a Node carries the disrupted taint are replacements: {:#?}",
        ours(&report)
    );
}

/// A pending pod of group `app` under a `DoNotSchedule` zone spread (maxSkew 1). Nothing
/// launches for it (no instance type has 1000 CPUs), so it stays pending; unlike a node
/// selector, its size does not stop the spread from counting the group's pods on amd64
/// claims (`nodeAffinityPolicy: Honor` judges the node's labels only).
fn spread_pod(name: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "1000", "memory": "128Mi"}}}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": app}}}]
        }
    })
}

/// A NodeClaim of one on-demand `m5.large` in `zone` of pool `spread`.
fn zonal_claim(name: &str, zone: &str) -> Result<DynamicObject, String> {
    let mut claim = serde_json::to_value(rogue_claim(name, "spread")?).map_err(|e| e.to_string())?;
    let zone = json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]});
    claim["spec"]["requirements"].as_array_mut().ok_or("requirements")?.push(zone);
    serde_json::from_value(claim).map_err(|e| e.to_string())
}

/// Two pods under zone spreads, each nominated to an in-flight claim in us-east-1a, then, in
/// one later pass, to a new claim in us-east-1b. In that pass two more pods of `spread`'s
/// group went to a third 1a claim, so 1a is over the skew for `spread` (a pass counts bound
/// pods and its own placements, not earlier nominations: core `scheduling/topology.go`
/// `countDomains`, `Record`): the move was forced, no duplicate, and the 1a claim it left
/// behind is judged as unused capacity. `solo`'s group has nobody in 1a: its move was not
/// forced, and that is a duplicate launch.
#[test]
fn a_move_the_pods_zone_spread_forced_is_no_duplicate_but_leaves_unused_capacity() {
    let (mut sim, server, cloud) = karpenter_world_full(37, Duration::from_secs(600), ClientFaults::default());
    sim.client("rogue-provisioner", async move {
        tokio::time::sleep(Duration::from_secs(40)).await;
        let client = client();
        let claims = nodeclaims(&client);
        let create = |name: &'static str, zone: &'static str| {
            let claims = claims.clone();
            async move {
                claims
                    .create(&PostParams::default(), &zonal_claim(name, zone)?)
                    .await
                    .map_err(|e| e.to_string())
                    .map(drop)
            }
        };
        create("left-behind", "us-east-1a").await?;
        nominate(&client, "spread", "left-behind", 1).await?;
        create("solo-first", "us-east-1a").await?;
        nominate(&client, "solo", "solo-first", 1).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        create("crowd", "us-east-1a").await?;
        create("moved-to", "us-east-1b").await?;
        create("solo-second", "us-east-1b").await?;
        nominate(&client, "g1", "crowd", 1).await?;
        nominate(&client, "g2", "crowd", 1).await?;
        nominate(&client, "spread", "moved-to", 2).await?;
        nominate(&client, "solo", "solo-second", 2).await?;
        Ok(())
    });
    let driver = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let spread = pool("spread", json!({"consolidateAfter": "30s", "budgets": [{"nodes": "0"}]}));
        install(&client, &[node_class(), spread]).await?;
        let pods =
            [spread_pod("spread", "web"), spread_pod("g1", "web"), spread_pod("g2", "web"), spread_pod("solo", "solo")];
        install(&client, &pods).await?;
        tokio::time::sleep(Duration::from_secs(580)).await;
        Ok(())
    };
    let mut config = InvariantConfig::default();
    config.over_provisioning.unused_for = dovetail_sim::scenario::SimDuration(Duration::from_secs(120));
    let report = run(sim, &server, &cloud, config, driver);
    assert!(names(&report, "Pod default/solo", "duplicate launch"), "{:#?}", ours(&report));
    assert!(!names(&report, "Pod default/spread", "duplicate"), "a spread-forced move: {:#?}", ours(&report));
    assert!(names(&report, "NodeClaim left-behind", "no pod was bound or nominated"), "{:#?}", ours(&report));
}
