//! Which pods of a deleting node (or of a disruption candidate) Karpenter provisions capacity
//! for: core `pdb.Limits.IsCurrentlyReschedulable` (`pkg/utils/pdb/pdb.go` l. 132-146). Beside
//! `IsReschedulable` it leaves out pods that will not be evicted any time soon, an active
//! `karpenter.sh/do-not-disrupt` (`pkg/utils/pod/scheduling.go` l. 115 `IsDisruptable`) or a
//! PodDisruptionBudget that blocks every eviction (`maxUnavailable: 0`, `maxUnavailable: "0%"`,
//! `minAvailable: "100%"`, or more than one PDB selecting the pod): "spinning up capacity until
//! these pods are evicted is wasteful" (core `provisioner.go` l. 387 and
//! `disruption/helpers.go` l. 78-98 use it).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use std::collections::BTreeSet;
use std::sync::Arc;

use super::pending::{is_provisionable, is_reschedulable, is_static_pod, is_terminal, is_terminating};
#[cfg(test)]
use crate::scheduling::RequirementsCache;
use crate::scheduling::{ExistingNode, LabelSelector};
use crate::state::Snapshot;
use crate::termination::drain::{has_active_do_not_disrupt, tolerates_disrupted_taint};

/// A PodDisruptionBudget as the fully-blocking test needs it (core `pdb.go` l. 148 `pdbItem`).
#[derive(Clone, Debug)]
struct PdbItem {
    namespace: String,
    selector: Option<LabelSelector>,
    /// `maxUnavailable: 0`, `maxUnavailable: "0%"` or `minAvailable: "100%"` (core `newPdb`,
    /// l. 165-167).
    fully_blocking: bool,
    /// `unhealthyPodEvictionPolicy: AlwaysAllow`: unready pods may always be evicted.
    always_allow_unhealthy: bool,
}

/// The cluster's PodDisruptionBudgets (core `pdb.Limits`).
#[derive(Clone, Debug, Default)]
pub struct EvictionLimits {
    pdbs: Vec<PdbItem>,
}

fn is_fully_blocking(pdb: &PodDisruptionBudget) -> bool {
    let Some(spec) = pdb.spec.as_ref() else { return false };
    let max_unavailable_zero = match &spec.max_unavailable {
        Some(IntOrString::Int(0)) => true,
        Some(IntOrString::String(s)) => s == "0%",
        _ => false,
    };
    let min_available_all = matches!(&spec.min_available, Some(IntOrString::String(s)) if s == "100%");
    max_unavailable_zero || min_available_all
}

fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

impl EvictionLimits {
    /// The PDBs of `snapshot`.
    pub fn new(snapshot: &Snapshot) -> Self {
        let pdbs = snapshot
            .pdbs
            .values()
            .map(|pdb| {
                let spec = pdb.spec.as_ref();
                PdbItem {
                    namespace: pdb.metadata.namespace.clone().unwrap_or_else(|| "default".into()),
                    selector: spec.and_then(|s| s.selector.as_ref()).map(LabelSelector::from_k8s),
                    fully_blocking: is_fully_blocking(pdb),
                    always_allow_unhealthy: spec.and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
                        == Some("AlwaysAllow"),
                }
            })
            .collect();
        Self { pdbs }
    }

    /// Core `isFullyBlocked` (`pdb.go` l. 79, through `isEvictable` l. 89-129): a pod Karpenter
    /// would not evict anyway is never blocked; more than one PDB blocks; an unready pod under an
    /// `AlwaysAllow` PDB is not blocked; otherwise a fully blocking PDB blocks.
    pub fn is_fully_blocked(&self, pod: &Pod, now: jiff::Timestamp) -> bool {
        // Core `IsEvictable` (scheduling.go l. 58): active, not tolerating the disrupted taint,
        // not static, no active do-not-disrupt.
        let evictable = !is_terminal(pod)
            && !is_terminating(pod)
            && !tolerates_disrupted_taint(pod)
            && !is_static_pod(pod)
            && !has_active_do_not_disrupt(pod, now);
        if !evictable {
            return false;
        }
        let empty = std::collections::BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let matching: Vec<&PdbItem> = self
            .pdbs
            .iter()
            .filter(|p| p.namespace == namespace && p.selector.as_ref().is_some_and(|s| s.matches(labels)))
            .collect();
        if matching.len() > 1 {
            return true;
        }
        matching.first().is_some_and(|pdb| {
            let unhealthy_may_go = pdb.always_allow_unhealthy && !is_pod_ready(pod);
            !unhealthy_may_go && pdb.fully_blocking
        })
    }

