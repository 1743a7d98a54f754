//! A pod's preferred node affinity, in the order Karpenter honours it, written from core's
//! source and sharing nothing with the controller.
//!
//! Karpenter treats a pod's heaviest preferred node-affinity term as a requirement (core
//! `pkg/scheduling/requirements.go` `newPodRequirements`, l. 95–101) and drops it only
//! when the pod cannot be placed with it (`pkg/controllers/provisioning/scheduling/
//! preferences.go` `Relax`, l. 38–44, and `removePreferredNodeAffinityTerm`, l. 59–72,
//! which removes the heaviest term so the next one becomes required). Every provisioning
//! pass starts again from the pod as written (`scheduling/scheduler.go` `Solve`, l. 476,
//! schedules a deep copy of the queued pod; `trySchedule`, l. 521–551, relaxes only after
//! `add` fails), and `add` tries the nodes that exist or are in flight before it opens a
//! new NodeClaim (l. 593–611) — but with the preference still in force. So a pod that had
//! to be relaxed onto an in-flight claim its preference rejects (say, spot was out of the
//! pool's limits) moves to a new claim its preference accepts as soon as one can be
//! launched, and the first claim is left behind. [`prefers`] says when a move is such a
//! move: towards a node Karpenter would try before the other.

use std::collections::BTreeMap;

use serde_json::Value;

use super::resources::Requirement;

/// A pod's preferred node-affinity terms, heaviest first (ties in the order written): the
/// order in which Karpenter requires them, one at a time.
pub fn preferred_terms(pod: &Value) -> Vec<Vec<Requirement>> {
    let mut terms: Vec<(i64, Vec<Requirement>)> = pod
        .pointer("/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let weight = t["weight"].as_i64().unwrap_or(0);
            let reqs = t.pointer("/preference/matchExpressions").and_then(Value::as_array).into_iter().flatten();
            (weight, reqs.filter_map(Requirement::from_json).collect())
        })
        .collect();
    terms.sort_by_key(|t| std::cmp::Reverse(t.0));
    terms.into_iter().map(|(_, reqs)| reqs).collect()
}

/// Whether a node labelled `better` comes before one labelled `worse` in the order
/// Karpenter tries nodes for `pod`: taking the preferred terms heaviest first, the first
/// term only one of them satisfies is satisfied by `better`. Nodes that satisfy the same
/// terms are equal, and neither is preferred.
pub fn prefers(pod: &Value, better: &BTreeMap<String, String>, worse: &BTreeMap<String, String>) -> bool {
    let holds = |term: &[Requirement], labels: &BTreeMap<String, String>| term.iter().all(|r| r.matches(labels));
    preferred_terms(pod)
        .iter()
        .map(|term| (holds(term, better), holds(term, worse)))
        .find(|(b, w)| b != w)
        .is_some_and(|(b, _)| b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn pod(terms: Value) -> Value {
        json!({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}})
    }

    fn term(weight: i64, key: &str, value: &str) -> Value {
        json!({"weight": weight, "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}})
    }

    #[test]
    fn a_node_meeting_the_heaviest_term_the_other_misses_is_preferred() {
        let p = pod(json!([term(10, "karpenter.sh/capacity-type", "spot")]));
        let spot = labels(&[("karpenter.sh/capacity-type", "spot")]);
        let od = labels(&[("karpenter.sh/capacity-type", "on-demand")]);
        assert!(prefers(&p, &spot, &od));
        assert!(!prefers(&p, &od, &spot));
        assert!(!prefers(&p, &spot, &spot), "equal nodes: neither is preferred");
        assert!(!prefers(&json!({"spec": {}}), &spot, &od), "no preference: no order");
    }

    #[test]
    fn terms_are_taken_heaviest_first() {
        let p = pod(json!([term(1, "zone", "a"), term(50, "karpenter.sh/capacity-type", "spot")]));
        let spot_b = labels(&[("karpenter.sh/capacity-type", "spot"), ("zone", "b")]);
        let od_a = labels(&[("karpenter.sh/capacity-type", "on-demand"), ("zone", "a")]);
        assert!(prefers(&p, &spot_b, &od_a), "the weight-50 term decides");
        assert!(!prefers(&p, &od_a, &spot_b));
        let spot_a = labels(&[("karpenter.sh/capacity-type", "spot"), ("zone", "a")]);
        assert!(prefers(&p, &spot_a, &spot_b), "tied on the heaviest, the next term decides");
    }
}
