//! Instance types from EC2 (aws:pkg/providers/instancetype, karpenter-behaviour.md §3.4):
//! `DescribeInstanceTypes` (hvm, x86_64/arm64) and `DescribeInstanceTypeOfferings` (by zone),
//! refreshed every 12 hours, turned into the controller's [`InstanceType`] model per
//! EC2NodeClass with priced offerings in the class's subnet zones.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};

use aws_sdk_ec2::types::{ArchitectureType, Filter, InstanceTypeInfo, LocationType, UsageClassType};

use crate::apis::EC2NodeClass;
use crate::apis::ec2nodeclass::{CapacityReservation, CapacityReservationState};
use crate::apis::labels;
use crate::cloudprovider::aws::ami_requirements::ami_requirements;
use crate::cloudprovider::aws::capacity_reservations::Availability;
use crate::cloudprovider::aws::discovered_capacity::DiscoveredCapacity;
use crate::cloudprovider::aws::errors::classify;
use crate::cloudprovider::aws::pricing::PricingProvider;
use crate::cloudprovider::{
    CloudError, InstanceType, InstanceTypeFacts, KubeletOverrides, Offering, UnavailableOfferings,
};
use crate::runtime::Settings;
use crate::scheduling::requirements::Requirements;

/// Labels that mean the pods asked for exotic hardware, so GPU/accelerator/metal types stay in.
pub(super) const EXOTIC_LABELS: [&str; 5] = [
    labels::INSTANCE_GPU_COUNT_LABEL,
    labels::INSTANCE_GPU_NAME_LABEL,
    labels::INSTANCE_GPU_MANUFACTURER_LABEL,
    labels::INSTANCE_ACCELERATOR_COUNT_LABEL,
    labels::INSTANCE_ACCELERATOR_NAME_LABEL,
];

/// How often the raw EC2 data is refreshed.
pub const INSTANCE_TYPES_REFRESH: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

/// What EC2 says about one instance type, plus whether it may run as spot.
#[derive(Clone, Debug, PartialEq)]
pub struct RawInstanceType {
    /// vCPU, memory, ENIs, architecture, extended resources and labels.
    pub facts: InstanceTypeFacts,
    /// `SupportedUsageClasses` contains `spot`.
    pub spot: bool,
    /// GPU, accelerator or bare-metal: launched only when asked for (the exotic filter).
    pub exotic: bool,
}

/// The raw data, replaced wholesale on refresh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    /// Types by name.
    pub types: BTreeMap<String, RawInstanceType>,
    /// Zones each type is offered in.
    pub zones: BTreeMap<String, BTreeSet<String>>,
}

