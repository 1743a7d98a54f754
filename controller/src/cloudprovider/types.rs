//! The controller's model of an instance type: what a node of that type offers pods
//! (capacity minus kubelet overhead, karpenter-behaviour.md §2.4), which labels it carries, and
//! where and at what price it can be launched (offerings).
//!
//! This is the controller's own estimate, computed the way Karpenter's AWS provider computes it
//! (aws:pkg/providers/instancetype/types.go); it never reads the simulator's kubelet model.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::apis::ec2nodeclass::KubeletConfiguration;
use crate::apis::labels;
use crate::scheduling::requirements::{Requirement, Requirements};
use crate::scheduling::resources::{GIB, MIB, Resources, parse_quantity_units};

/// `VM_MEMORY_OVERHEAD_PERCENT` default: the share of memory the hypervisor and kernel keep.
pub const VM_MEMORY_OVERHEAD_PERCENT: f64 = 0.075;
/// Pods per node when the AMI family is not ENI-limited and `maxPods` is unset.
pub const DEFAULT_MAX_PODS: i64 = 110;
/// Default hard eviction threshold for `memory.available`.
pub const EVICTION_MEMORY_DEFAULT_BYTES: i64 = 100 * MIB;
/// Default hard eviction threshold for `nodefs.available`, as a percentage of ephemeral storage.
pub const EVICTION_NODEFS_DEFAULT_PERCENT: i64 = 10;
/// Graviton (arm64) types lose 64 MiB to the CMA reservation.
pub const ARM64_CMA_RESERVED_MIB: i64 = 64;
/// Default root volume of the AL2023 AMI family, which becomes ephemeral-storage capacity.
pub const DEFAULT_ROOT_VOLUME_BYTES: i64 = 20 * GIB;

/// Where and how an instance type can be launched: one per (zone × capacity type), or per
/// capacity reservation.
#[derive(Clone, Debug, PartialEq)]
pub struct Offering {
    /// Availability zone (`topology.kubernetes.io/zone`).
    pub zone: String,
    /// `on-demand`, `spot` or `reserved` (`karpenter.sh/capacity-type`).
    pub capacity_type: String,
    /// Hourly price in USD.
    pub price: f64,
    /// Whether it can be launched now: priced, offered in a usable subnet, not ICE-cached.
    pub available: bool,
    /// The capacity reservation ID for reserved offerings.
    pub reservation_id: Option<String>,
}

impl Offering {
    /// Whether a node constrained by `requirements` could be launched from this offering.
    pub fn is_compatible(&self, requirements: &Requirements) -> bool {
        requirements.allows(labels::TOPOLOGY_ZONE_LABEL, &self.zone)
            && requirements.allows(labels::CAPACITY_TYPE_LABEL, &self.capacity_type)
            && self
                .reservation_id
                .as_deref()
                .is_none_or(|id| requirements.allows(labels::CAPACITY_RESERVATION_ID_LABEL, id))
    }
}

/// What the kubelet keeps back from pods (§2.4); allocatable = capacity − all three.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overhead {
    /// `kubeReserved` (default formula, or the EC2NodeClass override).
    pub kube_reserved: Resources,
    /// `systemReserved` (only from the EC2NodeClass).
    pub system_reserved: Resources,
    /// Hard eviction thresholds (memory 100 Mi, nodefs 10% unless `evictionHard` says otherwise).
    pub eviction_threshold: Resources,
}

impl Overhead {
    /// The sum of the three reservations.
    pub fn total(&self) -> Resources {
        self.kube_reserved.plus(&self.system_reserved).plus(&self.eviction_threshold)
    }
}

/// An instance type the scheduler can choose for a NodeClaim.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceType {
    /// EC2 name (`m5.large`).
    pub name: String,
    /// The labels a node of this type carries, as requirements; zone and capacity type list
    /// every offering's values (offering-level labels, §1.2).
    pub requirements: Requirements,
    /// Node capacity.
    pub capacity: Resources,
    /// Kubelet reservations.
    pub overhead: Overhead,
    /// Launch options with prices.
    pub offerings: Vec<Offering>,
    allocatable: Resources,
    /// A NodeOverlay priced one of its offerings (core `IsPricingOverlayApplied`).
    price_overlaid: bool,
    /// A NodeOverlay added capacity (core `IsCapacityOverlayApplied`).
    capacity_overlaid: bool,
}

