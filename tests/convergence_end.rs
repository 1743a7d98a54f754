//! The Liveness phase's end-of-run `convergence` check, clause "drift converged": a scripted
//! cloud that refuses every TerminateInstances keeps a drifted node alive with nothing
//! blocking its replacement, so at the end it is still drifted, overdue and unreplaced.
//! (The clause "no reachable move untaken" fires in `tests/moves_oracle.rs`.)

use std::time::Duration;

use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::{Faults, ScriptedError};
use dovetail_sim::kube_client::ClientFaults;
use dovetail_sim::scenario::SimDuration;
use dovetail_sim::scenario::invariants::InvariantConfig;
use dovetail_tests::{client, general_purpose, install, karpenter_crds, karpenter_world_with};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

#[test]
fn a_drifted_node_the_cloud_will_not_terminate_has_not_converged_at_the_end() {
    let (sim, server, cloud) = karpenter_world_with(37, ClientFaults::default());
    lock(&cloud).set_faults(Faults {
        scripted: vec![ScriptedError {
            action: Some("TerminateInstances".into()),
            code: "UnauthorizedOperation".into(),
            status: 403,
            count: 1_000_000,
        }],
        ..Faults::default()
    });
    let driver = async move {
        let client = client();
        install(&client, &karpenter_crds()).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        install(&client, &general_purpose(&["on-demand"], None)).await?;
        let web = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                    "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}}}
        });
        install(&client, &[web]).await?;
        let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), "default");
        for _ in 0..120 {
            let list = pods.list(&ListParams::default()).await?;
            if list.items.iter().any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")) {
                break;
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
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
    config.drift_convergence.replace_within = SimDuration(Duration::from_secs(240));
    let report = dovetail_tests::run_checked(sim, &server, &cloud, config, driver).0;
    let end: Vec<_> = report.violations.iter().filter(|v| v.invariant == "convergence").collect();
    let drift = end.iter().find(|v| v.message.contains("drifted NodeClaim(s) not replaced"));
    let all: String = report.violations.iter().map(|v| format!("  {v}\n")).collect();
    assert!(drift.is_some_and(|v| v.objects.iter().any(|o| o.starts_with("NodeClaim "))), "{all}");
}