/// Converts one `DescribeInstanceTypes` item; `None` for types we cannot model (no vCPU count,
/// an architecture other than x86_64/arm64).
pub fn raw_instance_type(info: &InstanceTypeInfo) -> Option<RawInstanceType> {
    let name = info.instance_type()?.as_str().to_owned();
    let vcpu = i64::from(info.v_cpu_info()?.default_v_cpus()?);
    let memory_mib = info.memory_info()?.size_in_mib()?;
    let architectures = info.processor_info().map(|p| p.supported_architectures()).unwrap_or_default();
    let architecture = if architectures.contains(&ArchitectureType::X8664) {
        labels::ARCHITECTURE_AMD64
    } else if architectures.contains(&ArchitectureType::Arm64) {
        labels::ARCHITECTURE_ARM64
    } else {
        return None;
    };
    let network = info.network_info();
    let max_enis = network.and_then(|n| n.maximum_network_interfaces()).map_or(1, i64::from);
    let ipv4_per_eni = network.and_then(|n| n.ipv4_addresses_per_interface()).map_or(1, i64::from);
    let mut extended = BTreeMap::new();
    let mut extra_labels = BTreeMap::new();
    if let Some(gpu) = info.gpu_info().and_then(|g| g.gpus().first()) {
        let count = i64::from(gpu.count().unwrap_or(0));
        let manufacturer = gpu.manufacturer().unwrap_or_default();
        let resource = match manufacturer {
            "AMD" => "amd.com/gpu",
            _ => "nvidia.com/gpu",
        };
        if count > 0 {
            extended.insert(resource.to_owned(), count);
            extra_labels
                .insert(labels::INSTANCE_GPU_NAME_LABEL.to_owned(), gpu.name().unwrap_or_default().to_lowercase());
            extra_labels.insert(labels::INSTANCE_GPU_MANUFACTURER_LABEL.to_owned(), manufacturer.to_lowercase());
            if let Some(memory) = gpu.memory_info().and_then(|m| m.size_in_mib()) {
                extra_labels.insert(labels::INSTANCE_GPU_MEMORY_LABEL.to_owned(), memory.to_string());
            }
        }
    }
    if let Some(accelerator) = info.inference_accelerator_info().and_then(|a| a.accelerators().first()) {
        let count = i64::from(accelerator.count().unwrap_or(0));
        if count > 0 {
            extended.insert("aws.amazon.com/neuron".to_owned(), count);
        }
    }
    if let Some(hypervisor) = info.hypervisor() {
        extra_labels.insert(labels::INSTANCE_HYPERVISOR_LABEL.to_owned(), hypervisor.as_str().to_owned());
    } else if info.bare_metal() == Some(true) {
        extra_labels.insert(labels::INSTANCE_HYPERVISOR_LABEL.to_owned(), String::new());
    }
    if let Some(manufacturer) = info.processor_info().and_then(|p| p.manufacturer()) {
        extra_labels.insert(labels::INSTANCE_CPU_MANUFACTURER_LABEL.to_owned(), manufacturer.to_lowercase());
    }
    if let Some(nvme) = info.instance_storage_info().and_then(|s| s.total_size_in_gb()) {
        extra_labels.insert(labels::INSTANCE_LOCAL_NVME_LABEL.to_owned(), nvme.to_string());
    }
    if let Some(ebs) = info.ebs_info().and_then(|e| e.ebs_optimized_info()).and_then(|o| o.maximum_bandwidth_in_mbps())
    {
        extra_labels.insert(labels::INSTANCE_EBS_BANDWIDTH_LABEL.to_owned(), ebs.to_string());
    }
    if let Some(gbps) = network.and_then(|n| n.network_cards().first()).and_then(|c| c.baseline_bandwidth_in_gbps()) {
        #[allow(clippy::cast_possible_truncation)]
        let mbps = (gbps * 1000.0).round() as i64;
        extra_labels.insert(labels::INSTANCE_NETWORK_BANDWIDTH_LABEL.to_owned(), mbps.to_string());
    }
    if let Some(encryption) = network.and_then(|n| n.encryption_in_transit_supported()) {
        extra_labels.insert(labels::INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED_LABEL.to_owned(), encryption.to_string());
    }
    let exotic = !extended.is_empty() || info.bare_metal() == Some(true);
    let spot = info.supported_usage_classes().contains(&UsageClassType::Spot);
    Some(RawInstanceType {
        facts: InstanceTypeFacts {
            name,
            vcpu,
            memory_mib,
            max_enis,
            ipv4_per_eni,
            architecture: architecture.to_owned(),
            extended,
            extra_labels,
        },
        spot,
        exotic,
    })
}

/// Loads the raw catalog from EC2.
///
/// # Errors
/// The EC2 error of either call.
pub async fn describe_catalog(ec2: &aws_sdk_ec2::Client) -> Result<Catalog, CloudError> {
    let pages = ec2
        .describe_instance_types()
        .filters(Filter::builder().name("supported-virtualization-type").values("hvm").build())
        .filters(
            Filter::builder().name("processor-info.supported-architecture").values("x86_64").values("arm64").build(),
        )
        .max_results(100)
        .into_paginator()
        .send()
        .try_collect()
        .await
        .map_err(|e| classify(&e))?;
    let mut catalog = Catalog::default();
    for page in &pages {
        for info in page.instance_types() {
            if let Some(raw) = raw_instance_type(info) {
                catalog.types.insert(raw.facts.name.clone(), raw);
            }
        }
    }
    let pages = ec2
        .describe_instance_type_offerings()
        .location_type(LocationType::AvailabilityZone)
        .max_results(1000)
        .into_paginator()
        .send()
        .try_collect()
        .await
        .map_err(|e| classify(&e))?;
    for page in &pages {
        for offering in page.instance_type_offerings() {
            if let (Some(name), Some(zone)) = (offering.instance_type(), offering.location()) {
                catalog.zones.entry(name.as_str().to_owned()).or_default().insert(zone.to_owned());
            }
        }
    }
    Ok(catalog)
}