impl InstanceType {
    /// An instance type from already-computed parts; allocatable is derived once here.
    pub fn new(
        name: impl Into<String>,
        requirements: Requirements,
        capacity: Resources,
        overhead: Overhead,
        offerings: Vec<Offering>,
    ) -> Self {
        let allocatable = allocatable_of(&capacity, &overhead);
        let mut requirements = requirements;
        let name = name.into();
        requirements.add(labels::INSTANCE_TYPE_LABEL, Requirement::in_values([name.clone()]));
        let zones: Vec<String> = offerings.iter().map(|o| o.zone.clone()).collect();
        let capacity_types: Vec<String> = offerings.iter().map(|o| o.capacity_type.clone()).collect();
        requirements.add(labels::TOPOLOGY_ZONE_LABEL, Requirement::in_values(zones));
        requirements.add(labels::CAPACITY_TYPE_LABEL, Requirement::in_values(capacity_types));
        let reservations: Vec<String> = offerings.iter().filter_map(|o| o.reservation_id.clone()).collect();
        if !reservations.is_empty() {
            requirements.add(labels::CAPACITY_RESERVATION_ID_LABEL, Requirement::in_values(reservations));
        }
        Self {
            name,
            requirements,
            capacity,
            overhead,
            offerings,
            allocatable,
            price_overlaid: false,
            capacity_overlaid: false,
        }
    }

    /// Builds a type from EC2 facts and the EC2NodeClass kubelet settings, exactly as §2.4.
    pub fn from_facts(facts: &InstanceTypeFacts, kubelet: &KubeletOverrides, offerings: Vec<Offering>) -> Self {
        let capacity = facts.capacity(kubelet);
        let overhead = Overhead {
            kube_reserved: kubelet.kube_reserved(facts.vcpu, capacity.pods),
            system_reserved: kubelet.system_reserved.clone(),
            eviction_threshold: kubelet.eviction_threshold(&capacity),
        };
        Self::new(facts.name.clone(), facts.requirements(), capacity, overhead, offerings)
    }

    /// The type with `memory_bytes` as its capacity memory, the overhead unchanged: what aws
    /// `pkg/providers/instancetype/instancetype.go:270-272` does with a discovered capacity
    /// (`it.Capacity[memory] = cached`, after `NewInstanceType` computed the overhead, eviction
    /// thresholds included, from the estimate); allocatable follows, as core's lazily computed
    /// `Allocatable()` = capacity − overhead (`cloudprovider/types.go:331`) does.
    #[must_use]
    pub fn with_capacity_memory(mut self, memory_bytes: i64) -> Self {
        self.capacity.memory_bytes = memory_bytes;
        self.allocatable = allocatable_of(&self.capacity, &self.overhead);
        self
    }

    /// The type with `extended` resources set in its capacity (and so allocatable), as core
    /// `InstanceType.ApplyCapacityOverlay` (`cloudprovider/types.go` l. 313-316, `lo.Assign`:
    /// the overlay's quantity replaces an existing one).
    #[must_use]
    pub fn with_extended_capacity(mut self, extended: &BTreeMap<String, i64>) -> Self {
        for (name, quantity) in extended {
            self.capacity.set(name, *quantity);
        }
        self.allocatable = allocatable_of(&self.capacity, &self.overhead);
        self.capacity_overlaid = true;
        self
    }

    /// Records that a NodeOverlay priced some offering (core `Offering.ApplyPriceOverlay`,
    /// `cloudprovider/types.go` l. 488-491, read back by `IsPricingOverlayApplied`, l. 307-311).
    pub fn mark_price_overlaid(&mut self) {
        self.price_overlaid = true;
    }

