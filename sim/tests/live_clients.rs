//! Real clients against `dovetail serve`: kubectl's typed commands (they send protobuf),
//! `kubectl scale` (the scale subresource) and `kubectl get nodeclaims` (the CRD's printer
//! columns, with escaped dots in label keys), and the official Python `kubernetes` client
//! (tests/clients/python_client.py: CRUD, server-side apply, patch types, watch with
//! resume, eviction, finalizers).
//!
//! The clients come from `tests/clients/install.sh` (into target/clients/), which `.ci/run`
//! runs and which sets `DOVETAIL_REQUIRE_CLIENTS=1`: then a missing client fails the test.
//! Without that variable a missing client skips the test, loudly.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod support;

use support::{client, repo, start};

fn run(cmd: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(cmd).args(args).output().expect("the client runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn kubectl_typed_commands_scale_and_printer_columns() {
    let Some(kubectl) = client("kubectl", "target/clients/bin/kubectl", "kubectl", &["version", "--client"]) else {
        return;
    };
    let server = start("live-kubectl", &["--karpenter", "--speed", "50"]);
    let kc = server.kubeconfig.to_str().unwrap().to_string();
    let k = |args: &[&str]| -> String {
        let mut all = vec!["--kubeconfig", &kc];
        all.extend_from_slice(args);
        let (ok, out) = run(&kubectl, &all);
        eprintln!("$ kubectl {}\n{out}", args.join(" "));
        assert!(ok, "kubectl {args:?} failed: {out}");
        out
    };
    assert!(k(&["create", "namespace", "demo"]).contains("namespace/demo created"));
    assert!(k(&["-n", "demo", "run", "web", "--image=nginx", "--labels=app=web"]).contains("pod/web created"));
    assert!(k(&["-n", "demo", "create", "deployment", "api", "--image=nginx"]).contains("deployment.apps/api created"));
    assert!(k(&["-n", "demo", "create", "configmap", "cfg", "--from-literal=a=1"]).contains("configmap/cfg created"));
    assert!(
        k(&["-n", "demo", "create", "secret", "generic", "pw", "--from-literal=pw=hunter2"])
            .contains("secret/pw created")
    );
    assert_eq!(k(&["-n", "demo", "get", "secret", "pw", "-o", "jsonpath={.data.pw}"]), "aHVudGVyMg==");
    assert!(k(&["-n", "demo", "scale", "deployment", "api", "--replicas=3"]).contains("deployment.apps/api scaled"));
    assert_eq!(k(&["-n", "demo", "get", "deployment", "api", "-o", "jsonpath={.spec.replicas}"]), "3");
    assert!(
        k(&["-n", "demo", "expose", "deployment", "api", "--port=80", "--target-port=8080"])
            .contains("service/api exposed")
    );
    assert_eq!(k(&["-n", "demo", "get", "service", "api", "-o", "jsonpath={.spec.ports[0].targetPort}"]), "8080");
    assert_eq!(k(&["-n", "demo", "get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image}"]), "nginx");

    // The pending pods get a NodeClaim from the controller; its printer columns read the
    // instance type, capacity type and zone from labels whose keys have escaped dots.
    let mut table = String::new();
    for _ in 0..240 {
        table = k(&["get", "nodeclaims"]);
        if table.lines().skip(1).any(|row| cells(&table, row)["TYPE"].contains('.')) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let row = table.lines().skip(1).find(|row| cells(&table, row)["TYPE"].contains('.')).unwrap_or_else(|| {
        panic!("no NodeClaim with its TYPE column filled:\n{table}");
    });
    let c = cells(&table, row);
    let claim = serde_json::from_str::<serde_json::Value>(&k(&["get", "nodeclaim", &c["NAME"], "-o", "json"])).unwrap();
    let label = |key: &str| claim["metadata"]["labels"][key].as_str().unwrap_or("").to_string();
    assert_eq!(c["TYPE"], label("node.kubernetes.io/instance-type"), "{table}");
    assert_eq!(c["CAPACITY"], label("karpenter.sh/capacity-type"), "{table}");
    assert_eq!(c["ZONE"], label("topology.kubernetes.io/zone"), "{table}");
    assert!(!c["ZONE"].is_empty(), "{table}");

    assert!(k(&["-n", "demo", "delete", "deployment", "api"]).contains("deleted"));
    assert!(k(&["delete", "namespace", "demo", "--wait=false"]).contains("deleted"));
}

/// The cells of one `kubectl get` row, by header, cut at the header's column starts.
fn cells(table: &str, row: &str) -> std::collections::BTreeMap<String, String> {
    let header = table.lines().next().unwrap_or("");
    let mut starts: Vec<(usize, &str)> = vec![];
    let mut pos = 0;
    for word in header.split_whitespace() {
        let at = pos + header[pos..].find(word).unwrap_or(0);
        starts.push((at, word));
        pos = at + word.len();
    }
    starts
        .iter()
        .enumerate()
        .map(|(i, (at, name))| {
            let end = starts.get(i + 1).map_or(row.len(), |(e, _)| (*e).min(row.len()));
            (name.to_string(), row.get((*at).min(row.len())..end).unwrap_or("").trim().to_string())
        })
        .collect()
}

#[test]
fn the_python_client_drives_dovetail_serve() {
    let Some(python) = client(
        "the Python kubernetes client",
        "target/clients/venv/bin/python",
        "python3",
        &["-c", "import kubernetes"],
    ) else {
        return;
    };
    let server = start("live-python", &["--karpenter", "--speed", "50"]);
    let script = repo().join("tests/clients/python_client.py");
    let (ok, out) = run(&python, &[script.to_str().unwrap(), &server.url()]);
    eprintln!("{out}");
    assert!(ok, "the Python client failed:\n{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("step ok: ")).count(), 11, "{out}");
}