    /// Core `IsCurrentlyReschedulable`: reschedulable, no active do-not-disrupt (a pod that is
    /// no longer active is disruptable, core `IsDisruptable`), and not fully blocked by PDBs.
    pub fn is_currently_reschedulable(&self, pod: &Pod, now: jiff::Timestamp) -> bool {
        let active = !is_terminal(pod) && !is_terminating(pod);
        let disruptable = !active || !has_active_do_not_disrupt(pod, now);
        is_reschedulable(pod) && disruptable && !self.is_fully_blocked(pod, now)
    }
}

/// Why a pod is among the pods a pass must place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodSource {
    /// Pending and provisionable (core `GetPendingPods`).
    Pending,
    /// Bound to a node being deleted, and currently reschedulable.
    DeletingNode,
}

/// The pods a provisioning pass (or a disruption simulation) must place, in key order: the
/// pending provisionable pods and the currently reschedulable pods of `existing` nodes marked
/// for deletion (core `provisioner.go` l. 372-391 `Schedule`, `disruption/helpers.go` l. 72-98).
pub fn pods_to_place<'a>(
    snapshot: &'a Snapshot,
    existing: &[ExistingNode],
    now: jiff::Timestamp,
) -> Vec<(&'a String, &'a Arc<Pod>, PodSource)> {
    let deleting: BTreeSet<&str> = existing.iter().filter(|n| n.marked_for_deletion).map(|n| n.name.as_str()).collect();
    let limits = EvictionLimits::new(snapshot);
    snapshot
        .pods
        .iter()
        .filter_map(|(key, pod)| {
            let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty());
            let source = match node {
                Some(node) if deleting.contains(node) && limits.is_currently_reschedulable(pod, now) => {
                    PodSource::DeletingNode
                }
                Some(_) => return None,
                None if is_provisionable(pod) => PodSource::Pending,
                None => return None,
            };
            Some((key, pod, source))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-01-05T12:00:00Z".parse().expect("timestamp")
    }

    fn pod(annotations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}, "annotations": annotations},
            "spec": {"containers": []},
            "status": {"phase": "Running", "startTime": "2026-01-05T11:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .expect("pod")
    }

    fn limits(specs: &[serde_json::Value]) -> EvictionLimits {
        EvictionLimits::new(&pdb_snapshot(specs))
    }

    /// A snapshot holding one PDB per spec, each selecting `app: web`.
    fn pdb_snapshot(specs: &[serde_json::Value]) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for (i, spec) in specs.iter().enumerate() {
            let mut spec = spec.clone();
            spec["selector"] = json!({"matchLabels": {"app": "web"}});
            let pdb: PodDisruptionBudget = serde_json::from_value(json!({
                "metadata": {"name": format!("pdb{i}"), "namespace": "default"},
                "spec": spec,
                "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}
            }))
            .expect("pdb");
            snapshot.pdbs.insert(format!("default/pdb{i}"), Arc::new(pdb));
        }
        snapshot
    }

    #[test]
    fn do_not_disrupt_pods_are_not_provisioned_for_until_the_annotation_expires() {
        let none = EvictionLimits::default();
        assert!(none.is_currently_reschedulable(&pod(json!({})), now()));
        assert!(!none.is_currently_reschedulable(&pod(json!({"karpenter.sh/do-not-disrupt": "true"})), now()));
        // Started an hour ago: "30m" has expired, "2h" has not.
        assert!(none.is_currently_reschedulable(&pod(json!({"karpenter.sh/do-not-disrupt": "30m"})), now()));
        assert!(!none.is_currently_reschedulable(&pod(json!({"karpenter.sh/do-not-disrupt": "2h"})), now()));
    }

    #[test]
    fn only_fully_blocking_pdbs_stop_provisioning_not_zero_disruptions_allowed() {
        let p = pod(json!({}));
        // disruptionsAllowed is 0 in every case: that alone is not "fully blocking".
        assert!(limits(&[json!({"minAvailable": 1})]).is_currently_reschedulable(&p, now()));
        assert!(limits(&[json!({"maxUnavailable": 1})]).is_currently_reschedulable(&p, now()));
        assert!(!limits(&[json!({"maxUnavailable": 0})]).is_currently_reschedulable(&p, now()));
        assert!(!limits(&[json!({"maxUnavailable": "0%"})]).is_currently_reschedulable(&p, now()));
        assert!(!limits(&[json!({"minAvailable": "100%"})]).is_currently_reschedulable(&p, now()));
        // Two PDBs over one pod: Kubernetes refuses every eviction.
        assert!(
            !limits(&[json!({"maxUnavailable": 1}), json!({"maxUnavailable": 1})])
                .is_currently_reschedulable(&p, now())
        );
        // An unready pod under AlwaysAllow may be evicted anyway.
        let mut unready = pod(json!({}));
        unready.status.as_mut().and_then(|s| s.conditions.as_mut()).expect("conditions")[0].status = "False".into();
        let always = limits(&[json!({"maxUnavailable": 0, "unhealthyPodEvictionPolicy": "AlwaysAllow"})]);
        assert!(always.is_currently_reschedulable(&unready, now()));
        assert!(!always.is_currently_reschedulable(&p, now()));
    }

    fn existing(name: &str, deleting: bool) -> ExistingNode {
        ExistingNode {
            name: name.into(),
            labels: Default::default(),
            taints: Vec::new(),
            startup_taints: Vec::new(),
            allocatable: Default::default(),
            capacity: Default::default(),
            requested: Default::default(),
            host_ports: Vec::new(),
            daemon_requests: Default::default(),
            initialized: true,
            marked_for_deletion: deleting,
            requirements_cache: RequirementsCache::default(),
        }
    }

    /// Core provisioner.go l. 387 (`CurrentlyReschedulablePods`): capacity for a deleting node
    /// is provisioned for its plain pods only, not for its do-not-disrupt pod nor for a pod whose
    /// PDB blocks every eviction; pending pods are placed; pods of live nodes are not.
    #[test]
    fn a_deleting_nodes_do_not_disrupt_and_fully_blocked_pods_get_no_capacity() {
        let mut snapshot = pdb_snapshot(&[json!({"maxUnavailable": 0})]);
        let mut add = |name: &str, app: &str, node: Option<&str>, annotations: serde_json::Value| {
            let mut p = pod(annotations);
            p.metadata.name = Some(name.into());
            p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
            match node {
                Some(node) => p.spec.as_mut().expect("spec").node_name = Some(node.into()),
                None => {
                    p.status = serde_json::from_value(json!({"phase": "Pending", "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}))
                    .expect("status");
                }
            }
            snapshot.pods.insert(format!("default/{name}"), Arc::new(p));
        };
        add("a-plain", "plain", Some("old"), json!({}));
        add("b-dnd", "plain", Some("old"), json!({"karpenter.sh/do-not-disrupt": "true"}));
        add("c-blocked", "web", Some("old"), json!({}));
        add("d-pending", "plain", None, json!({}));
        add("e-live", "plain", Some("live"), json!({}));
        let nodes = [existing("old", true), existing("live", false)];
        let placed: Vec<(String, PodSource)> =
            pods_to_place(&snapshot, &nodes, now()).into_iter().map(|(k, _, s)| (k.clone(), s)).collect();
        assert_eq!(
            placed,
            [
                ("default/a-plain".to_string(), PodSource::DeletingNode),
                ("default/d-pending".to_string(), PodSource::Pending)
            ]
        );
    }
}
