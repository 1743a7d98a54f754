//! A NodeClaim being planned in this pass (core `nodeclaim.go`): pods accumulate on it while
//! the set of instance types that could still hold them all shrinks — first-fit-decreasing
//! into "flexible" bins.

use std::borrow::Cow;

use super::instance_selection::{MinValuesPolicy, min_values_shortfall};
use super::pod::{HostPort, PodShape};
use super::requirements::{Requirement, Requirements};
use super::resources::Resources;
use super::taints::untolerated;
use super::template::NodeClaimTemplate;
use super::topology::Topology;

/// Why a pod cannot join a node or claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddError {
    /// Reason, for the pod's scheduling error.
    pub message: String,
    /// The node will reject every later pod of the same shape in this pass too (its requests
    /// only grow, requirements only narrow, anti-affinity counts only grow).
    pub permanent: bool,
}

impl AddError {
    pub(crate) fn permanent(message: String) -> Self {
        Self { message, permanent: true }
    }

    pub(crate) fn transient(message: String) -> Self {
        Self { message, permanent: false }
    }
}

/// The smallest value of each core resource over a set of instance types: requests within it
/// fit every option, so no filtering is needed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FloorAllocatable {
    cpu_milli: i64,
    memory_bytes: i64,
    ephemeral_storage_bytes: i64,
    pods: i64,
}

impl FloorAllocatable {
    fn of<'a>(allocatables: impl Iterator<Item = &'a Resources>) -> Self {
        let mut floor =
            Self { cpu_milli: i64::MAX, memory_bytes: i64::MAX, ephemeral_storage_bytes: i64::MAX, pods: i64::MAX };
        for a in allocatables {
            floor.cpu_milli = floor.cpu_milli.min(a.cpu_milli);
            floor.memory_bytes = floor.memory_bytes.min(a.memory_bytes);
            floor.ephemeral_storage_bytes = floor.ephemeral_storage_bytes.min(a.ephemeral_storage_bytes);
            floor.pods = floor.pods.min(a.pods);
        }
        floor
    }

    fn covers(&self, requests: &Resources) -> bool {
        requests.extended.is_empty()
            && requests.cpu_milli <= self.cpu_milli
            && requests.memory_bytes <= self.memory_bytes
            && requests.ephemeral_storage_bytes <= self.ephemeral_storage_bytes
            && requests.pods <= self.pods
    }
}

/// A NodeClaim under construction.
#[derive(Clone, Debug)]
pub struct PlannedClaim {
    /// Index of its template in the pass.
    pub template: usize,
    /// Placeholder hostname (`hostname-placeholder-NNNN`), its hostname topology domain.
    pub hostname: String,
    /// Template requirements narrowed by every pod and topology decision so far.
    pub requirements: Requirements,
    /// The requests of its pods; the DaemonSet overhead of each option is taken off that
    /// option's allocatable instead (core `nodeclaim.go` l. 251: "Daemon overhead is excluded
    /// here to avoid double-counting"; `filterInstanceTypesByRequirements` l. 562-571).
    pub requests: Resources,
    /// Indexes into the template's instance types still feasible, cheapest first.
    pub options: Vec<u32>,
    floor: FloorAllocatable,
    /// Indexes of the pods placed on it, in placement order.
    pub pods: Vec<usize>,
    /// Host ports its pods bind.
    pub host_ports: Vec<HostPort>,
    /// minValues could not be met and BestEffort let it through.
    pub min_values_relaxed: bool,
}

/// What accepting a pod changes on a claim, computed by [`PlannedClaim::can_add`] and applied
/// by [`PlannedClaim::commit`].
#[derive(Debug)]
pub struct ClaimUpdate {
    requirements: Option<Requirements>,
    options: Option<(Vec<u32>, FloorAllocatable)>,
    min_values_relaxed: bool,
}

