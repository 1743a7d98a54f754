//! The labels a node of each offering carries, built once per thread and shared.
//!
//! The moves oracle lists every offering of every pool each simulated second (spot prices
//! and availability change, so the list is rebuilt), and building each offering's fourteen
//! labels was most of that work: in consolidation-scale-down, 54% of the run's CPU was
//! `priced_offerings`, two thirds of it allocating and freeing label maps. The labels are a
//! pure function of the instance type's facts, the zone and the capacity type, so they are
//! kept here and handed out as [`Labels`]. An entry is reused only when the type's facts
//! and the zone id are unchanged (worlds with different catalogs may share a thread).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use dovetail_fakecloud::{CapacityType, InstanceTypeInfo};

/// AWS labels an instance type carries only when it has the fact: a requirement on one of
/// these is judged against an absent label as `DoesNotExist` (a type without local NVMe
/// fails `instance-local-nvme Exists`/`Gt`/`In`), not skipped as an unknown key is.
/// aws/karpenter-provider-aws `pkg/providers/instancetype/types.go` `computeRequirements`
/// (v1.14, l. 348-370) starts each of them as `DoesNotExist` and inserts a value only when
/// the type has it (l. 402-440): category/generation/family/size from the name (l. 403-412),
/// local NVMe from the instance storage (l. 413-415), network bandwidth (l. 423-425), the GPU
/// labels for a type with one GPU kind (l. 427-433), the accelerator labels only without
/// Neuron devices (l. 434-440), CPU manufacturer, sustained clock speed and EBS bandwidth
/// from the processor and EBS facts. Read from the catalog's own facts below.
pub const ABSENT_UNLESS_KNOWN: [&str; 17] = [
    "node.kubernetes.io/windows-build",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    "karpenter.k8s.aws/instance-ebs-bandwidth",
    "karpenter.k8s.aws/instance-network-bandwidth",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-local-nvme",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-count",
];

/// Upstream's `lowerKabobCase` (`types.go`): lower case, spaces to dashes (`Radeon Pro V520`
/// → `radeon-pro-v520`).
fn lower_kabob_case(s: &str) -> String {
    s.to_lowercase().replace(' ', "-")
}

/// The well-known labels of an offering (what a NodePool requirement can select on). A label
/// of [`ABSENT_UNLESS_KNOWN`] is present only when the catalog gives the type that fact.
pub fn offering_labels(t: &InstanceTypeInfo, zone: &str, zone_id: &str, ct: CapacityType) -> BTreeMap<String, String> {
    let category: String = t.family.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let generation: String = t.family[category.len()..].chars().take_while(char::is_ascii_digit).collect();
    let size = t.name.split_once('.').map_or("", |(_, s)| s);
    let mut l = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        l.insert(k.to_string(), v);
    };
    put("kubernetes.io/arch", t.arch.clone());
    put("kubernetes.io/os", "linux".into());
    put("node.kubernetes.io/instance-type", t.name.clone());
    put("topology.kubernetes.io/zone", zone.into());
    put("topology.k8s.aws/zone-id", zone_id.into());
    put("karpenter.sh/capacity-type", ct.as_str().into());
    put("karpenter.k8s.aws/instance-category", category);
    put("karpenter.k8s.aws/instance-generation", generation);
    put("karpenter.k8s.aws/instance-family", t.family.clone());
    put("karpenter.k8s.aws/instance-size", size.into());
    put("karpenter.k8s.aws/instance-cpu", t.vcpu.to_string());
    put("karpenter.k8s.aws/instance-memory", t.memory_mib.to_string());
    if !t.cpu_manufacturer.is_empty() {
        put("karpenter.k8s.aws/instance-cpu-manufacturer", t.cpu_manufacturer.to_lowercase());
    }
    if let Some(h) = &t.hypervisor {
        put("karpenter.k8s.aws/instance-hypervisor", h.clone());
    }
    if let Some(gb) = t.local_nvme_gb {
        put("karpenter.k8s.aws/instance-local-nvme", gb.to_string());
    }
    if let Some(mbps) = t.ebs_max_bandwidth_mbps {
        put("karpenter.k8s.aws/instance-ebs-bandwidth", mbps.to_string());
    }
    if t.network_baseline_gbps > 0.0 {
        #[allow(clippy::cast_possible_truncation)]
        put(
            "karpenter.k8s.aws/instance-network-bandwidth",
            ((t.network_baseline_gbps * 1000.0).round() as i64).to_string(),
        );
    }
    if t.gpu_count > 0 {
        put("karpenter.k8s.aws/instance-gpu-count", t.gpu_count.to_string());
        if let Some(name) = &t.gpu_name {
            put("karpenter.k8s.aws/instance-gpu-name", lower_kabob_case(name));
        }
        if let Some(manufacturer) = &t.gpu_manufacturer {
            put("karpenter.k8s.aws/instance-gpu-manufacturer", lower_kabob_case(manufacturer));
        }
        // Per GPU, as EC2's `GpuInfo.Gpus[0].MemoryInfo.SizeInMiB` gives it.
        put("karpenter.k8s.aws/instance-gpu-memory", (t.gpu_memory_mib / u64::from(t.gpu_count)).to_string());
    }
    // The catalog's accelerators are Neuron devices (Inferentia, Trainium), which upstream
    // leaves without accelerator labels (`types.go` l. 434-435: `info.NeuronInfo == nil`).
    l
}

