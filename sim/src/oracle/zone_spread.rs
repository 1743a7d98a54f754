//! The zones a pending pod's `DoNotSchedule` zone topology spreads let Karpenter use now,
//! judged from the cluster's side: which zones exist for the spread, how many of the
//! group's pods each holds, and so which zones keep the skew.
//!
//! Karpenter's universe of zones for a spread is not the zones the pod's NodePool can
//! launch in but every zone *any* NodePool's instance types offer or its requirements name
//! (core `pkg/controllers/provisioning/scheduling/topology.go` `buildDomainGroups`,
//! l. 105–142: every pool's requirements intersected with each of its instance types'
//! requirements, plus each pool's `In` requirements; with the default
//! `nodeTaintsPolicy: Ignore` every such domain counts, `topologydomaingroup.go`
//! `ForEachDomain`, l. 56–60). The global minimum is taken over those domains the pod's own
//! requirements allow (`topology.go` `AddRequirements`, l. 229–231, `podDomains` is the pod's
//! requirement or `Exists`; `topologygroup.go` `domainMinCount`, l. 300–321), and a zone
//! is usable only when its count plus the pod minus that minimum is at most `maxSkew`.
//! So a zone that only another NodePool offers holds the minimum at zero, and once each of
//! the pod's zones has `maxSkew` of the group the pod has nowhere to go: Karpenter leaves
//! it pending (reported upstream as kubernetes-sigs/karpenter#3272 and
//! aws/karpenter-provider-aws#8637). Counts are the group's pods bound to nodes the pod's
//! node selector and required affinity accept (the default `nodeAffinityPolicy: Honor`,
//! `topologygroup.go` `NewTopologyGroup`, l. 75–118, and `topology.go` `countDomains`).
//!
//! `ScheduleAnyway` spreads are left out: Karpenter relaxes them when they fail
//! (`scheduling/preferences.go`), so they never strand a pod.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::first_fit::ZONE_KEY;
use super::resources::pod_allows;

/// One `DoNotSchedule` zone spread of a pod.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneSpread {
    /// `maxSkew`.
    pub max_skew: i64,
    /// The constraint's `labelSelector.matchLabels` (the scenario renderer fills in the
    /// workload's own `app` label when it is missing).
    pub match_labels: BTreeMap<String, String>,
    /// `minDomains`, when set.
    pub min_domains: Option<usize>,
}

/// The pod's `DoNotSchedule` spreads over `topology.kubernetes.io/zone`. A constraint with
/// `matchExpressions` is not modelled (none is returned for it), so it never narrows zones.
pub fn zone_spreads(pod: &Value) -> Vec<ZoneSpread> {
    pod.pointer("/spec/topologySpreadConstraints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["topologyKey"] == ZONE_KEY && c["whenUnsatisfiable"] == "DoNotSchedule")
        .filter(|c| c["labelSelector"].get("matchExpressions").is_none_or(|e| e.as_array().is_none_or(Vec::is_empty)))
        .filter_map(|c| {
            let match_labels = c["labelSelector"]["matchLabels"]
                .as_object()?
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            Some(ZoneSpread {
                max_skew: c["maxSkew"].as_i64().unwrap_or(1),
                match_labels,
                min_domains: c["minDomains"].as_u64().map(|m| m as usize),
            })
        })
        .collect()
}

/// A pod already placed, as the spread counts it: its labels, namespace and the labels of
/// its node.
pub struct Placed<'a> {
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// Its node's labels.
    pub node_labels: &'a BTreeMap<String, String>,
}

/// The zones of `universe` a pod may be placed in under all its `DoNotSchedule` zone
/// spreads, given the pods already `placed`; `None` when it has no such spread.
pub fn usable_zones(pod: &Value, universe: &BTreeSet<String>, placed: &[Placed<'_>]) -> Option<BTreeSet<String>> {
    let spreads = zone_spreads(pod);
    if spreads.is_empty() {
        return None;
    }
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let own: BTreeMap<String, String> = pod["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    // The pod's own domains: the zones its node selector and required affinity allow.
    let pod_domains: BTreeSet<&String> = universe.iter().filter(|z| pod_allows_zone(pod, z)).collect();
    let mut usable: BTreeSet<String> = pod_domains.iter().map(|z| (*z).clone()).collect();
    for spread in &spreads {
        let selects =
            |labels: &BTreeMap<String, String>| spread.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v));
        let mut counts: BTreeMap<&String, i64> = pod_domains.iter().map(|z| (*z, 0)).collect();
        for p in placed.iter().filter(|p| p.namespace == namespace && selects(&p.labels)) {
            if !pod_allows(pod, p.node_labels) {
                continue;
            }
            let Some(zone) = p.node_labels.get(ZONE_KEY) else { continue };
            if let Some(c) = counts.get_mut(zone) {
                *c += 1;
            }
        }
        let too_few = spread.min_domains.is_some_and(|m| counts.len() < m);
        let min = if too_few { 0 } else { counts.values().copied().min().unwrap_or(0) };
        let self_selecting = i64::from(selects(&own));
        usable.retain(|z| counts.get(z).is_some_and(|c| c + self_selecting - min <= spread.max_skew));
    }
    Some(usable)
}

