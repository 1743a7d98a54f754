//! Whether a node's pods fit on the other nodes: first-fit decreasing (largest CPU first,
//! as Karpenter's scheduler orders pods) over the nodes that may receive pods, honouring
//! each pod's node selectors, required node affinity, tolerations and the preferred
//! node-affinity term Karpenter holds it to ([`super::preference`]). Written apart from the
//! controller's scheduler.

use super::host::{Host, Movable};
use crate::oracle::resources::{NodeSelection, Resources, tolerates_taints};

/// Whether every pod of `pods` finds room on some host of `others` (each taken with its
/// free room), placing them in order. Each pod's node constraints are read out of its JSON
/// once, not once per host it is tried on.
pub fn fits_elsewhere(pods: &[Movable], others: &[&Host]) -> bool {
    let mut free: Vec<Resources> = others.iter().map(|h| h.free).collect();
    'pods: for pod in pods {
        let selection = NodeSelection::of(&pod.object);
        for (room, host) in free.iter_mut().zip(others) {
            if pod.requests.fits_in(room)
                && selection.allows(|k| host.labels.get(k).map(String::as_str))
                && pod.preference_allows(&host.labels)
                && tolerates_taints(&pod.object, &host.taints)
            {
                *room = room.minus(&pod.requests);
                continue 'pods;
            }
        }
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(cpu: f64, spec: serde_json::Value) -> Movable {
        Movable {
            key: "default/p".into(),
            requests: Resources { cpu, memory: 1.0, pods: 1.0 },
            object: Arc::new(json!({"spec": spec})),
            preferred: None,
        }
    }

    fn host(free_cpu: f64, zone: &str, taints: serde_json::Value) -> Host {
        Host {
            name: "n".into(),
            instance_type: "m5.large".into(),
            spot: false,
            price: 0.1,
            nodepool: Some("default".into()),
            labels: [("topology.kubernetes.io/zone".to_string(), zone.to_string())].into(),
            taints: taints.as_array().cloned().unwrap_or_default(),
            free: Resources { cpu: free_cpu, memory: 1e12, pods: 10.0 },
            movable: Vec::new(),
            blocked: None,
            unjudged: None,
            target: true,
            waiting: false,
            reschedule_cost: 1.0,
        }
    }

    #[test]
    fn pods_fit_only_where_room_selectors_and_taints_allow() {
        let a = host(1_000.0, "us-east-1a", json!([]));
        let b = host(600.0, "us-east-1b", json!([]));
        assert!(fits_elsewhere(&[pod(1_000.0, json!({})), pod(500.0, json!({}))], &[&a, &b]));
        assert!(
            !fits_elsewhere(&[pod(1_000.0, json!({})), pod(700.0, json!({}))], &[&a, &b]),
            "no room for the second"
        );
        let in_b = json!({"nodeSelector": {"topology.kubernetes.io/zone": "us-east-1b"}});
        assert!(!fits_elsewhere(&[pod(1_000.0, in_b.clone())], &[&a, &b]), "a's room is in the wrong zone");
        assert!(fits_elsewhere(&[pod(500.0, in_b)], &[&a, &b]));
        let tainted = host(4_000.0, "us-east-1a", json!([{"key": "gpu", "effect": "NoSchedule"}]));
        assert!(!fits_elsewhere(&[pod(500.0, json!({}))], &[&tainted]), "the taint keeps it off");
        let tolerant = json!({"tolerations": [{"key": "gpu", "operator": "Exists"}]});
        assert!(fits_elsewhere(&[pod(500.0, tolerant)], &[&tainted]));
        assert!(fits_elsewhere(&[], &[]));
    }
}