    /// Whether a NodeOverlay priced one of its offerings: a NodeClaim that may use it is
    /// annotated `karpenter.sh/price-overlay-applied` and launched by priority.
    pub fn is_price_overlaid(&self) -> bool {
        self.price_overlaid
    }

    /// Whether a NodeOverlay added capacity (`karpenter.sh/capacity-overlay-applied`).
    pub fn is_capacity_overlaid(&self) -> bool {
        self.capacity_overlaid
    }

    /// What pods may use: capacity − kube-reserved − system-reserved − eviction threshold.
    pub fn allocatable(&self) -> &Resources {
        &self.allocatable
    }

    /// The cheapest available offering compatible with `requirements`, ties by zone then
    /// capacity type so the choice is stable.
    pub fn cheapest_offering(&self, requirements: &Requirements) -> Option<&Offering> {
        self.offerings.iter().filter(|o| o.available && o.is_compatible(requirements)).min_by(|a, b| {
            a.price
                .total_cmp(&b.price)
                .then_with(|| a.zone.cmp(&b.zone))
                .then_with(|| a.capacity_type.cmp(&b.capacity_type))
        })
    }

    /// Whether some available offering is compatible with `requirements`.
    pub fn has_compatible_offering(&self, requirements: &Requirements) -> bool {
        self.offerings.iter().any(|o| o.available && o.is_compatible(requirements))
    }
}

/// Capacity − the overhead's total, each of CPU, memory, storage and pods floored at zero.
fn allocatable_of(capacity: &Resources, overhead: &Overhead) -> Resources {
    let mut allocatable = capacity.clone();
    allocatable.sub(&overhead.total());
    for value in [
        &mut allocatable.cpu_milli,
        &mut allocatable.memory_bytes,
        &mut allocatable.ephemeral_storage_bytes,
        &mut allocatable.pods,
    ] {
        *value = (*value).max(0);
    }
    allocatable
}

/// Raw EC2 facts about an instance type (DescribeInstanceTypes), before kubelet accounting.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceTypeFacts {
    /// EC2 name (`m5.large`); family, category, generation and size are parsed from it.
    pub name: String,
    /// vCPUs.
    pub vcpu: i64,
    /// Memory in MiB as EC2 reports it.
    pub memory_mib: i64,
    /// Maximum network interfaces.
    pub max_enis: i64,
    /// IPv4 addresses per interface.
    pub ipv4_per_eni: i64,
    /// `amd64` or `arm64`.
    pub architecture: String,
    /// Extended resources (`nvidia.com/gpu` → count).
    pub extended: BTreeMap<String, i64>,
    /// Further labels (gpu name, hypervisor, network bandwidth, ...).
    pub extra_labels: BTreeMap<String, String>,
}

impl InstanceTypeFacts {
    /// Node capacity: CPU, memory minus VM overhead, pods (ENI formula or 110, capped by
    /// podsPerCore), ephemeral storage from the root volume, and extended resources.
    pub fn capacity(&self, kubelet: &KubeletOverrides) -> Resources {
        let mut size_mib = self.memory_mib;
        if self.architecture == labels::ARCHITECTURE_ARM64 {
            size_mib -= ARM64_CMA_RESERVED_MIB;
        }
        // Ceil(size × percent) MiB, computed as Karpenter does (float, then ceil).
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        let vm_overhead_mib = (size_mib as f64 * kubelet.vm_memory_overhead_percent).ceil() as i64;
        let mut pods = match kubelet.max_pods {
            Some(max_pods) => max_pods,
            None if kubelet.eni_limited_pods => {
                (self.max_enis - kubelet.reserved_enis) * (self.ipv4_per_eni - 1).max(0) + 2
            }
            None => DEFAULT_MAX_PODS,
        };
        if let Some(per_core) = kubelet.pods_per_core.filter(|p| *p > 0) {
            pods = pods.min(per_core * self.vcpu);
        }
        Resources {
            cpu_milli: self.vcpu * 1000,
            memory_bytes: (size_mib - vm_overhead_mib) * MIB,
            ephemeral_storage_bytes: kubelet.ephemeral_storage_bytes,
            pods: pods.max(0),
            extended: self.extended.clone(),
        }
    }