/// Whether the pod's node selector and required node affinity allow `zone`, judging only
/// the zone key (a requirement on another key does not narrow the spread's domains).
fn pod_allows_zone(pod: &Value, zone: &str) -> bool {
    let mut only_zone = pod.clone();
    if let Some(selector) = only_zone.pointer_mut("/spec/nodeSelector").and_then(Value::as_object_mut) {
        selector.retain(|k, _| k == ZONE_KEY);
    }
    if let Some(terms) = only_zone
        .pointer_mut("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array_mut)
    {
        for term in terms.iter_mut() {
            if let Some(exprs) = term.get_mut("matchExpressions").and_then(Value::as_array_mut) {
                exprs.retain(|e| e["key"] == ZONE_KEY);
            }
            if let Some(fields) = term.get_mut("matchFields").and_then(Value::as_array_mut) {
                fields.clear();
            }
        }
    }
    let labels = BTreeMap::from([(ZONE_KEY.to_string(), zone.to_string())]);
    pod_allows(&only_zone, &labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spread_pod(pool: &str) -> Value {
        json!({
            "metadata": {"namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "nodeSelector": {"karpenter.sh/nodepool": pool},
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE_KEY,
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]
            }
        })
    }

    fn node(pool: &str, zone: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("karpenter.sh/nodepool".to_string(), pool.to_string()),
            (ZONE_KEY.to_string(), zone.to_string()),
        ])
    }

    fn zones(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|z| z.to_string()).collect()
    }

    /// Story 716913170: one pod of the group in each of zones a–d, where its pool launches;
    /// zone e exists only through another NodePool and holds none, so the minimum is zero and
    /// no zone keeps the skew: Karpenter leaves the fifth pod pending, and so the oracle must
    /// not call it hostable. Without zone e in the universe (the excuse does not apply) every
    /// zone keeps the skew and the pod is hostable.
    #[test]
    fn a_zone_only_another_pool_offers_holds_the_minimum_at_zero() {
        let nodes: Vec<_> = ["a", "b", "c", "d"].iter().map(|z| node("pool-1", z)).collect();
        let placed: Vec<Placed<'_>> = nodes
            .iter()
            .map(|n| Placed {
                namespace: "default",
                labels: BTreeMap::from([("app".into(), "web".into())]),
                node_labels: n,
            })
            .collect();
        let pod = spread_pod("pool-1");
        assert_eq!(usable_zones(&pod, &zones(&["a", "b", "c", "d", "e"]), &placed), Some(zones(&["e"])));
        assert_eq!(usable_zones(&pod, &zones(&["a", "b", "c", "d"]), &placed), Some(zones(&["a", "b", "c", "d"])));
    }

    /// Pods of the group on nodes the pod's node selector rejects do not count
    /// (`nodeAffinityPolicy: Honor`), nor pods of another app; a pod without a
    /// `DoNotSchedule` zone spread is not narrowed at all.
    #[test]
    fn only_the_groups_pods_on_nodes_the_pod_accepts_count() {
        let other_pool = node("pool-0", "a");
        let own_pool = node("pool-1", "b");
        let web = || BTreeMap::from([("app".to_string(), "web".to_string())]);
        let placed = vec![
            Placed { namespace: "default", labels: web(), node_labels: &other_pool },
            Placed {
                namespace: "default",
                labels: BTreeMap::from([("app".into(), "db".into())]),
                node_labels: &own_pool,
            },
        ];
        let pod = spread_pod("pool-1");
        assert_eq!(usable_zones(&pod, &zones(&["a", "b"]), &placed), Some(zones(&["a", "b"])));
        let mut anyway = pod.clone();
        anyway["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] = json!("ScheduleAnyway");
        assert_eq!(usable_zones(&anyway, &zones(&["a", "b"]), &placed), None);
    }

    /// A pod pinned to one zone by its node selector takes the minimum over that zone only.
    #[test]
    fn the_minimum_is_over_the_zones_the_pod_allows() {
        let a = node("pool-1", "a");
        let placed = vec![Placed {
            namespace: "default",
            labels: BTreeMap::from([("app".into(), "web".into())]),
            node_labels: &a,
        }];
        let mut pod = spread_pod("pool-1");
        pod["spec"]["nodeSelector"][ZONE_KEY] = json!("a");
        assert_eq!(usable_zones(&pod, &zones(&["a", "b"]), &placed), Some(zones(&["a"])));
    }
}