/// The cached inputs of one resolved list.
#[derive(Clone, Debug, PartialEq)]
struct CacheKey {
    class: String,
    class_status: String,
    kubelet: String,
    catalog_seq: u64,
    price_seq: u64,
    ice_seq: u64,
    /// The class's reservations and what each can still take.
    reservations: String,
}

/// How long a resolved list is used before it is built again: aws
/// `InstanceTypesZonesAndOfferingsTTL` (`pkg/cache/cache.go:37`, 5 minutes), the TTL of the
/// provider's `instanceTypesCache` (`pkg/operator/operator.go:228`). Our key already holds every
/// input that changes a list, except one upstream leaves out of its key too: the
/// discovered-capacity cache (`instancetype.go:173-194` keys on AMIs, zones and the resolver's
/// `CacheKey` only, and reads the discovered memory while building, l. 270-272). So a node's
/// discovered memory reaches the list when the list is next built: within this TTL, as upstream.
/// (Ours also rebuilds on a price or ICE change, which upstream injects into a cached list
/// instead, `instancetype.go:195-205`; such a rebuild picks the discovered memory up sooner.)
pub const RESOLVED_TTL: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// One class's resolved list, the inputs it was built from and when it expires.
type Resolved = (CacheKey, jiff::Timestamp, Vec<Arc<InstanceType>>);

/// Raw data plus per-NodeClass resolved lists.
#[derive(Debug, Default)]
pub struct InstanceTypeProvider {
    catalog: RwLock<(u64, Arc<Catalog>)>,
    resolved: Mutex<BTreeMap<String, Resolved>>,
}

impl InstanceTypeProvider {
    /// Replaces the raw data (a refresh); resolved lists rebuild on next use.
    pub fn set_catalog(&self, catalog: Catalog) {
        let mut current = self.catalog.write().expect("catalog");
        if *current.1 != catalog {
            *current = (current.0 + 1, Arc::new(catalog));
        }
    }

    /// Whether raw data has been loaded.
    pub fn is_loaded(&self) -> bool {
        !self.catalog.read().expect("catalog").1.types.is_empty()
    }

