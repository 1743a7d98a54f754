//! The real kubectl against `dovetail serve`: discovery, apply of Karpenter's CRDs and a
//! NodePool from Karpenter's docs, get, delete.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data").join(rel)
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl").arg("--kubeconfig").arg(kubeconfig).args(args).output().expect("kubectl runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn kubectl_drives_dovetail_serve() {
    if Command::new("kubectl").arg("version").arg("--client").output().is_err() {
        // .ci/run installs kubectl (tests/clients/install.sh) and sets this: there it must run.
        assert_ne!(
            std::env::var("DOVETAIL_REQUIRE_CLIENTS").as_deref(),
            Ok("1"),
            "DOVETAIL_REQUIRE_CLIENTS=1 but kubectl is missing: run tests/clients/install.sh"
        );
        eprintln!("\n\n*** SKIPPING kubectl_drives_dovetail_serve: kubectl is not installed ***\n");
        return;
    }
    let dir = std::env::temp_dir().join(format!("dovetail-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["serve", "--port", "0", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("dovetail serve starts");
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    assert!(first.starts_with("serving on http://127.0.0.1:"), "{first}");

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
