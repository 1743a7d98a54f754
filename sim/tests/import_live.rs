//! `dovetail import --kubeconfig`: the same kinds read live through kube-rs. The fixture
//! cluster is imported from files, served with `dovetail serve`, and imported back from the
//! live API server: the round trip gives the same NodePools, EC2NodeClasses, workloads,
//! PDBs and PriorityClasses, in a scenario that loads.

mod support;

use std::path::Path;
use std::process::Command;

#[test]
fn a_served_cluster_imports_back_through_its_kubeconfig() {
    let dir = std::env::temp_dir().join(format!("dovetail-import-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/import");
    let scenario = dir.join("my-cluster.yaml");
    let o = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .arg("import")
        .arg(fixtures.join("karpenter.yaml"))
        .arg(fixtures.join("workloads.yaml"))
        .arg("-o")
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Simulated time stops at 30s: the manifests and workloads (all applied at 0s) are there.
    let served = support::start("import-live", &[scenario.to_str().unwrap(), "--speed", "20", "--pause-at", "30s"]);
    let back = dir.join("back.yaml");
    let mut last = String::new();
    // The world applies the scenario's objects as it steps; poll until they are all there.
    for _ in 0..60 {
        let o = Command::new(env!("CARGO_BIN_EXE_dovetail"))
            .args(["import", "--kubeconfig"])
            .arg(&served.kubeconfig)
            .arg("-o")
            .arg(&back)
            .output()
            .unwrap();
        last = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.status.success() && last.contains("3 Deployment") && last.contains("2 PodDisruptionBudget") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert!(last.contains("wrote"), "{last}");
    for expected in
        ["1 NodePool", "1 EC2NodeClass", "3 Deployment", "1 DaemonSet", "2 PodDisruptionBudget", "2 PriorityClass"]
    {
        assert!(last.contains(expected), "{expected} not in: {last}");
    }
    assert!(last.contains("not served by the cluster (skipped): nodeoverlays.karpenter.sh"), "{last}");
    let text = std::fs::read_to_string(&back).unwrap();
    assert!(text.contains("name: checkout") && text.contains("doNotDisrupt: true"), "{text}");
    assert!(!text.contains("managedFields") && !text.contains("resourceVersion"), "server fields stripped");
    dovetail_sim::scenario::Loaded::from_file(&back).unwrap();
}