    /// The instance types `class` can launch: types with an AMI for their architecture, with
    /// offerings in the zones of the class's subnets, priced, and marked unavailable where the
    /// ICE cache says so; a type a node has reported its memory for under the class's AMIs
    /// has that memory as its capacity ([`DiscoveredCapacity`]). A list is reused for
    /// [`RESOLVED_TTL`] while its inputs stay the same (`now` is the clock's reading).
    ///
    /// # Errors
    /// An unparseable kubelet block in the class.
    pub fn resolve(
        &self,
        class: &EC2NodeClass,
        settings: &Settings,
        pricing: &PricingProvider,
        unavailable: &UnavailableOfferings,
        (discovered, reservations): (&DiscoveredCapacity, &Availability),
        now: jiff::Timestamp,
    ) -> Result<Vec<Arc<InstanceType>>, CloudError> {
        let (catalog_seq, catalog) = self.catalog.read().expect("catalog").clone();
        let status = class.status.clone().unwrap_or_default();
        let reserved: Vec<CapacityReservation> = if settings.feature_gates.reserved_capacity {
            status.capacity_reservations.clone().unwrap_or_default()
        } else {
            Vec::new()
        };
        let counts: Vec<u32> = reserved.iter().map(|r| reservations.count(&r.id)).collect();
        let key = CacheKey {
            class: class.metadata.name.clone().unwrap_or_default(),
            class_status: serde_json::to_string(&(&status.subnets, &status.amis)).unwrap_or_default(),
            kubelet: serde_json::to_string(&class.spec.kubelet).unwrap_or_default(),
            catalog_seq,
            price_seq: pricing.seq(),
            ice_seq: unavailable.seq(),
            reservations: serde_json::to_string(&(&reserved, &counts)).unwrap_or_default(),
        };
        if let Some((cached, expires, types)) = self.resolved.lock().expect("resolved").get(&key.class)
            && *cached == key
            && *expires > now
        {
            return Ok(types.clone());
        }
        let mut kubelet = KubeletOverrides::from_kubelet(class.spec.kubelet.as_ref())
            .map_err(|e| CloudError::NodeClassNotReady(format!("spec.kubelet: {e}")))?;
        kubelet.vm_memory_overhead_percent = settings.vm_memory_overhead_percent;
        kubelet.reserved_enis = settings.reserved_enis;
        if let Some(size) = root_volume_bytes(class) {
            kubelet.ephemeral_storage_bytes = size;
        }
        let zones: BTreeSet<String> = status.subnets.iter().flatten().map(|s| s.zone.clone()).collect();
        let amis = status.amis.clone().unwrap_or_default();
        let ami_requirements: Vec<Requirements> = amis.iter().map(ami_requirements).collect();
        let mut types = Vec::new();
        for (name, raw) in &catalog.types {
            let facts_requirements = raw.facts.requirements();
            if !ami_requirements.iter().any(|ami| ami.compatible(&facts_requirements).is_ok()) {
                continue;
            }
            let mut offerings = Vec::new();
            for zone in catalog.zones.get(name).into_iter().flatten().filter(|z| zones.contains(*z)) {
                let on_demand = pricing.on_demand(name);
                offerings.push(Offering {
                    zone: zone.clone(),
                    capacity_type: labels::CAPACITY_TYPE_ON_DEMAND.to_owned(),
                    price: on_demand.unwrap_or(f64::MAX),
                    available: on_demand.is_some(),
                    reservation_id: None,
                });
                if raw.spot {
                    let spot = pricing.spot(name, zone);
                    offerings.push(Offering {
                        zone: zone.clone(),
                        capacity_type: labels::CAPACITY_TYPE_SPOT.to_owned(),
                        price: spot.unwrap_or(f64::MAX),
                        available: spot.is_some(),
                        reservation_id: None,
                    });
                }
            }
            for (r, count) in reserved.iter().zip(&counts).filter(|(r, _)| r.instance_type == *name) {
                offerings.push(reserved_offering(r, *count, pricing.on_demand(name), &zones, &catalog, name));
            }
            if offerings.is_empty() {
                continue;
            }
            unavailable.apply(name, &mut offerings);
            let mut resolved = InstanceType::from_facts(&raw.facts, &kubelet, offerings);
            // aws `instancetype.go:270-272`: what a registered node reported replaces the estimate.
            if let Some(memory) = discovered.memory(name, &amis) {
                resolved = resolved.with_capacity_memory(memory);
            }
            types.push(Arc::new(resolved));
        }
        let expires = crate::runtime::clock::add(now, RESOLVED_TTL);
        self.resolved.lock().expect("resolved").insert(key.class.clone(), (key, expires, types.clone()));
        Ok(types)
    }

    /// Whether `name` is exotic (GPU, accelerator, metal) per the raw data.
    pub fn is_exotic(&self, name: &str) -> bool {
        self.catalog.read().expect("catalog").1.types.get(name).is_some_and(|t| t.exotic)
    }
}

