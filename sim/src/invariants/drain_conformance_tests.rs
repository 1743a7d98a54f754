use serde_json::json;

use super::*;

const NOW: Duration = Duration::from_secs(600);

/// A Kubernetes timestamp `secs` simulated seconds after the start.
fn ts(secs: u64) -> String {
    dovetail_world::clock::rfc3339(dovetail_world::clock::sim_epoch() + Duration::from_secs(secs))
}

fn pod(name: &str, extra: Value) -> Value {
    let mut p = json!({
        "metadata": {"namespace": "default", "name": name},
        "spec": {"nodeName": "n1", "containers": []},
        "status": {"phase": "Running"},
    });
    merge(&mut p, extra);
    p
}

fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn daemon(name: &str) -> Value {
    pod(name, json!({"metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "logs", "controller": true}]}}))
}

fn critical(name: &str) -> Value {
    pod(name, json!({"spec": {"priorityClassName": "system-node-critical"}}))
}

fn tainted() -> Value {
    json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}})
}

fn messages(v: Vec<(String, Vec<String>)>) -> Vec<String> {
    v.into_iter().map(|(m, _)| m).collect()
}

#[test]
fn groups_follow_upstream() {
    assert_eq!(group(&pod("web", json!({}))), 0);
    assert_eq!(group(&daemon("logs")), 1);
    assert_eq!(group(&critical("dns")), 2);
    let mut cd = daemon("cni");
    merge(&mut cd, json!({"spec": {"priorityClassName": "system-cluster-critical"}}));
    assert_eq!(group(&cd), 3);
    assert_eq!(group(&pod("hi", json!({"spec": {"priorityClassName": "high"}}))), 0);
}

#[test]
fn an_ordinary_eviction_on_a_tainted_node_is_fine() {
    let web = pod("web", json!({}));
    let logs = daemon("logs");
    assert!(judge("evict", &web, Some(&tainted()), &[&web, &logs], None, NOW).is_empty());
}

#[test]
fn evicting_a_pod_that_tolerates_the_disrupted_taint_breaks_the_rule() {
    let agent = pod("agent", json!({"spec": {"tolerations": [{"operator": "Exists"}]}}));
    let m = messages(judge("evict", &agent, Some(&tainted()), &[&agent], None, NOW));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("tolerates"), "{m:?}");
    // A toleration of another key does not count.
    let other = pod("other", json!({"spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}));
    assert!(judge("delete", &other, Some(&tainted()), &[&other], None, NOW).is_empty());
}

#[test]
fn evicting_before_the_node_is_tainted_breaks_the_rule() {
    let web = pod("web", json!({}));
    let node = json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}});
    let m = messages(judge("evict", &web, Some(&node), &[&web], None, NOW));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("not yet tainted"), "{m:?}");
    // The disrupted key with another effect is not the taint.
    let wrong = json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoExecute"}]}});
    assert_eq!(judge("evict", &web, Some(&wrong), &[&web], None, NOW).len(), 1);
    // A Node already gone is not judged for the taint.
    assert!(judge("evict", &web, None, &[&web], None, NOW).is_empty());
}

#[test]
fn a_daemon_pod_waits_for_the_ordinary_pods() {
    let web = pod("web", json!({}));
    let logs = daemon("logs");
    let m = judge("evict", &logs, Some(&tainted()), &[&web, &logs], None, NOW);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].0.contains("first default/web"), "{m:?}");
    assert_eq!(m[0].1, vec!["Pod default/web".to_string()]);
    // Terminating but not stuck still waits.
    let going = pod("web", json!({"metadata": {"deletionTimestamp": ts(570)}}));
    assert_eq!(judge("evict", &logs, Some(&tainted()), &[&going, &logs], None, NOW).len(), 1);
    // Gone, terminal, stuck terminating, tolerating or mirror: no longer waited on.
    let done = pod("web", json!({"status": {"phase": "Succeeded"}}));
    let stuck = pod("web", json!({"metadata": {"deletionTimestamp": ts(480)}}));
    let tolerating = pod("web", json!({"spec": {"tolerations": [{"operator": "Exists"}]}}));
    let mirror = pod("web", json!({"metadata": {"ownerReferences": [{"kind": "Node", "name": "n1"}]}}));
    for q in [&done, &stuck, &tolerating, &mirror] {
        assert!(judge("evict", &logs, Some(&tainted()), &[q, &logs], None, NOW).is_empty(), "{q}");
    }
    assert!(judge("evict", &logs, Some(&tainted()), &[&logs], None, NOW).is_empty());
}

#[test]
fn critical_pods_go_last_and_deletes_are_not_ordered() {
    let logs = daemon("logs");
    let dns = critical("dns");
    assert_eq!(judge("evict", &dns, Some(&tainted()), &[&logs, &dns], None, NOW).len(), 1);
    // Same group or later: fine.
    let dns2 = critical("dns-2");
    assert!(judge("evict", &dns, Some(&tainted()), &[&dns2, &dns], None, NOW).is_empty());
    // A force delete (past the terminationGracePeriod threshold) is outside the groups.
    assert!(judge("delete", &dns, Some(&tainted()), &[&logs, &dns], None, NOW).is_empty());
    let deadline = Some(NOW + Duration::from_secs(10));
    assert!(judge("evict", &dns, Some(&tainted()), &[&logs, &dns], deadline, NOW).is_empty());
}

#[test]
fn already_terminating_or_terminal_pods_are_not_judged() {
    let agent = pod(
        "agent",
        json!({"metadata": {"deletionTimestamp": ts(590)}, "spec": {"tolerations": [{"operator": "Exists"}]}}),
    );
    assert!(judge("delete", &agent, None, &[], None, NOW).is_empty());
}