    /// Labels derived from the name and facts, as requirements (`In [value]` each).
    pub fn requirements(&self) -> Requirements {
        let mut found: BTreeMap<String, String> = BTreeMap::new();
        found.insert(labels::ARCH_LABEL.to_owned(), self.architecture.clone());
        found.insert(labels::OS_LABEL.to_owned(), "linux".to_owned());
        found.insert(labels::INSTANCE_CPU_LABEL.to_owned(), self.vcpu.to_string());
        found.insert(labels::INSTANCE_MEMORY_LABEL.to_owned(), self.memory_mib.to_string());
        if let Some((family, size)) = self.name.split_once('.') {
            found.insert(labels::INSTANCE_FAMILY_LABEL.to_owned(), family.to_owned());
            found.insert(labels::INSTANCE_SIZE_LABEL.to_owned(), size.to_owned());
            let category: String = family.chars().take_while(char::is_ascii_alphabetic).collect();
            let generation: String = family.chars().skip(category.len()).take_while(char::is_ascii_digit).collect();
            if !category.is_empty() {
                found.insert(labels::INSTANCE_CATEGORY_LABEL.to_owned(), category);
            }
            if !generation.is_empty() {
                found.insert(labels::INSTANCE_GENERATION_LABEL.to_owned(), generation);
            }
        }
        let gpus: i64 = labels::WELL_KNOWN_EXOTIC_RESOURCES.iter().filter_map(|r| self.extended.get(*r)).sum();
        if gpus > 0 {
            found.insert(labels::INSTANCE_GPU_COUNT_LABEL.to_owned(), gpus.to_string());
        }
        found.extend(self.extra_labels.clone());
        let mut requirements = Requirements::from_labels(&found);
        for key in ABSENT_UNLESS_KNOWN {
            if !requirements.has(key) {
                requirements.add(key, Requirement::does_not_exist());
            }
        }
        requirements
    }
}

/// AWS labels an instance type without the fact does *not* have: `DoesNotExist` rather than
/// unconstrained, so a NodePool requiring e.g. `instance-local-nvme Gt 300` or
/// `instance-gpu-count Exists` never gets a type without local NVMe or GPUs (which its claim
/// would then drift from at once). aws/karpenter-provider-aws
/// `pkg/providers/instancetype/types.go` `computeRequirements` starts every one of these as
/// `DoesNotExist` and inserts the type's value when it has one.
const ABSENT_UNLESS_KNOWN: [&str; 17] = [
    labels::WINDOWS_BUILD_LABEL,
    labels::INSTANCE_CPU_MANUFACTURER_LABEL,
    labels::INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ_LABEL,
    labels::INSTANCE_EBS_BANDWIDTH_LABEL,
    labels::INSTANCE_NETWORK_BANDWIDTH_LABEL,
    labels::INSTANCE_CATEGORY_LABEL,
    labels::INSTANCE_FAMILY_LABEL,
    labels::INSTANCE_GENERATION_LABEL,
    labels::INSTANCE_LOCAL_NVME_LABEL,
    labels::INSTANCE_SIZE_LABEL,
    labels::INSTANCE_GPU_NAME_LABEL,
    labels::INSTANCE_GPU_MANUFACTURER_LABEL,
    labels::INSTANCE_GPU_COUNT_LABEL,
    labels::INSTANCE_GPU_MEMORY_LABEL,
    labels::INSTANCE_ACCELERATOR_NAME_LABEL,
    labels::INSTANCE_ACCELERATOR_MANUFACTURER_LABEL,
    labels::INSTANCE_ACCELERATOR_COUNT_LABEL,
];

