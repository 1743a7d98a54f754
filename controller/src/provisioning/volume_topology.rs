//! Volume topology (core `provisioning/scheduling/volumetopology.go`): where a pod's
//! PersistentVolumeClaims let it run. A claim bound to a zonal volume (an EBS volume lives in
//! one zone) pins the pod to the volume's node affinity; an unbound `WaitForFirstConsumer`
//! claim may be restricted by its StorageClass's `allowedTopologies`.
//!
//! The requirements are alternatives (one per OR-ed term), kept apart from the pod's own
//! node affinity (upstream l. 56-64: "NOT added to pod's NodeAffinity (to preserve correct
//! TSC counting)"); the scheduler tries them in order when it adds the pod to a node or a
//! claim (`scheduling/nodeclaim.rs`, `scheduling/existing.rs`). Claims, volumes and classes
//! are read from the state ([`crate::state::volume_watch`]), as upstream reads them from
//! its cached client.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Volume};

use crate::apis::labels;
use crate::scheduling::pod::node_selector_term;
use crate::scheduling::{Requirement, Requirements, SchedulablePod};
use crate::state::Snapshot;

/// `pv.kubernetes.io/bind-completed`: the PV controller's mark that a claim's binding is
/// done; a claim with a `volumeName` but without it is not bound for the kube-scheduler
/// (upstream `ValidatePersistentVolumeClaims` l. 250-255).
pub const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";

/// The claim a volume mounts, if any (core `utils/volume/volume.go`
/// `GetPersistentVolumeClaim`): a `persistentVolumeClaim` volume names it, a generic
/// `ephemeral` volume's claim is `<pod>-<volume>`.
///
/// # Errors
/// The claim is not in the state.
fn claim_of<'a>(
    snapshot: &'a Snapshot,
    pod: &Pod,
    volume: &Volume,
) -> Result<Option<&'a PersistentVolumeClaim>, String> {
    let name = match (&volume.persistent_volume_claim, &volume.ephemeral) {
        (Some(claim), _) => claim.claim_name.clone(),
        (None, Some(_)) => format!("{}-{}", pod.metadata.name.as_deref().unwrap_or(""), volume.name),
        (None, None) => return Ok(None),
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    snapshot
        .persistent_volume_claims
        .get(&format!("{namespace}/{name}"))
        .map(|c| Some(c.as_ref()))
        .ok_or_else(|| format!("getting persistent volume claim, PersistentVolumeClaim {namespace}/{name} not found"))
}

/// The pod's volume topology alternatives (upstream `GetRequirements` l. 65-90): the cross
/// product of each claimed volume's alternatives, empty when no volume constrains the pod.
///
/// # Errors
/// A claim, volume or class the pod needs is not in the state; upstream skips such a pod
/// for the pass (`provisioner.go` `getVolumeTopologyRequirements` l. 598-605).
pub fn volume_requirements(snapshot: &Snapshot, pod: &Pod) -> Result<Vec<Requirements>, String> {
    let Some(volumes) = pod.spec.as_ref().and_then(|s| s.volumes.as_ref()) else { return Ok(Vec::new()) };
    // `None` is upstream's nil alternative: matches everything.
    let mut alternatives: Vec<Option<Requirements>> = vec![None];
    for volume in volumes {
        let Some(claim) = claim_of(snapshot, pod, volume)? else { continue };
        let per_volume = claim_requirements(snapshot, claim)?;
        if per_volume.is_empty() {
            continue;
        }
        alternatives = merge(&alternatives, &per_volume);
    }
    Ok(alternatives.into_iter().flatten().collect())
}

/// Upstream `mergeVolumeRequirementAlternatives` (l. 92-141): the compatible branches of the
/// cross product, or every branch when none is compatible.
fn merge(alternatives: &[Option<Requirements>], per_volume: &[Requirements]) -> Vec<Option<Requirements>> {
    let product = |only_compatible: bool| -> Vec<Option<Requirements>> {
        let mut merged = Vec::new();
        for existing in alternatives {
            for volume in per_volume {
                if only_compatible && existing.as_ref().is_some_and(|e| e.intersects(volume).is_err()) {
                    continue;
                }
                let mut m = existing.clone().unwrap_or_default();
                m.add_all(volume);
                merged.push(Some(m));
            }
        }
        merged
    };
    let compatible = product(true);
    if compatible.is_empty() { product(false) } else { compatible }
}

/// One claim's alternatives (upstream `getRequirements` l. 143-170): its volume's node
/// affinity terms when bound, else its StorageClass's `allowedTopologies` terms.
fn claim_requirements(snapshot: &Snapshot, claim: &PersistentVolumeClaim) -> Result<Vec<Requirements>, String> {
    let spec = claim.spec.as_ref();
    if let Some(volume_name) = spec.and_then(|s| s.volume_name.as_deref()).filter(|n| !n.is_empty()) {
        return volume_affinity(snapshot, volume_name);
    }
    match spec.and_then(|s| s.storage_class_name.as_deref()).filter(|n| !n.is_empty()) {
        Some(class) => class_topologies(snapshot, class),
        None => Ok(Vec::new()),
    }
}

/// Upstream `getStorageClassRequirements` (l. 172-189): each `allowedTopologies` term, its
/// `matchLabelExpressions` as `In` requirements.
fn class_topologies(snapshot: &Snapshot, class_name: &str) -> Result<Vec<Requirements>, String> {
    let class = snapshot
        .storage_classes
        .get(class_name)
        .ok_or_else(|| format!("getting storage class, StorageClass {class_name} not found"))?;
    let mut alternatives = Vec::new();
    for term in class.allowed_topologies.iter().flatten() {
        let mut requirements = Requirements::new();
        for expression in term.match_label_expressions.iter().flatten() {
            requirements.add(
                labels::normalize_label(&expression.key),
                Requirement::in_values(expression.values.iter().cloned()),
            );
        }
        if !requirements.is_empty() {
            alternatives.push(requirements);
        }
    }
    Ok(alternatives)
}

