//! DaemonSet overhead: what the DaemonSet pods still due on a node take from it before any
//! pending pod can (core `scheduling/scheduler.go` v1.14.1).
//!
//! - A **new claim** has one overhead per group of instance types that run the same set of
//!   DaemonSets (`buildDaemonOverheadGroups`, l. 969-1003; a DaemonSet counts for an instance
//!   type when `isDaemonPodCompatible`, l. 1019-1041, holds). An arm64-only DaemonSet adds
//!   nothing to an amd64 type of a pool that mixes both. Each group also carries its
//!   DaemonSets' host ports, which a pending pod may not bind (`nodeclaim.go` l. 559-566).
//! - An **existing or in-flight node** reserves the requests of the DaemonSets compatible with
//!   it (`getCompatibleDaemonPods`, l. 804-831) minus those of its DaemonSet pods already
//!   bound, clamped at zero (`existingnode.go` `NewExistingNode` l. 47-66).

use std::collections::BTreeMap;

use super::pod::{HostPort, PodShape, SchedulablePod};
use super::requirements::Requirements;
use super::resources::Resources;
use super::taints::{Taint, TaintEffect, untolerated};
use crate::cloudprovider::InstanceType;

/// The instance types of a template that run the same DaemonSets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DaemonGroup {
    /// Summed requests of those DaemonSets' pods (core `resources.RequestsForPods`).
    pub overhead: Resources,
    /// Host ports those pods bind.
    pub host_ports: Vec<HostPort>,
}

/// A template's DaemonSet overhead, per instance type.
#[derive(Clone, Debug, Default)]
pub struct DaemonOverhead {
    /// The distinct groups.
    pub groups: Vec<DaemonGroup>,
    /// Group index of each of the template's instance types (same order).
    group_of: Vec<u32>,
    /// Allocatable minus the group's overhead, per instance type: what pods may use.
    available: Vec<Resources>,
    any_host_ports: bool,
}

/// The DaemonSet's strict node requirements that a template admits: the nodeSelector with each
/// required OR-term in turn (core relaxes the required terms one by one,
/// `removeRequiredNodeAffinityTerm`), after its taints are tolerated, `PreferNoSchedule`
/// ignored (core `toleratePreferNoScheduleTaints`).
fn terms_admitted(template_requirements: &Requirements, taints: &[Taint], daemon: &PodShape) -> Vec<Requirements> {
    let hard: Vec<Taint> = taints.iter().filter(|t| t.effect != TaintEffect::PreferNoSchedule).cloned().collect();
    if untolerated(&hard, &daemon.tolerations).is_some() {
        return Vec::new();
    }
    daemon.strict_requirements().into_iter().filter(|terms| template_requirements.compatible(terms).is_ok()).collect()
}

impl DaemonOverhead {
    /// Groups `candidates` (a template's instance types) by the DaemonSets that would run on
    /// them. Returns the overhead of each candidate's group, in `candidates` order, to filter
    /// on; [`Self::select`] then keeps the chosen ones.
    pub fn group(
        template_requirements: &Requirements,
        taints: &[Taint],
        candidates: &[&InstanceType],
        daemons: &[SchedulablePod],
    ) -> (Self, Vec<u32>) {
        let admitted: Vec<Vec<Requirements>> =
            daemons.iter().map(|d| terms_admitted(template_requirements, taints, &d.shape)).collect();
        let mut keys: BTreeMap<Vec<usize>, u32> = BTreeMap::new();
        let mut groups = Vec::new();
        let mut group_of = Vec::with_capacity(candidates.len());
        for it in candidates {
            // Core uses `Intersects` for the instance type: custom keys it lacks do not matter.
            let members: Vec<usize> = admitted
                .iter()
                .enumerate()
                .filter(|(_, terms)| terms.iter().any(|t| it.requirements.intersects(t).is_ok()))
                .map(|(i, _)| i)
                .collect();
            let next = groups.len() as u32;
            let index = *keys.entry(members.clone()).or_insert_with(|| {
                let mut group = DaemonGroup::default();
                for &i in &members {
                    group.overhead.add(&daemons[i].shape.requests);
                    group.host_ports.extend(daemons[i].shape.host_ports.iter().cloned());
                }
                groups.push(group);
                next
            });
            group_of.push(index);
        }
        let any_host_ports = groups.iter().any(|g| !g.host_ports.is_empty());
        (Self { groups, group_of: Vec::new(), available: Vec::new(), any_host_ports }, group_of)
    }

    /// Whether any DaemonSet of the template binds a host port.
    pub fn has_host_ports(&self) -> bool {
        self.any_host_ports
    }

    /// The overhead of group `index`.
    pub fn overhead(&self, group: u32) -> &Resources {
        &self.groups[group as usize].overhead
    }

    /// Fixes the template's instance types: `chosen` are (group, instance type) in the
    /// template's final order.
    pub fn select<'a>(&mut self, chosen: impl Iterator<Item = (u32, &'a InstanceType)>) {
        self.group_of.clear();
        self.available.clear();
        for (group, it) in chosen {
            let mut available = it.allocatable().clone();
            available.sub(self.overhead(group));
            self.group_of.push(group);
            self.available.push(available);
        }
    }

    /// What pods may use on instance type `index`: its allocatable minus its DaemonSets.
    pub fn available(&self, index: u32) -> &Resources {
        &self.available[index as usize]
    }

    /// Whether a pod binding `ports` collides with the DaemonSets of instance type `index`.
    pub fn ports_conflict(&self, index: u32, ports: &[HostPort]) -> bool {
        self.any_host_ports
            && self.groups[self.group_of[index as usize] as usize]
                .host_ports
                .iter()
                .any(|daemon| ports.iter().any(|p| daemon.conflicts(p)))
    }

    /// A claim's `resources.requests`: its pods' requests plus the smallest overhead over the
    /// groups of its remaining options (core `nodeclaim.go` `addDaemonRequests`, l. 352-377).
    pub fn claim_requests(&self, pods: &Resources, options: &[u32]) -> Resources {
        let mut floor: Option<Resources> = None;
        for &index in options {
            let overhead = self.overhead(self.group_of[index as usize]);
            match &mut floor {
                Some(floor) => floor.min_with(overhead),
                None => floor = Some(overhead.clone()),
            }
        }
        pods.plus(&floor.unwrap_or_default())
    }
}