/// The EC2NodeClass settings that change capacity and overhead (§2.4), resolved once per class.
#[derive(Clone, Debug, PartialEq)]
pub struct KubeletOverrides {
    /// `kubelet.maxPods`.
    pub max_pods: Option<i64>,
    /// `kubelet.podsPerCore`.
    pub pods_per_core: Option<i64>,
    /// `kubelet.kubeReserved`, per resource, replacing the default formula for that resource.
    pub kube_reserved: Resources,
    /// Which kube-reserved resources the user set (the rest use the defaults).
    pub kube_reserved_keys: Vec<String>,
    /// `kubelet.systemReserved`.
    pub system_reserved: Resources,
    /// `kubelet.evictionHard` signals (`memory.available` → `"500Mi"` or `"5%"`).
    pub eviction_hard: BTreeMap<String, String>,
    /// Whether pod density follows the ENI formula (AL2, AL2023).
    pub eni_limited_pods: bool,
    /// ENIs reserved for other uses (`RESERVED_ENIS`).
    pub reserved_enis: i64,
    /// `VM_MEMORY_OVERHEAD_PERCENT`.
    pub vm_memory_overhead_percent: f64,
    /// Ephemeral storage of the root volume.
    pub ephemeral_storage_bytes: i64,
}

impl Default for KubeletOverrides {
    fn default() -> Self {
        Self {
            max_pods: None,
            pods_per_core: None,
            kube_reserved: Resources::default(),
            kube_reserved_keys: Vec::new(),
            system_reserved: Resources::default(),
            eviction_hard: BTreeMap::new(),
            eni_limited_pods: true,
            reserved_enis: 0,
            vm_memory_overhead_percent: VM_MEMORY_OVERHEAD_PERCENT,
            ephemeral_storage_bytes: DEFAULT_ROOT_VOLUME_BYTES,
        }
    }
}

impl KubeletOverrides {
    /// Reads the EC2NodeClass kubelet block; unparseable quantities are reported.
    pub fn from_kubelet(kubelet: Option<&KubeletConfiguration>) -> Result<Self, String> {
        let mut overrides = Self::default();
        let Some(kubelet) = kubelet else { return Ok(overrides) };
        overrides.max_pods = kubelet.max_pods.map(i64::from);
        overrides.pods_per_core = kubelet.pods_per_core.map(i64::from);
        for (name, text) in kubelet.kube_reserved.iter().flatten() {
            overrides.kube_reserved.set_text(name, text)?;
            overrides.kube_reserved_keys.push(name.clone());
        }
        for (name, text) in kubelet.system_reserved.iter().flatten() {
            overrides.system_reserved.set_text(name, text)?;
        }
        overrides.eviction_hard = kubelet.eviction_hard.clone().unwrap_or_default();
        Ok(overrides)
    }

    /// Default kube-reserved (11 MiB × pods + 255 MiB, 1 Gi storage, the CPU ladder of §2.4),
    /// with any user-set resource replacing its default.
    pub fn kube_reserved(&self, vcpu: i64, pods: i64) -> Resources {
        let mut reserved = Resources {
            cpu_milli: kube_reserved_cpu_milli(vcpu),
            memory_bytes: (11 * pods + 255) * MIB,
            ephemeral_storage_bytes: GIB,
            ..Resources::default()
        };
        for key in &self.kube_reserved_keys {
            reserved.set(key, self.kube_reserved.get(key));
        }
        reserved
    }

    /// Hard eviction thresholds: memory 100 Mi and nodefs 10% by default; `evictionHard` values
    /// are absolute quantities or percentages of capacity.
    pub fn eviction_threshold(&self, capacity: &Resources) -> Resources {
        let resolve = |signal: &str, total: i64, default: i64| -> i64 {
            let Some(text) = self.eviction_hard.get(signal) else { return default };
            if let Some(percent) = text.strip_suffix('%') {
                return percent.parse::<f64>().map_or(default, |p| {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                    let value = (total as f64 * p / 100.0).ceil() as i64;
                    value
                });
            }
            parse_quantity_units(text).unwrap_or(default)
        };
        Resources {
            memory_bytes: resolve("memory.available", capacity.memory_bytes, EVICTION_MEMORY_DEFAULT_BYTES),
            ephemeral_storage_bytes: resolve(
                "nodefs.available",
                capacity.ephemeral_storage_bytes,
                capacity.ephemeral_storage_bytes * EVICTION_NODEFS_DEFAULT_PERCENT / 100,
            ),
            ..Resources::default()
        }
    }
}

/// Kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of cores 3–4 and 0.25% of
/// the rest, each band truncated to whole millicores (aws `kubeReservedResources`).
pub fn kube_reserved_cpu_milli(vcpu: i64) -> i64 {
    let cpu = vcpu * 1000;
    // (start, end, parts per 10_000)
    const BANDS: [(i64, i64, i64); 4] = [(0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, i64::MAX, 25)];
    BANDS
        .iter()
        .filter(|(start, _, _)| cpu >= *start)
        .map(|(start, end, parts)| (cpu.min(*end) - start) * parts / 10_000)
        .sum()
}

/// Instance types shared between NodePools and planned claims without copying.
pub type InstanceTypes = Vec<Arc<InstanceType>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn m5_large() -> InstanceTypeFacts {
        InstanceTypeFacts {
            name: "m5.large".to_owned(),
            vcpu: 2,
            memory_mib: 8192,
            max_enis: 3,
            ipv4_per_eni: 10,
            architecture: "amd64".to_owned(),
            extended: BTreeMap::new(),
            extra_labels: BTreeMap::new(),
        }
    }

    fn offering(zone: &str, price: f64) -> Offering {
        Offering {
            zone: zone.to_owned(),
            capacity_type: "on-demand".to_owned(),
            price,
            available: true,
            reservation_id: None,
        }
    }

    /// aws `computeRequirements`: a type without local NVMe (or GPUs) has `DoesNotExist` for
    /// those labels, so a pool asking for them never gets it; one with them keeps its value.
    #[test]
    fn facts_a_type_lacks_are_does_not_exist_not_unconstrained() {
        use crate::apis::requirements::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};
        let pool = |key: &str, operator, values: &[&str]| {
            Requirements::from_node_selector(&[NodeSelectorRequirementWithMinValues::with_values(
                key,
                operator,
                values.iter().copied(),
            )])
        };
        let nvme_over_300 = pool(labels::INSTANCE_LOCAL_NVME_LABEL, NodeSelectorOperator::Gt, &["300"]);
        let gpus = pool(labels::INSTANCE_GPU_COUNT_LABEL, NodeSelectorOperator::Exists, &[]);
        let plain = m5_large().requirements();
        assert!(plain.compatible(&nvme_over_300).is_err(), "m5.large has no local NVMe");
        assert!(plain.compatible(&gpus).is_err(), "m5.large has no GPU");
        assert!(
            plain.compatible(&pool(labels::INSTANCE_GPU_COUNT_LABEL, NodeSelectorOperator::DoesNotExist, &[])).is_ok()
        );
        let mut m5d = m5_large();
        m5d.name = "m5d.large".to_owned();
        m5d.extra_labels.insert(labels::INSTANCE_LOCAL_NVME_LABEL.to_owned(), "75".to_owned());
        assert!(m5d.requirements().compatible(&nvme_over_300).is_err(), "75 GB is not over 300");
        m5d.extra_labels.insert(labels::INSTANCE_LOCAL_NVME_LABEL.to_owned(), "900".to_owned());
        assert!(m5d.requirements().compatible(&nvme_over_300).is_ok());
        assert_eq!(
            m5d.requirements().single_valued_labels().get(labels::INSTANCE_LOCAL_NVME_LABEL).map(String::as_str),
            Some("900")
        );
        assert!(!plain.single_valued_labels().contains_key(labels::INSTANCE_GPU_COUNT_LABEL));
    }

    #[test]
    fn m5_large_matches_karpenter_capacity_and_kube_reserved() {
        let it = InstanceType::from_facts(&m5_large(), &KubeletOverrides::default(), vec![offering("a", 0.096)]);
        assert_eq!(it.capacity.pods, 29);
        assert_eq!(it.overhead.kube_reserved.memory_bytes, 574 * MIB);
        assert_eq!(it.overhead.kube_reserved.cpu_milli, 70);
        // 8192 MiB − ceil(8192 × 0.075) = 8192 − 615.
        assert_eq!(it.capacity.memory_bytes, (8192 - 615) * MIB);
        assert_eq!(it.overhead.eviction_threshold.memory_bytes, 100 * MIB);
        assert_eq!(it.allocatable().cpu_milli, 2000 - 70);
        assert_eq!(it.allocatable().memory_bytes, (8192 - 615 - 574 - 100) * MIB);
        assert!(it.requirements.allows(labels::INSTANCE_FAMILY_LABEL, "m5"));
        assert!(it.requirements.allows(labels::INSTANCE_CATEGORY_LABEL, "m"));
        assert!(it.requirements.allows(labels::INSTANCE_GENERATION_LABEL, "5"));
        assert!(it.requirements.allows(labels::TOPOLOGY_ZONE_LABEL, "a"));
        assert!(!it.requirements.allows(labels::TOPOLOGY_ZONE_LABEL, "b"));
    }

    #[test]
    fn kubelet_overrides_replace_defaults() {
        let kubelet = KubeletConfiguration {
            max_pods: Some(110),
            pods_per_core: Some(10),
            kube_reserved: Some(BTreeMap::from([("cpu".to_owned(), "200m".to_owned())])),
            system_reserved: Some(BTreeMap::from([("memory".to_owned(), "1Gi".to_owned())])),
            eviction_hard: Some(BTreeMap::from([("memory.available".to_owned(), "5%".to_owned())])),
            ..KubeletConfiguration::default()
        };
        let overrides = KubeletOverrides::from_kubelet(Some(&kubelet)).unwrap();
        let it = InstanceType::from_facts(&m5_large(), &overrides, vec![]);
        assert_eq!(it.capacity.pods, 20, "podsPerCore caps maxPods");
        assert_eq!(it.overhead.kube_reserved.cpu_milli, 200);
        assert_eq!(it.overhead.kube_reserved.memory_bytes, (11 * 20 + 255) * MIB);
        assert_eq!(it.overhead.system_reserved.memory_bytes, GIB);
        assert_eq!(it.overhead.eviction_threshold.memory_bytes, (it.capacity.memory_bytes * 5 + 99) / 100);
    }

    #[test]
    fn kube_reserved_cpu_follows_the_ladder() {
        assert_eq!(kube_reserved_cpu_milli(1), 60);
        assert_eq!(kube_reserved_cpu_milli(2), 70);
        assert_eq!(kube_reserved_cpu_milli(4), 80);
        assert_eq!(kube_reserved_cpu_milli(8), 90);
        assert_eq!(kube_reserved_cpu_milli(96), 80 + 92 * 1000 * 25 / 10_000);
    }

    #[test]
    fn graviton_loses_cma_memory_and_non_eni_families_get_110_pods() {
        let mut facts = m5_large();
        facts.name = "m6g.large".to_owned();
        facts.architecture = "arm64".to_owned();
        let overrides = KubeletOverrides { eni_limited_pods: false, ..KubeletOverrides::default() };
        let it = InstanceType::from_facts(&facts, &overrides, vec![]);
        assert_eq!(it.capacity.pods, 110);
        let size: i64 = 8192 - 64;
        assert_eq!(it.capacity.memory_bytes, (size - (size * 75 + 999) / 1000) * MIB);
    }

    #[test]
    fn cheapest_offering_respects_requirements_and_availability() {
        let mut offerings = vec![offering("a", 0.2), offering("b", 0.1), offering("c", 0.05)];
        offerings[2].available = false;
        let it = InstanceType::from_facts(&m5_large(), &KubeletOverrides::default(), offerings);
        assert_eq!(it.cheapest_offering(&Requirements::new()).map(|o| o.zone.as_str()), Some("b"));
        let mut only_a = Requirements::new();
        only_a.add(labels::TOPOLOGY_ZONE_LABEL, Requirement::in_values(["a"]));
        assert_eq!(it.cheapest_offering(&only_a).map(|o| o.zone.as_str()), Some("a"));
    }
}