/// Upstream `getPersistentVolumeRequirements` (l. 191-222): each required node-affinity
/// term of the volume; a local or hostPath volume's hostname requirement is dropped (the pod
/// may move to a new node), a hostname-only term becoming an unconstrained alternative.
fn volume_affinity(snapshot: &Snapshot, volume_name: &str) -> Result<Vec<Requirements>, String> {
    let volume = snapshot
        .persistent_volumes
        .get(volume_name)
        .ok_or_else(|| format!("getting persistent volume, PersistentVolume {volume_name} not found"))?;
    let Some(spec) = volume.spec.as_ref() else { return Ok(Vec::new()) };
    let Some(required) = spec.node_affinity.as_ref().and_then(|a| a.required.as_ref()) else { return Ok(Vec::new()) };
    let node_local = spec.local.is_some() || spec.host_path.is_some();
    let mut alternatives = Vec::new();
    for term in &required.node_selector_terms {
        let all = term.match_expressions.as_deref().unwrap_or_default();
        let kept: Vec<_> = all.iter().filter(|e| !(node_local && e.key == labels::HOSTNAME_LABEL)).collect();
        if node_local && !all.is_empty() && kept.is_empty() {
            alternatives.push(Requirements::new());
            continue;
        }
        if !kept.is_empty() {
            alternatives.push(node_selector_term(kept)?);
        }
    }
    Ok(alternatives)
}

/// Whether a pending pod's claims let it be provisioned for (upstream
/// `ValidatePersistentVolumeClaims` l. 224-289): every claim exists and is not being
/// deleted; a claim naming a volume has that volume (not being deleted) and the
/// bind-completed mark; an unbound claim names a StorageClass that exists and binds
/// `WaitForFirstConsumer` (an `Immediate` claim must be bound by the PV controller first).
///
/// # Errors
/// Why the pod is not provisionable now.
pub fn validate_claims(snapshot: &Snapshot, pod: &Pod) -> Result<(), String> {
    for volume in pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).into_iter().flatten() {
        let Some(claim) = claim_of(snapshot, pod, volume)? else { continue };
        let name = claim.metadata.name.as_deref().unwrap_or("");
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim {name} is being deleted"));
        }
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
            return Err(format!("persistentvolumeclaim {name} bound to non-existent persistentvolume"));
        }
        let spec = claim.spec.as_ref();
        if let Some(volume_name) = spec.and_then(|s| s.volume_name.as_deref()).filter(|n| !n.is_empty()) {
            let pv = snapshot
                .persistent_volumes
                .get(volume_name)
                .ok_or_else(|| format!("failed to validate pvc {name}, persistentvolume {volume_name} not found"))?;
            if pv.metadata.deletion_timestamp.is_some() {
                return Err(format!("failed to validate pvc {name}, persistentvolume is being deleted"));
            }
            if !claim.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(BIND_COMPLETED)) {
                return Err(format!(
                    "pvc {name} is considered unbound because it does not contain annotation {BIND_COMPLETED}"
                ));
            }
            continue;
        }
        let class_name = spec.and_then(|s| s.storage_class_name.as_deref()).unwrap_or("");
        if class_name.is_empty() {
            return Err(format!("unbound pvc {name} must define a storage class"));
        }
        let class = snapshot
            .storage_classes
            .get(class_name)
            .ok_or_else(|| format!("failed to validate pvc {name}, failed to get storage class {class_name}"))?;
        // kube-apiserver defaults an unset mode to Immediate (`pkg/apis/storage/v1/defaults.go`).
        if class.volume_binding_mode.as_deref().unwrap_or("Immediate") == "Immediate" {
            return Err(format!("failed to validate pvc {name}, pvc with immediate volume binding mode must be bound"));
        }
    }
    Ok(())
}

/// Adds the pod's volume topology to its scheduling form (core `provisioner.go` `Schedule`
/// → `getVolumeTopologyRequirements` l. 594-612); a pending pod's claims are validated first
/// (`GetPendingPods` → `Validate` l. 569-576). A pod without volumes costs nothing.
///
/// # Errors
/// Why the pod is left out of this pass: its claims are not valid, or what they name is not
/// in the state yet.
pub fn add_volume_topology(
    snapshot: &Snapshot,
    pod: &Pod,
    schedulable: &mut SchedulablePod,
    pending: bool,
) -> Result<(), String> {
    if pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).is_none_or(Vec::is_empty) {
        return Ok(());
    }
    if pending {
        validate_claims(snapshot, pod)?;
    }
    schedulable.shape.volume_requirements = volume_requirements(snapshot, pod)?;
    Ok(())
}

/// [`SchedulablePod::from_pod`] with [`add_volume_topology`], for callers that drop a pod
/// either fails for (the disruption simulation).
///
/// # Errors
/// The pod does not parse, or [`add_volume_topology`] failed.
pub fn schedulable_pod(snapshot: &Snapshot, pod: &Pod, pending: bool) -> Result<SchedulablePod, String> {
    let mut schedulable = SchedulablePod::from_pod(pod)?;
    add_volume_topology(snapshot, pod, &mut schedulable, pending)?;
    Ok(schedulable)
}

#[cfg(test)]
#[path = "volume_topology_tests.rs"]
mod tests;
