//! The zones a pod's PersistentVolumeClaims allow, read from the store on their own terms
//! (no controller code): a claim bound to a volume allows the zones its required node
//! affinity names (an EBS volume lives in one zone); an unbound claim allows what its
//! StorageClass's `allowedTopologies` name, or anywhere. The oracles use it so that "an
//! offering could host this pod" and "the pod may move there" respect the volume's zone,
//! as the kube-scheduler's VolumeBinding does.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::Store;

/// Zone keys a volume's node affinity or a class's topology may use.
pub const ZONE_KEYS: [&str; 3] =
    ["topology.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone", "failure-domain.beta.kubernetes.io/zone"];

/// Claim (`namespace/name`) → the zones it allows; a claim allowing any zone is absent.
pub type ClaimZones = BTreeMap<String, BTreeSet<String>>;

fn key(group: &str, plural: &str) -> ResourceKey {
    ResourceKey { group: group.into(), plural: plural.into() }
}

/// The zones named by `In` expressions on a zone key, over ORed terms (`None` when some term
/// does not restrict the zone: the volume may be used anywhere that term allows).
fn zones_of_terms<'a>(terms: impl Iterator<Item = &'a Value>, expressions: &str) -> Option<BTreeSet<String>> {
    let mut zones = BTreeSet::new();
    let mut any = false;
    for term in terms {
        any = true;
        let in_zone: Vec<&Value> = term[expressions]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| ZONE_KEYS.contains(&e["key"].as_str().unwrap_or("")))
            .filter(|e| e["operator"].as_str().unwrap_or("In") == "In")
            .collect();
        if in_zone.is_empty() {
            return None;
        }
        // Within a term the expressions are ANDed: the zones all of them name.
        let mut term_zones: Option<BTreeSet<String>> = None;
        for e in in_zone {
            let values: BTreeSet<String> =
                e["values"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect();
            term_zones = Some(match term_zones {
                None => values,
                Some(z) => z.intersection(&values).cloned().collect(),
            });
        }
        zones.extend(term_zones.unwrap_or_default());
    }
    any.then_some(zones)
}

/// Every claim's allowed zones, from the store's claims, volumes and classes.
pub fn read(store: &Store) -> ClaimZones {
    let mut out = ClaimZones::new();
    let volumes: BTreeMap<&str, &Value> = store
        .iter(&key("", "persistentvolumes"), None)
        .map(|v| (v["metadata"]["name"].as_str().unwrap_or(""), v.as_ref()))
        .collect();
    let classes: BTreeMap<&str, &Value> = store
        .iter(&key("storage.k8s.io", "storageclasses"), None)
        .map(|c| (c["metadata"]["name"].as_str().unwrap_or(""), c.as_ref()))
        .collect();
    for claim in store.iter(&key("", "persistentvolumeclaims"), None) {
        let name = format!(
            "{}/{}",
            claim["metadata"]["namespace"].as_str().unwrap_or(""),
            claim["metadata"]["name"].as_str().unwrap_or("")
        );
        let volume_name = claim["spec"]["volumeName"].as_str().unwrap_or("");
        let zones = if volume_name.is_empty() {
            let class = claim["spec"]["storageClassName"].as_str().and_then(|c| classes.get(c));
            class
                .and_then(|c| c["allowedTopologies"].as_array())
                .and_then(|t| zones_of_terms(t.iter(), "matchLabelExpressions"))
        } else {
            volumes.get(volume_name).and_then(|v| {
                v.pointer("/spec/nodeAffinity/required/nodeSelectorTerms")
                    .and_then(Value::as_array)
                    .and_then(|t| zones_of_terms(t.iter(), "matchExpressions"))
            })
        };
        if let Some(zones) = zones {
            out.insert(name, zones);
        }
    }
    out
}

/// The zones the pod's claims allow together (`None`: any zone; an empty set: none).
pub fn allowed_zones(claims: &ClaimZones, pod: &Value) -> Option<BTreeSet<String>> {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or("");
    let mut allowed: Option<BTreeSet<String>> = None;
    for volume in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        let claim = match (volume["persistentVolumeClaim"]["claimName"].as_str(), volume.get("ephemeral")) {
            (Some(c), _) => c.to_string(),
            (None, Some(_)) => format!("{pod_name}-{}", volume["name"].as_str().unwrap_or("")),
            (None, None) => continue,
        };
        let Some(zones) = claims.get(&format!("{namespace}/{claim}")) else { continue };
        allowed = Some(match allowed {
            None => zones.clone(),
            Some(a) => a.intersection(zones).cloned().collect(),
        });
    }
    allowed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_pod_is_allowed_the_zones_of_all_its_claims() {
        let mut claims = ClaimZones::new();
        claims.insert("default/a".into(), BTreeSet::from(["z1".to_string(), "z2".to_string()]));
        claims.insert("default/b".into(), BTreeSet::from(["z2".to_string()]));
        let pod = |names: &[&str]| {
            let volumes: Vec<_> =
                names.iter().map(|n| json!({"name": n, "persistentVolumeClaim": {"claimName": n}})).collect();
            json!({"metadata": {"namespace": "default", "name": "p"}, "spec": {"volumes": volumes}})
        };
        assert_eq!(allowed_zones(&claims, &pod(&["a", "b"])), Some(BTreeSet::from(["z2".to_string()])));
        assert_eq!(allowed_zones(&claims, &pod(&["unconstrained"])), None);
        assert_eq!(allowed_zones(&claims, &json!({"spec": {}})), None);
    }

    #[test]
    fn terms_name_zones_or_leave_them_open() {
        let pinned = [
            json!({"matchExpressions": [{"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["z3"]}]}),
        ];
        assert_eq!(zones_of_terms(pinned.iter(), "matchExpressions"), Some(BTreeSet::from(["z3".to_string()])));
        let open = [json!({"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]})];
        assert_eq!(zones_of_terms(open.iter(), "matchExpressions"), None);
    }
}
