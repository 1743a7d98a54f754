//! Whether a Node no longer matches its NodePool's template: Karpenter's NodePool drift,
//! judged from the Node's labels and the NodePool as written, not from the controller's
//! hashes or its `Drifted` condition.
//!
//! Upstream (`kubernetes-sigs/karpenter` `pkg/controllers/nodeclaim/disruption/drift.go`)
//! drifts a NodeClaim when
//! - its NodePool's template hashes differently from the hash stamped on the claim
//!   (`areStaticFieldsDrifted`, `NodePoolDrifted`). The template's `metadata.labels` are part
//!   of that hash and Karpenter puts them on the Node it registers (`designs/drift.md`,
//!   "Static Fields": "values in the CRDs are reflected in the node in the same way that
//!   they're set"), so a Node lacking one of the template's labels, or carrying it with
//!   another value, was made from another template: its claim is drifted;
//! - its labels are not compatible with the NodePool's requirements
//!   (`areRequirementsDrifted`, `RequirementsDrifted`).
//!
//! Only what is certain is judged: a label the template sets that the Node contradicts, and
//! a requirement on a key the Node carries that its value breaks (or a `DoesNotExist` on a
//! key it carries). A key the Node lacks is never judged (upstream allows undefined
//! well-known labels), and other static fields (taints, annotations, `nodeClassRef`) are not
//! read, so this finds a subset of what Karpenter drifts, never more.

use std::collections::BTreeMap;

use serde_json::Value;

use super::resources::{Requirement, pool_requirements};

/// Why a Node with `labels` no longer matches `pool` (a NodePool manifest), if it does not.
pub fn mismatch(pool: &Value, labels: &BTreeMap<String, String>) -> Option<String> {
    let template = pool.pointer("/spec/template/metadata/labels").and_then(Value::as_object);
    for (key, want) in template.into_iter().flatten() {
        let Some(want) = want.as_str() else { continue };
        if labels.get(key).map(String::as_str) != Some(want) {
            return Some(match labels.get(key) {
                Some(have) => format!("NodePoolDrifted: the template labels {key}={want}, the Node has {key}={have}"),
                None => format!("NodePoolDrifted: the template labels {key}={want}, the Node has no {key}"),
            });
        }
    }
    pool_requirements(pool).iter().find(|r| breaks(r, labels)).map(|r| {
        format!(
            "RequirementsDrifted: the Node's {}={} breaks the requirement {} {} {:?}",
            r.key,
            labels.get(&r.key).map(String::as_str).unwrap_or_default(),
            r.key,
            r.operator,
            r.values
        )
    })
}

/// Whether the Node's labels break `r` on a key the Node carries.
fn breaks(r: &Requirement, labels: &BTreeMap<String, String>) -> bool {
    labels.contains_key(&r.key) && !r.matches(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn pool() -> Value {
        json!({"spec": {"template": {
            "metadata": {"labels": {"team": "web"}},
            "spec": {"requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
            ]}
        }}})
    }

    #[test]
    fn a_node_made_from_the_template_matches() {
        let node = labels(&[
            ("team", "web"),
            ("karpenter.sh/capacity-type", "on-demand"),
            ("karpenter.k8s.aws/instance-generation", "5"),
        ]);
        assert_eq!(mismatch(&pool(), &node), None);
        // Keys the Node lacks are not judged.
        assert_eq!(mismatch(&pool(), &labels(&[("team", "web")])), None);
    }

    #[test]
    fn a_changed_or_missing_template_label_drifts() {
        let other = labels(&[("team", "batch"), ("karpenter.sh/capacity-type", "on-demand")]);
        assert!(mismatch(&pool(), &other).is_some_and(|m| m.starts_with("NodePoolDrifted")));
        let missing = labels(&[("karpenter.sh/capacity-type", "on-demand")]);
        assert!(mismatch(&pool(), &missing).is_some_and(|m| m.contains("has no team")));
    }

    #[test]
    fn a_broken_requirement_drifts() {
        let spot = labels(&[("team", "web"), ("karpenter.sh/capacity-type", "spot")]);
        assert!(mismatch(&pool(), &spot).is_some_and(|m| m.starts_with("RequirementsDrifted")));
        let old = labels(&[("team", "web"), ("karpenter.k8s.aws/instance-generation", "3")]);
        assert!(mismatch(&pool(), &old).is_some());
    }
}