/// One offering's node labels, shared.
pub type Labels = Arc<BTreeMap<String, String>>;

/// The labels of one (instance type, zone), per capacity type, with what they were built from.
struct Entry {
    facts: InstanceTypeInfo,
    zone_id: String,
    by_capacity_type: BTreeMap<&'static str, Labels>,
}

thread_local! {
    /// Instance type → zone → entry.
    static CACHE: RefCell<BTreeMap<String, BTreeMap<String, Entry>>> = const { RefCell::new(BTreeMap::new()) };
}

/// [`offering_labels`] of (`t`, `zone`, `ct`), built once per thread.
pub fn shared_labels(t: &InstanceTypeInfo, zone: &str, zone_id: &str, ct: CapacityType) -> Labels {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(entry) = cache.get(&t.name).and_then(|zones| zones.get(zone))
            && entry.facts == *t
            && entry.zone_id == zone_id
            && let Some(labels) = entry.by_capacity_type.get(ct.as_str())
        {
            return labels.clone();
        }
        let labels: Labels = Arc::new(offering_labels(t, zone, zone_id, ct));
        let entry = cache.entry(t.name.clone()).or_default().entry(zone.to_string()).or_insert_with(|| Entry {
            facts: t.clone(),
            zone_id: zone_id.to_string(),
            by_capacity_type: BTreeMap::new(),
        });
        if entry.facts != *t || entry.zone_id != zone_id {
            *entry = Entry { facts: t.clone(), zone_id: zone_id.to_string(), by_capacity_type: BTreeMap::new() };
        }
        entry.by_capacity_type.insert(ct.as_str(), labels.clone());
        labels
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(family: &str) -> InstanceTypeInfo {
        let catalog = dovetail_fakecloud::Catalog::load("us-east-1").expect("the shipped catalog");
        let mut t = catalog.get("m5.large").expect("m5.large").clone();
        t.family = family.into();
        t
    }

    #[test]
    fn labels_are_shared_until_the_facts_change() {
        let t = facts("m5");
        let a = shared_labels(&t, "us-east-1a", "use1-az1", CapacityType::Spot);
        let b = shared_labels(&t, "us-east-1a", "use1-az1", CapacityType::Spot);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*a, offering_labels(&t, "us-east-1a", "use1-az1", CapacityType::Spot));
        let on_demand = shared_labels(&t, "us-east-1a", "use1-az1", CapacityType::OnDemand);
        assert_eq!(on_demand["karpenter.sh/capacity-type"], "on-demand");
        let changed = facts("c5");
        let c = shared_labels(&changed, "us-east-1a", "use1-az1", CapacityType::Spot);
        assert_eq!(c["karpenter.k8s.aws/instance-family"], "c5");
        let moved = shared_labels(&changed, "us-east-1a", "use1-az9", CapacityType::Spot);
        assert_eq!(moved["topology.k8s.aws/zone-id"], "use1-az9");
    }
}
