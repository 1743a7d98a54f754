//! The real kubectl against `dovetail serve`: discovery, apply of Karpenter's CRDs and a
//! NodePool from Karpenter's docs, get, delete.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data").join(rel)
}

fn kubectl(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(kubectl).arg("--kubeconfig").arg(kubeconfig).args(args).output().expect("kubectl runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn kubectl_drives_dovetail_serve() {
    let Some(bin) = support::client("kubectl", "target/clients/bin/kubectl", "kubectl", &["version", "--client"])
    else {
        return;
    };
    let server = support::start("kubectl", &[]);
    let kubeconfig = server.kubeconfig.clone();
    let dir = kubeconfig.parent().expect("the kubeconfig's directory").to_path_buf();
    let kubectl = |kubeconfig: &Path, args: &[&str]| kubectl(&bin, kubeconfig, args);

    for crd in [
        "crds/karpenter.sh_nodepools.yaml",
        "crds/karpenter.sh_nodeclaims.yaml",
        "crds/karpenter.k8s.aws_ec2nodeclasses.yaml",
    ] {
        let (ok, out) = kubectl(&kubeconfig, &["apply", "-f", shared(crd).to_str().unwrap()]);
        assert!(ok, "kubectl apply {crd}: {out}");
        assert!(out.contains("created"), "{out}");
    }
    let example = shared("karpenter-examples/general-purpose.yaml");
    let (ok, out) = kubectl(&kubeconfig, &["apply", "-f", example.to_str().unwrap()]);
    assert!(ok, "kubectl apply general-purpose.yaml: {out}");
    assert!(out.contains("nodepool.karpenter.sh/general-purpose created"), "{out}");
    assert!(out.contains("ec2nodeclass.karpenter.k8s.aws/default created"), "{out}");
    // Applying again is a no-op through the same client-side apply path.
    let (ok, out) = kubectl(&kubeconfig, &["apply", "-f", example.to_str().unwrap()]);
    assert!(ok && out.contains("unchanged"), "{out}");

    let (ok, out) = kubectl(&kubeconfig, &["get", "nodepools", "-o", "json"]);
    assert!(ok, "{out}");
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    let np = &list["items"][0];
    assert_eq!(np["metadata"]["name"], "general-purpose");
    assert_eq!(np["spec"]["disruption"]["consolidationPolicy"], "WhenEmptyOrUnderutilized", "CRD defaults applied");

    let (ok, out) = kubectl(&kubeconfig, &["get", "nodes", "-o", "json"]);
    assert!(ok, "{out}");
    let nodes: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(nodes["kind"], "List");
    assert_eq!(nodes["items"], serde_json::json!([]));

    // An invalid NodePool is rejected by the CRD schema, naming the field.
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: bad}\nspec:\n  template:\n    spec:\n      requirements: [{key: kubernetes.io/arch, operator: Foo, values: [amd64]}]\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n").unwrap();
    let (ok, out) = kubectl(&kubeconfig, &["apply", "-f", bad.to_str().unwrap()]);
    assert!(!ok, "{out}");
    assert!(out.contains("spec.template.spec.requirements[0].operator: Unsupported value: \"Foo\""), "{out}");

    let (ok, out) = kubectl(&kubeconfig, &["get", "nodepools"]);
    assert!(ok && out.contains("general-purpose"), "{out}");
    let (ok, out) = kubectl(&kubeconfig, &["delete", "nodepool", "general-purpose"]);
    assert!(ok && out.contains("deleted"), "{out}");
    let (ok, out) = kubectl(&kubeconfig, &["get", "nodepools", "-o", "json"]);
    assert!(ok, "{out}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["items"], serde_json::json!([]));
    std::fs::remove_dir_all(&dir).ok();
}