/// The DaemonSet requests still due on an existing or in-flight node: the DaemonSets whose pods
/// tolerate `taints` (the node's, ephemeral and startup taints left out while uninitialized)
/// and whose nodeSelector and first required term its labels satisfy (core
/// `isDaemonPodCompatibleWithNode`, `NewStrictPodRequirements`), minus `bound` (requests of the
/// DaemonSet pods already on it), never below zero.
pub fn due_on_node(
    labels: &Requirements,
    taints: &[Taint],
    bound: &Resources,
    daemons: &[SchedulablePod],
) -> Resources {
    let mut due = Resources::default();
    for daemon in daemons {
        let strict = daemon.shape.strict_requirements();
        let compatible = strict.first().is_none_or(|terms| labels.compatible_strict(terms).is_ok());
        if compatible && untolerated(taints, &daemon.shape.tolerations).is_none() {
            due.add(&daemon.shape.requests);
        }
    }
    due.sub(bound);
    due.clamp_negative();
    due
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::apis::labels::ARCH_LABEL;
    use crate::scheduling::Requirement;

    fn daemon(name: &str, cpu_milli: i64, arch: Option<&str>, port: Option<i32>) -> SchedulablePod {
        let mut pod = SchedulablePod::new("default", name, Resources::cpu_memory(cpu_milli, 0));
        pod.shape.requests.pods = 1;
        if let Some(arch) = arch {
            let mut term = Requirements::new();
            term.add(ARCH_LABEL, Requirement::in_values([arch]));
            pod.shape.required_node_terms.push(term);
        }
        if let Some(port) = port {
            pod.shape.host_ports.push(HostPort { ip: String::new(), protocol: "TCP".into(), port });
        }
        pod
    }

    fn typed(category: &str, arch: &str) -> Arc<InstanceType> {
        Arc::new(crate::cloudprovider::fake::instance_type(category, 4, 8, arch))
    }

    /// Core `buildDaemonOverheadGroups`: an amd64 type carries the amd64 DaemonSet only, an
    /// arm64 type the arm64 one; the claim's requests add the smaller of the two.
    #[test]
    fn overhead_is_per_group_of_instance_types_that_run_the_same_daemonsets() {
        let (amd, arm) = (typed("amd", "amd64"), typed("arm", "arm64"));
        let daemons = [daemon("ds-amd", 1000, Some("amd64"), None), daemon("ds-arm", 3000, Some("arm64"), Some(80))];
        let (mut overhead, groups) =
            DaemonOverhead::group(&Requirements::new(), &[], &[amd.as_ref(), arm.as_ref()], &daemons);
        assert_eq!(overhead.overhead(groups[0]).cpu_milli, 1000);
        assert_eq!(overhead.overhead(groups[1]).cpu_milli, 3000);
        overhead.select(groups.iter().copied().zip([amd.as_ref(), arm.as_ref()]));
        assert_eq!(overhead.available(0).cpu_milli, amd.allocatable().cpu_milli - 1000);
        assert_eq!(overhead.available(1).cpu_milli, arm.allocatable().cpu_milli - 3000);
        let port_80 = [HostPort { ip: String::new(), protocol: "TCP".into(), port: 80 }];
        assert!(!overhead.ports_conflict(0, &port_80));
        assert!(overhead.ports_conflict(1, &port_80));
        let pods = Resources::cpu_memory(500, 0);
        assert_eq!(overhead.claim_requests(&pods, &[0, 1]).cpu_milli, 1500);
        assert_eq!(overhead.claim_requests(&pods, &[1]).cpu_milli, 3500);
    }

    /// Core `NewExistingNode`: the compatible DaemonSets' requests minus what their bound pods
    /// already take, clamped at zero; a DaemonSet the node's labels or taints exclude is not due.
    #[test]
    fn a_node_reserves_only_the_compatible_daemonsets_not_yet_bound() {
        let mut labels = Requirements::new();
        labels.add(ARCH_LABEL, Requirement::in_values(["amd64"]));
        let daemons = [daemon("ds-amd", 1000, Some("amd64"), None), daemon("ds-arm", 3000, Some("arm64"), None)];
        assert_eq!(due_on_node(&labels, &[], &Resources::default(), &daemons).cpu_milli, 1000);
        let mut bound = Resources::cpu_memory(1000, 0);
        bound.pods = 1;
        assert!(due_on_node(&labels, &[], &bound, &daemons).is_zero());
        let mut more = Resources::cpu_memory(5000, 0);
        more.pods = 2;
        assert!(due_on_node(&labels, &[], &more, &daemons).is_zero(), "clamped at zero");
        let tainted = [Taint::new("dedicated", "x", TaintEffect::NoSchedule)];
        assert!(due_on_node(&labels, &tainted, &Resources::default(), &daemons).is_zero());
    }
}
