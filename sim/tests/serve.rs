//! `dovetail serve` as a process: the whole world (API server, actors, fake cloud,
//! controller) paced at 50× real time, read over plain HTTP on 127.0.0.1 the way kubectl
//! reads it. A pod created by hand gets a node launched by the controller; `--pause-at`
//! freezes simulated time. `GET /dovetail/explain` explains the live world.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

mod support;

use support::start;

/// One HTTP/1.0 request (the server closes the connection after the response).
fn request(addr: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let (status, _, body) = raw_request(addr, method, path, body);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// One HTTP/1.0 request: status, head and body as text.
fn raw_request(addr: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP response: {raw}"));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> Option<Value>) -> Value {
    let mut waited = Duration::ZERO;
    while waited < limit {
        if let Some(v) = f() {
            return v;
        }
        std::thread::sleep(Duration::from_millis(250));
        waited += Duration::from_millis(250);
    }
    panic!("{what}: not within {limit:?}");
}

#[test]
fn serve_runs_the_controller_live_and_a_pending_pod_gets_a_node() {
    let server = start("serve-karpenter", &["--karpenter", "--speed", "50"]);
    // The world installs Karpenter's CRDs and the NodePool in its first simulated moments,
    // as a scenario's manifests are: wait for them rather than race them.
    let pools = wait_for("the default NodePool installed", Duration::from_secs(60), || {
        let (code, pools) = request(&server.addr, "GET", "/apis/karpenter.sh/v1/nodepools", None);
        (code == 200 && pools["items"].as_array().is_some_and(|a| !a.is_empty())).then_some(pools)
    });
    assert_eq!(pools["items"][0]["metadata"]["name"], "general-purpose");
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "by-hand", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    });
    let (code, created) = request(&server.addr, "POST", "/api/v1/namespaces/default/pods", Some(&pod));
    assert_eq!(code, 201, "{created}");
    // Batching, launch, registration and readiness take a few simulated minutes: seconds here.
    let node = wait_for("a node launched for the pod", Duration::from_secs(120), || {
        let (_, nodes) = request(&server.addr, "GET", "/api/v1/nodes", None);
        nodes["items"].as_array().and_then(|a| a.first().cloned())
    });
    assert_eq!(node["metadata"]["labels"]["karpenter.sh/nodepool"], "general-purpose", "{node}");
    let bound = wait_for("the pod bound to a node", Duration::from_secs(120), || {
        let (_, p) = request(&server.addr, "GET", "/api/v1/namespaces/default/pods/by-hand", None);
        p["spec"]["nodeName"].as_str().map(|n| json!(n))
    });
    assert!(bound.as_str().is_some_and(|n| !n.is_empty()));

    // The live explanation names the claim behind the node, with a typed status, at the
    // simulated time the world has reached.
    let (code, explained) = request(&server.addr, "GET", "/dovetail/explain", None);
    assert_eq!(code, 200, "{explained}");
    let claim = node["metadata"]["labels"]["karpenter.sh/nodeclaim"].as_str().map(String::from);
    let nodes = explained["nodes"].as_array().unwrap_or_else(|| panic!("{explained}"));
    let ours = nodes
        .iter()
        .find(|n| n["node"] == node["metadata"]["name"])
        .unwrap_or_else(|| panic!("the node's claim is explained: {explained}"));
    assert_eq!(ours["pool"], "general-purpose", "{ours}");
    if let Some(claim) = claim {
        assert_eq!(ours["claim"], claim.as_str(), "{ours}");
    }
    assert!(ours["status"]["kind"].as_str().is_some_and(|k| !k.is_empty()), "a typed status: {ours}");
    assert_ne!(explained["at"], "0s", "explained at the live simulated time: {explained}");
    let (code, head, text) = raw_request(&server.addr, "GET", "/dovetail/explain?format=text", None);
    assert_eq!(code, 200, "{text}");
    assert!(head.to_ascii_lowercase().contains("content-type: text/plain"), "{head}");
    assert!(text.starts_with("# explain at ") && text.contains("general-purpose"), "{text}");
}

#[test]
fn pause_at_freezes_simulated_time_while_the_api_keeps_serving() {
    let server = start("serve-pause", &["--speed", "50", "--pause-at", "10s"]);
    // Two real seconds would be 100 simulated seconds unpaused.
    std::thread::sleep(Duration::from_secs(2));
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "namespace": "default"}});
    let (code, created) = request(&server.addr, "POST", "/api/v1/namespaces/default/configmaps", Some(&cm));
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["creationTimestamp"], "2026-01-01T00:00:10Z", "{created}");

    // The explain endpoint reads the frozen world: an empty cluster has nothing to explain.
    let (code, explained) = request(&server.addr, "GET", "/dovetail/explain", None);
    assert_eq!(code, 200, "{explained}");
    assert!(explained["at"].as_str().is_some_and(|at| at.starts_with("10")), "paused at 10s: {explained}");
    assert_eq!(explained["nodes"], json!([]), "{explained}");
    // Read-only, and a format it does not know is a Kubernetes Status error.
    let (code, status) = request(&server.addr, "POST", "/dovetail/explain", Some(&json!({})));
    assert_eq!((code, status["kind"].as_str()), (405, Some("Status")), "{status}");
    let (code, status) = request(&server.addr, "GET", "/dovetail/explain?format=xml", None);
    assert_eq!(code, 400, "{status}");
    assert!(status["message"].as_str().is_some_and(|m| m.contains("format=xml")), "{status}");
}
