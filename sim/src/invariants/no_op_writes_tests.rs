use std::time::Duration;

use serde_json::json;

use super::*;
use crate::apiserver::audit::AuditObserver;
use crate::apiserver::store::{Part, WriteOptions};
use crate::world::{Trace, World};

fn server() -> ApiServer {
    let world = World::builder(1)
        .duration(Duration::from_secs(60))
        .trace(Trace::hash_only())
        .build()
        .expect("an API-server world has no catalog to load");
    let server = world.server;
    let mut s = server.store.lock().unwrap();
    let pods = s.registry().get("", "pods").unwrap();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p0"},
        "spec": {"containers": [{"name": "app", "image": "x"}]}});
    s.create(&pods, "default", pod, WriteOptions::default()).unwrap();
    drop(s);
    server
}

fn request(seq: u64, host: &str, verb: &'static str) -> AuditRequest {
    AuditRequest {
        seq,
        at: Duration::from_secs(seq),
        host: host.into(),
        user_agent: String::new(),
        verb,
        group: String::new(),
        resource: "pods".into(),
        namespace: "default".into(),
        name: "p0".into(),
    }
}

fn before(server: &ApiServer, rec: &WriteRecorder, r: &AuditRequest) {
    rec.before(&server.store.lock().unwrap(), r);
}

fn bump(server: &ApiServer, value: &str) {
    let mut s = server.store.lock().unwrap();
    let pods = s.registry().get("", "pods").unwrap();
    let mut pod = (*s.get(&pods, "default", "p0").unwrap()).clone();
    pod["metadata"]["annotations"] = json!({"n": value});
    s.update(&pods, "default", "p0", pod, Part::Main, WriteOptions::default()).unwrap();
}

#[test]
fn an_accepted_write_that_changed_nothing_is_reported() {
    let server = server();
    let inv = NoOpWrites::new(&InvariantConfig::default(), &server);
    let rec = &inv.recorder;
    let r = request(1, "controller", "patch");
    before(&server, rec, &r);
    rec.after(&r, 200, 7);
    let found = rec.drain();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].object, "pods default/p0");
    assert_eq!((found[0].verb, found[0].trace_position), ("patch", 7));
}

#[test]
fn a_write_that_committed_or_failed_or_came_from_elsewhere_is_not() {
    let server = server();
    let inv = NoOpWrites::new(&InvariantConfig::default(), &server);
    let rec = &inv.recorder;
    // Committed: the resourceVersion moved between before and after.
    let r = request(1, "controller", "update");
    before(&server, rec, &r);
    bump(&server, "1");
    rec.after(&r, 200, 1);
    // Refused.
    let r = request(2, "controller", "update");
    before(&server, rec, &r);
    rec.after(&r, 409, 1);
    // Not the controller.
    let r = request(3, "kubelet-1", "patch");
    before(&server, rec, &r);
    rec.after(&r, 200, 1);
    // Not an update or patch.
    let r = request(4, "controller", "evict");
    before(&server, rec, &r);
    rec.after(&r, 201, 1);
    assert!(rec.drain().is_empty());
}

#[test]
fn writes_while_faults_are_live_or_the_controller_is_cut_off_wait() {
    let cut = [(Duration::from_secs(10), Duration::from_secs(20))];
    assert!(judged(Phase::Heal, &cut, Duration::from_secs(5)));
    assert!(!judged(Phase::Heal, &cut, Duration::from_secs(15)));
    assert!(!judged(Phase::Faults, &[], Duration::from_secs(5)));
    assert!(judged(Phase::Liveness, &cut, Duration::from_secs(21)));
}