/// A reservation's offering (aws `instancetype/offering/reserved_capacity_resolver.go`
/// l. 72-105, v1.14.1): priced at the on-demand price divided by 10,000,000, so it is "free"
/// yet keeps the types' relative order for consolidation (0 when the price is unknown); available
/// while it can take an instance, its zone is one of the class's subnets' and the type is
/// offered there, and it is not an expiring capacity block.
fn reserved_offering(
    r: &CapacityReservation,
    count: u32,
    on_demand: Option<f64>,
    zones: &BTreeSet<String>,
    catalog: &Catalog,
    name: &str,
) -> Offering {
    let offered = catalog.zones.get(name).is_some_and(|z| z.contains(&r.availability_zone));
    Offering {
        zone: r.availability_zone.clone(),
        capacity_type: labels::CAPACITY_TYPE_RESERVED.to_owned(),
        price: on_demand.map_or(0.0, |p| p / 10_000_000.0),
        available: count != 0
            && offered
            && zones.contains(&r.availability_zone)
            && r.state != Some(CapacityReservationState::Expiring),
        reservation_id: Some(r.id.clone()),
    }
}

/// The root volume size from `blockDeviceMappings` (the one marked `rootVolume`, or the only one).
fn root_volume_bytes(class: &EC2NodeClass) -> Option<i64> {
    let mappings = class.spec.block_device_mappings.as_ref()?;
    let root = mappings.iter().find(|m| m.root_volume == Some(true)).or(if mappings.len() == 1 {
        mappings.first()
    } else {
        None
    })?;
    let size = root.ebs.as_ref()?.volume_size.as_ref()?;
    crate::scheduling::resources::parse_quantity_units(&size.0)
}

#[cfg(test)]
mod tests {
    use aws_sdk_ec2::types::{
        GpuDeviceInfo, GpuInfo, MemoryInfo, NetworkInfo, ProcessorInfo, UsageClassType, VCpuInfo,
    };

    use super::*;

    fn info(
        name: &str,
        vcpu: i32,
        mib: i64,
        arch: ArchitectureType,
    ) -> aws_sdk_ec2::types::builders::InstanceTypeInfoBuilder {
        InstanceTypeInfo::builder()
            .instance_type(name.into())
            .v_cpu_info(VCpuInfo::builder().default_v_cpus(vcpu).build())
            .memory_info(MemoryInfo::builder().size_in_mib(mib).build())
            .processor_info(ProcessorInfo::builder().supported_architectures(arch).manufacturer("Intel").build())
            .network_info(NetworkInfo::builder().maximum_network_interfaces(3).ipv4_addresses_per_interface(10).build())
            .supported_usage_classes(UsageClassType::OnDemand)
            .supported_usage_classes(UsageClassType::Spot)
    }

    #[test]
    fn describe_output_becomes_facts_with_eni_inputs() {
        let raw = raw_instance_type(&info("m5.large", 2, 8192, ArchitectureType::X8664).build()).expect("modelled");
        assert_eq!(raw.facts.vcpu, 2);
        assert_eq!(raw.facts.memory_mib, 8192);
        assert_eq!((raw.facts.max_enis, raw.facts.ipv4_per_eni), (3, 10));
        assert_eq!(raw.facts.architecture, "amd64");
        assert!(raw.spot);
        assert!(!raw.exotic);
        // ENI-limited pods: 3 × (10 − 1) + 2 = 29, as the m5.large's real max-pods.
        let capacity = raw.facts.capacity(&KubeletOverrides::default());
        assert_eq!(capacity.pods, 29);
    }

    #[test]
    fn gpus_are_extended_resources_and_exotic() {
        let gpu = GpuInfo::builder()
            .gpus(GpuDeviceInfo::builder().name("T4").manufacturer("NVIDIA").count(1).build())
            .build();
        let raw = raw_instance_type(&info("g4dn.xlarge", 4, 16384, ArchitectureType::X8664).gpu_info(gpu).build())
            .expect("modelled");
        assert_eq!(raw.facts.extended.get("nvidia.com/gpu"), Some(&1));
        assert!(raw.exotic);
        assert_eq!(raw.facts.extra_labels.get(labels::INSTANCE_GPU_NAME_LABEL).map(String::as_str), Some("t4"));
    }

    #[test]
    fn unsupported_architectures_are_skipped() {
        assert!(raw_instance_type(&info("mac1.metal", 12, 32768, ArchitectureType::X8664Mac).build()).is_none());
    }
}