impl PlannedClaim {
    /// A fresh claim from `template` (index `template_index`), with `options` already filtered
    /// by the pool's remaining limits.
    pub fn new(template_index: usize, template: &NodeClaimTemplate, hostname: String, options: Vec<u32>) -> Self {
        let mut requirements = template.requirements.clone();
        requirements.add(crate::apis::labels::HOSTNAME_LABEL, Requirement::in_values([hostname.clone()]));
        let floor = FloorAllocatable::of(options.iter().map(|i| template.daemons.available(*i)));
        Self {
            template: template_index,
            hostname,
            requirements,
            requests: Resources::default(),
            options,
            floor,
            pods: Vec::new(),
            host_ports: Vec::new(),
            min_values_relaxed: false,
        }
    }

    /// Checks, in core's order, whether a pod fits: template taints, host ports, requirement
    /// compatibility, topology, then the instance types left once its requests are added.
    pub fn can_add(
        &self,
        template: &NodeClaimTemplate,
        topology: &mut Topology,
        shape_id: usize,
        shape: &PodShape,
        pod_requirements: &Requirements,
        policy: MinValuesPolicy,
    ) -> Result<ClaimUpdate, AddError> {
        if let Some(reason) = untolerated(&template.taints, &shape.tolerations) {
            return Err(AddError::permanent(reason));
        }
        if let Some(port) = shape.host_ports.iter().find(|p| self.host_ports.iter().any(|q| q.conflicts(p))) {
            return Err(AddError::permanent(format!("host port {}/{} is already in use", port.port, port.protocol)));
        }
        self.requirements
            .compatible(pod_requirements)
            .map_err(|e| AddError::permanent(format!("incompatible requirements, {e}")))?;
        let mut base = Cow::Borrowed(&self.requirements);
        if self.requirements.is_narrowed_by(pod_requirements) {
            base.to_mut().add_all(pod_requirements);
        }
        if shape.volume_requirements.is_empty() {
            return self.try_volume_alternative(template, topology, shape_id, shape, pod_requirements, base, policy);
        }
        // Core `nodeclaim.go` `CanAdd` l. 138-157: each volume topology alternative in turn,
        // added to the claim's requirements only (not the pod's, so spread counting is
        // unchanged); the first that fits wins, else the last error.
        let mut last = None;
        for volume in &shape.volume_requirements {
            let mut requirements = base.clone();
            if let Err(e) = requirements.compatible(volume) {
                last = Some(AddError::permanent(format!("incompatible volume requirements, {e}")));
                continue;
            }
            if requirements.is_narrowed_by(volume) {
                requirements.to_mut().add_all(volume);
            }
            match self.try_volume_alternative(
                template,
                topology,
                shape_id,
                shape,
                pod_requirements,
                requirements,
                policy,
            ) {
                Ok(update) => return Ok(update),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one volume alternative was tried"))
    }

    /// The rest of [`Self::can_add`] for one set of claim requirements (core `nodeclaim.go`
    /// `tryVolumeAlternative` l. 164): topology, then the instance types left.
    #[allow(clippy::too_many_arguments)]
    fn try_volume_alternative(
        &self,
        template: &NodeClaimTemplate,
        topology: &mut Topology,
        shape_id: usize,
        shape: &PodShape,
        pod_requirements: &Requirements,
        mut requirements: Cow<'_, Requirements>,
        policy: MinValuesPolicy,
    ) -> Result<ClaimUpdate, AddError> {
        let total = self.requests.plus(&shape.requests);
        // Breaks a spread tie toward a domain this claim can launch in (see
        // `Topology::add_requirements`): the same test as the option filter below.
        let launchable = |key: &str, domain: &str| {
            let mut narrowed = requirements.as_ref().clone();
            narrowed.add(key, Requirement::in_values([domain.to_owned()]));
            self.options.iter().any(|i| {
                let it = &template.instance_types[*i as usize];
                total.fits_in(template.daemons.available(*i))
                    && it.requirements.intersects(&narrowed).is_ok()
                    && it.has_compatible_offering(&narrowed)
            })
        };
        let topology_requirements = topology
            .add_requirements(shape_id, shape, pod_requirements, &requirements, Some(&launchable))
            .map_err(|e| AddError { message: e.message, permanent: e.permanent })?;
        if !topology_requirements.is_empty() {
            requirements
                .compatible(&topology_requirements)
                .map_err(|e| AddError::transient(format!("incompatible topology requirements, {e}")))?;
            if requirements.is_narrowed_by(&topology_requirements) {
                requirements.to_mut().add_all(&topology_requirements);
            }
        }
        let narrowed = matches!(requirements, Cow::Owned(_));
        // A pod binding a host port a type's DaemonSets bind cannot use that type (core
        // `nodeclaim.go` l. 562-565 skips the group).
        let ports = !shape.host_ports.is_empty() && template.daemons.has_host_ports();
        let options = if narrowed || ports || !self.floor.covers(&total) {
            let kept: Vec<u32> = self
                .options
                .iter()
                .copied()
                .filter(|i| {
                    let it = &template.instance_types[*i as usize];
                    total.fits_in(template.daemons.available(*i))
                        && !(ports && template.daemons.ports_conflict(*i, &shape.host_ports))
                        && (!narrowed
                            || (it.requirements.intersects(&requirements).is_ok()
                                && it.has_compatible_offering(&requirements)))
                })
                .collect();
            if kept.is_empty() {
                let roomy: Vec<u32> =
                    self.options.iter().copied().filter(|i| total.fits_in(template.daemons.available(*i))).collect();
                let fits_any = roomy.iter().any(|i| !(ports && template.daemons.ports_conflict(*i, &shape.host_ports)));
                let message = if fits_any {
                    format!("no instance type satisfied the requirements {requirements}")
                } else if !roomy.is_empty() {
                    "host port conflicts with the DaemonSets of every instance type left".to_owned()
                } else {
                    format!("no instance type has enough resources for {}", describe(&total))
                };
                return Err(AddError { message, permanent: !fits_any || !narrowed });
            }
            let floor = FloorAllocatable::of(kept.iter().map(|i| template.daemons.available(*i)));
            Some((kept, floor))
        } else {
            None
        };
        let mut min_values_relaxed = self.min_values_relaxed;
        if let Some((kept, _)) = &options
            && let Some((key, wanted, found)) =
                min_values_shortfall(&requirements, kept.iter().map(|i| template.instance_types[*i as usize].as_ref()))
        {
            if policy == MinValuesPolicy::Strict {
                return Err(AddError::permanent(format!(
                    "minValues requirement is not met for label {key}: wanted {wanted}, found {found}"
                )));
            }
            min_values_relaxed = true;
        }
        Ok(ClaimUpdate { requirements: narrowed.then(|| requirements.into_owned()), options, min_values_relaxed })
    }

    /// Applies an accepted pod.
    pub fn commit(&mut self, update: ClaimUpdate, pod_index: usize, shape: &PodShape) {
        if let Some(requirements) = update.requirements {
            self.requirements = requirements;
        }
        if let Some((options, floor)) = update.options {
            debug_assert!(!options.is_empty(), "a claim always keeps an instance type");
            self.options = options;
            self.floor = floor;
        }
        self.min_values_relaxed = update.min_values_relaxed;
        self.requests.add(&shape.requests);
        self.host_ports.extend(shape.host_ports.iter().cloned());
        self.pods.push(pod_index);
    }
}

/// `cpu=1500m memory=2048Mi pods=3`, for error messages.
pub fn describe(resources: &Resources) -> String {
    let mut text = format!(
        "cpu={}m memory={}Mi pods={}",
        resources.cpu_milli,
        resources.memory_bytes / super::resources::MIB,
        resources.pods
    );
    for (name, value) in &resources.extended {
        text.push_str(&format!(" {name}={value}"));
    }
    text
}
