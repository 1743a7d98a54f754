//! The Node an EKS node of a given EC2 instance type registers: capacity and allocatable as
//! the Amazon Linux 2023 AMI (nodeadm) configures the kubelet, the well-known labels, and the
//! providerID (karpenter-behaviour.md §2.4).
//!
//! # Capacity memory: a realistic value, not Karpenter's estimate
//! The kubelet reports `MemTotal`, which is the instance's memory minus what the hypervisor,
//! firmware and kernel keep. Karpenter only *estimates* this with a flat 7.5% overhead
//! (`VM_MEMORY_OVERHEAD_PERCENT`), deliberately pessimistic. This model reports a realistic
//! value instead, so the simulator exercises the gap between estimate and reality:
//! overhead = 64 MiB + 4.5% of the first 32 GiB + 3% of the rest, which reproduces published
//! `MemTotal` figures within about 1% (m5.large ≈ 7759 MiB of 8192; t3.nano ≈ 425 of 512;
//! m5.24xlarge ≈ 372 GiB of 384). Large types thus have more memory than Karpenter expects and
//! tiny ones less, as on real EKS. [`InstanceFacts::memory_overhead_mib`] overrides it.
//!
//! # Other choices
//! - max pods: `kubelet.maxPods` if set, else ENI-limited `ENIs × (IPv4 per ENI − 1) + 2`,
//!   then capped by `podsPerCore × vCPU` when set.
//! - kube-reserved (defaults, each key overridable): memory `11 MiB × maxPods + 255 MiB`;
//!   CPU 6% of the first core, 1% of the second, 0.5% of cores 3–4, 0.25% of the rest (per
//!   range truncated to whole millicores); ephemeral-storage 1 GiB. system-reserved: none.
//! - eviction-hard: `memory.available` 100 MiB and `nodefs.available` 10% (each overridable;
//!   percentages are of capacity).
//! - ephemeral-storage capacity is the root volume (or the RAID0 of local NVMe when the node
//!   class asks for it); the file system's own overhead is ignored.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use crate::actors::quantity::{self, format_bytes, format_count, format_milli_cpu};

const MIB: i64 = 1024 * 1024;
const GIB: i64 = 1024 * MIB;

/// Karpenter/nodeadm kube-reserved memory per pod slot.
pub const KUBE_RESERVED_MEMORY_PER_POD_MIB: i64 = 11;
/// Karpenter/nodeadm kube-reserved memory base.
pub const KUBE_RESERVED_MEMORY_BASE_MIB: i64 = 255;
/// Default kube-reserved ephemeral storage.
pub const KUBE_RESERVED_EPHEMERAL_GIB: i64 = 1;
/// Default hard eviction threshold for memory.
pub const EVICTION_MEMORY_AVAILABLE_MIB: i64 = 100;
/// Default hard eviction threshold for the node file system, percent of capacity.
pub const EVICTION_NODEFS_AVAILABLE_PERCENT: f64 = 10.0;
/// Karpenter's default EBS root volume for AL2023 (`blockDeviceMappings` default).
pub const ROOT_VOLUME_GIB_DEFAULT: i64 = 20;
/// The not-ready taint the node lifecycle controller puts on nodes whose Ready is not True.
pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";

/// CPU architecture, as the `kubernetes.io/arch` label spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// x86-64.
    Amd64,
    /// Graviton.
    Arm64,
}

impl Arch {
    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }
}

/// Who made the accelerators (which extended resource the device plugin advertises).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuVendor {
    /// `nvidia.com/gpu`.
    Nvidia,
    /// `amd.com/gpu`.
    Amd,
    /// `aws.amazon.com/neuron` (Inferentia/Trainium).
    AwsNeuron,
}

impl GpuVendor {
    /// The extended resource name.
    pub fn resource(self) -> &'static str {
        match self {
            GpuVendor::Nvidia => "nvidia.com/gpu",
            GpuVendor::Amd => "amd.com/gpu",
            GpuVendor::AwsNeuron => "aws.amazon.com/neuron",
        }
    }
}

/// What EC2 `DescribeInstanceTypes` says about a type (the fake cloud's catalog entry).
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceFacts {
    /// e.g. `m5.large`.
    pub instance_type: String,
    /// Default vCPUs.
    pub vcpu: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Maximum network interfaces.
    pub max_enis: u32,
    /// IPv4 addresses per interface.
    pub ipv4_per_eni: u32,
    /// Accelerators and their vendor.
    pub gpu: Option<(u32, GpuVendor)>,
    /// Local NVMe instance storage in GiB (0 if none).
    pub local_nvme_gib: u64,
    /// Architecture.
    pub arch: Arch,
    /// Overrides the modelled hypervisor/kernel memory overhead (see the module docs).
    pub memory_overhead_mib: Option<u64>,
}

/// Kubelet settings from the NodeClass / NodePool (`spec.kubelet`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KubeletSettings {
    /// `maxPods`.
    pub max_pods: Option<u32>,
    /// `podsPerCore`.
    pub pods_per_core: Option<u32>,
    /// `kubeReserved` entries replacing the defaults per resource.
    pub kube_reserved: BTreeMap<String, Quantity>,
    /// `systemReserved`.
    pub system_reserved: BTreeMap<String, Quantity>,
    /// `evictionHard` entries (signal to `"100Mi"` or `"10%"`) replacing the defaults.
    pub eviction_hard: BTreeMap<String, String>,
}

/// Where ephemeral storage comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageSettings {
    /// Root EBS volume size in GiB.
    pub root_volume_gib: u64,
    /// `instanceStorePolicy: RAID0`: use local NVMe for ephemeral storage.
    pub instance_store_raid0: bool,
}

impl Default for StorageSettings {
    fn default() -> Self {
        StorageSettings { root_volume_gib: ROOT_VOLUME_GIB_DEFAULT as u64, instance_store_raid0: false }
    }
}

/// Capacity and allocatable as the kubelet reports them.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeShape {
    /// `status.capacity`.
    pub capacity: BTreeMap<String, Quantity>,
    /// `status.allocatable`.
    pub allocatable: BTreeMap<String, Quantity>,
}

/// Max pods (see the module docs).
pub fn max_pods(facts: &InstanceFacts, kubelet: &KubeletSettings) -> i64 {
    let eni_limited = i64::from(facts.max_enis) * (i64::from(facts.ipv4_per_eni) - 1).max(0) + 2;
    let pods = kubelet.max_pods.map_or(eni_limited, i64::from);
    match kubelet.pods_per_core {
        Some(per_core) if per_core > 0 => pods.min(i64::from(per_core) * i64::from(facts.vcpu)),
        _ => pods,
    }
}

/// Default kube-reserved CPU in millicores for a vCPU count.
pub fn kube_reserved_milli_cpu(vcpu: u32) -> i64 {
    let cpu = i64::from(vcpu) * 1000;
    // (start, end, basis points of the range reserved)
    let ranges: [(i64, i64, i64); 4] = [(0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, i64::MAX, 25)];
    ranges
        .iter()
        .filter(|(start, _, _)| cpu >= *start)
        .map(|&(start, end, bp)| (cpu.min(end) - start) * bp / 10_000)
        .sum()
}

/// Default kube-reserved memory in bytes for a max-pods value.
pub fn kube_reserved_memory(max_pods: i64) -> i64 {
    (KUBE_RESERVED_MEMORY_PER_POD_MIB * max_pods + KUBE_RESERVED_MEMORY_BASE_MIB) * MIB
}

/// Capacity memory the kubelet reports, in bytes, whole KiB (see the module docs).
pub fn capacity_memory(facts: &InstanceFacts) -> i64 {
    let total_mib = facts.memory_mib as f64;
    let overhead_mib = match facts.memory_overhead_mib {
        Some(o) => o as f64,
        None => 64.0 + 0.045 * total_mib.min(32_768.0) + 0.03 * (total_mib - 32_768.0).max(0.0),
    };
    let bytes = ((total_mib - overhead_mib).max(0.0) * MIB as f64) as i64;
    bytes / 1024 * 1024
}

fn threshold(spec: &str, capacity: i64) -> i64 {
    match spec.strip_suffix('%') {
        Some(p) => (capacity as f64 * p.parse::<f64>().unwrap_or(0.0) / 100.0) as i64,
        None => quantity::parse_value(spec).unwrap_or(0),
    }
}

fn reserved(map: &BTreeMap<String, Quantity>, name: &str, default: i64, milli: bool) -> i64 {
    match map.get(name) {
        Some(q) if milli => quantity::milli(q).unwrap_or(default),
        Some(q) => quantity::value(q).unwrap_or(default),
        None => default,
    }
}

/// Capacity and allocatable for an instance type under the given kubelet settings.
pub fn node_shape(facts: &InstanceFacts, kubelet: &KubeletSettings, storage: &StorageSettings) -> NodeShape {
    let pods = max_pods(facts, kubelet);
    let cpu = i64::from(facts.vcpu) * 1000;
    let memory = capacity_memory(facts);
    let ephemeral = if storage.instance_store_raid0 && facts.local_nvme_gib > 0 {
        facts.local_nvme_gib as i64 * GIB
    } else {
        storage.root_volume_gib as i64 * GIB
    };
    let kr = &kubelet.kube_reserved;
    let sr = &kubelet.system_reserved;
    let eviction = |signal: &str, default: &str, capacity: i64| {
        threshold(kubelet.eviction_hard.get(signal).map_or(default, String::as_str), capacity)
    };
    let alloc_cpu = cpu - reserved(kr, "cpu", kube_reserved_milli_cpu(facts.vcpu), true) - reserved(sr, "cpu", 0, true);
    let alloc_memory = memory
        - reserved(kr, "memory", kube_reserved_memory(pods), false)
        - reserved(sr, "memory", 0, false)
        - eviction("memory.available", &format!("{EVICTION_MEMORY_AVAILABLE_MIB}Mi"), memory);
    let alloc_ephemeral = ephemeral
        - reserved(kr, "ephemeral-storage", KUBE_RESERVED_EPHEMERAL_GIB * GIB, false)
        - reserved(sr, "ephemeral-storage", 0, false)
        - eviction("nodefs.available", &format!("{EVICTION_NODEFS_AVAILABLE_PERCENT}%"), ephemeral);
    let mut capacity = BTreeMap::from([
        ("cpu".to_string(), format_milli_cpu(cpu)),
        ("memory".to_string(), format_bytes(memory)),
        ("ephemeral-storage".to_string(), format_bytes(ephemeral)),
        ("pods".to_string(), format_count(pods)),
    ]);
    let mut allocatable = BTreeMap::from([
        ("cpu".to_string(), format_milli_cpu(alloc_cpu.max(0))),
        ("memory".to_string(), format_bytes(alloc_memory.max(0))),
        ("ephemeral-storage".to_string(), format_bytes(alloc_ephemeral.max(0))),
        ("pods".to_string(), format_count(pods)),
    ]);
    if let Some((count, vendor)) = facts.gpu {
        capacity.insert(vendor.resource().into(), format_count(i64::from(count)));
        allocatable.insert(vendor.resource().into(), format_count(i64::from(count)));
    }
    NodeShape { capacity, allocatable }
}

/// Where and how an instance was launched, and what its launch configuration asks the kubelet
/// to register with.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// Node name (EKS: the private DNS name, e.g. `ip-10-0-1-23.us-west-2.compute.internal`).
    pub node_name: String,
    /// EC2 instance ID.
    pub instance_id: String,
    /// Availability zone, e.g. `us-west-2a`.
    pub zone: String,
    /// Zone ID, e.g. `usw2-az1`.
    pub zone_id: String,
    /// Region, e.g. `us-west-2`.
    pub region: String,
    /// `spot` or `on-demand` (or `reserved`).
    pub capacity_type: String,
    /// Private IPv4 address, if known.
    pub private_ip: Option<String>,
    /// Labels from the launch (NodeClaim labels passed as `--node-labels`).
    pub labels: BTreeMap<String, String>,
    /// Taints from the launch (`--register-with-taints`: NodePool taints and startup taints).
    pub taints: Vec<Taint>,
    /// Kubelet version reported in `nodeInfo`, e.g. `v1.34.1-eks-1234567`.
    pub kubelet_version: String,
}

/// The well-known labels the kubelet and the AWS cloud provider put on a node.
pub fn well_known_labels(facts: &InstanceFacts, launch: &Launch) -> BTreeMap<String, String> {
    let arch = facts.arch.label().to_string();
    BTreeMap::from([
        ("kubernetes.io/arch".into(), arch.clone()),
        ("beta.kubernetes.io/arch".into(), arch),
        ("kubernetes.io/os".into(), "linux".into()),
        ("beta.kubernetes.io/os".into(), "linux".into()),
        ("kubernetes.io/hostname".into(), launch.node_name.clone()),
        ("node.kubernetes.io/instance-type".into(), facts.instance_type.clone()),
        ("beta.kubernetes.io/instance-type".into(), facts.instance_type.clone()),
        ("topology.kubernetes.io/region".into(), launch.region.clone()),
        ("failure-domain.beta.kubernetes.io/region".into(), launch.region.clone()),
        ("topology.kubernetes.io/zone".into(), launch.zone.clone()),
        ("failure-domain.beta.kubernetes.io/zone".into(), launch.zone.clone()),
        ("topology.k8s.aws/zone-id".into(), launch.zone_id.clone()),
        // The EBS CSI driver's topology key: its node plugin reports the zone in
        // `NodeGetInfo`'s accessible topology and the kubelet writes each topology segment on
        // the Node when the driver registers (kubelet `pkg/volume/csi/nodeinfomanager/
        // nodeinfomanager.go` `updateTopologyLabels`). The volumes the driver provisions name
        // this key in their node affinity, so the kube-scheduler's VolumeBinding needs it on
        // the node. Every simulated node runs the driver (its startup taint is in
        // `NodeTiming::agent_taints`); the label is written at registration, moments
        // before the plugin would register.
        ("topology.ebs.csi.aws.com/zone".into(), launch.zone.clone()),
        ("karpenter.sh/capacity-type".into(), launch.capacity_type.clone()),
    ])
}

/// `aws:///<zone>/<instance-id>`.
pub fn provider_id(zone: &str, instance_id: &str) -> String {
    format!("aws:///{zone}/{instance_id}")
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, now: &Time) -> NodeCondition {
    NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

/// The Node object the kubelet registers (ready to create in the store; the store sets uid,
/// resourceVersion and creationTimestamp). With `ready = false` the Ready condition is False
/// and the node carries `node.kubernetes.io/not-ready:NoSchedule`, as the node lifecycle
/// controller adds it right after registration.
pub fn build_node(
    facts: &InstanceFacts,
    kubelet: &KubeletSettings,
    storage: &StorageSettings,
    launch: &Launch,
    ready: bool,
    now: Timestamp,
) -> Node {
    let shape = node_shape(facts, kubelet, storage);
    let mut labels = launch.labels.clone();
    labels.extend(well_known_labels(facts, launch));
    let mut taints = launch.taints.clone();
    if !ready && !taints.iter().any(|t| t.key == TAINT_NOT_READY) {
        taints.push(Taint { key: TAINT_NOT_READY.into(), effect: "NoSchedule".into(), value: None, time_added: None });
    }
    let now = Time(now);
    let ready_condition = if ready {
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", &now)
    } else {
        condition(
            "Ready",
            "False",
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
            &now,
        )
    };
    let mut addresses = Vec::new();
    if let Some(ip) = &launch.private_ip {
        addresses.push(NodeAddress { type_: "InternalIP".into(), address: ip.clone() });
    }
    addresses.push(NodeAddress { type_: "Hostname".into(), address: launch.node_name.clone() });
    Node {
        metadata: ObjectMeta { name: Some(launch.node_name.clone()), labels: Some(labels), ..ObjectMeta::default() },
        spec: Some(NodeSpec {
            provider_id: Some(provider_id(&launch.zone, &launch.instance_id)),
            taints: (!taints.is_empty()).then_some(taints),
            ..NodeSpec::default()
        }),
        status: Some(NodeStatus {
            capacity: Some(shape.capacity),
            allocatable: Some(shape.allocatable),
            conditions: Some(vec![
                condition(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                    &now,
                ),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", &now),
                condition(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                    &now,
                ),
                ready_condition,
            ]),
            addresses: Some(addresses),
            node_info: Some(NodeSystemInfo {
                architecture: facts.arch.label().into(),
                operating_system: "linux".into(),
                os_image: "Amazon Linux 2023".into(),
                kubelet_version: launch.kubelet_version.clone(),
                kube_proxy_version: launch.kubelet_version.clone(),
                container_runtime_version: "containerd://1.7.27".into(),
                kernel_version: "6.1.0-amazon".into(),
                machine_id: launch.instance_id.clone(),
                system_uuid: launch.instance_id.clone(),
                boot_id: launch.instance_id.clone(),
                swap: None,
            }),
            ..NodeStatus::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m5_large() -> InstanceFacts {
        InstanceFacts {
            instance_type: "m5.large".into(),
            vcpu: 2,
            memory_mib: 8192,
            max_enis: 3,
            ipv4_per_eni: 10,
            gpu: None,
            local_nvme_gib: 0,
            arch: Arch::Amd64,
            memory_overhead_mib: None,
        }
    }

    fn launch() -> Launch {
        Launch {
            node_name: "ip-10-0-1-23.us-west-2.compute.internal".into(),
            instance_id: "i-0123456789abcdef0".into(),
            zone: "us-west-2a".into(),
            zone_id: "usw2-az1".into(),
            region: "us-west-2".into(),
            capacity_type: "spot".into(),
            private_ip: Some("10.0.1.23".into()),
            labels: BTreeMap::from([("karpenter.sh/nodepool".into(), "default".into())]),
            taints: vec![Taint {
                key: "karpenter.sh/unregistered".into(),
                effect: "NoExecute".into(),
                value: None,
                time_added: None,
            }],
            kubelet_version: "v1.34.1-eks-1".into(),
        }
    }

    #[test]
    fn m5_large_matches_karpenter_reference_numbers() {
        let k = KubeletSettings::default();
        assert_eq!(max_pods(&m5_large(), &k), 29);
        assert_eq!(kube_reserved_memory(29), 574 * MIB);
        assert_eq!(kube_reserved_milli_cpu(2), 70);
        let shape = node_shape(&m5_large(), &k, &StorageSettings::default());
        assert_eq!(shape.capacity["pods"].0, "29");
        assert_eq!(shape.capacity["cpu"].0, "2");
        assert_eq!(shape.allocatable["cpu"].0, "1930m");
        let cap = quantity::value(&shape.capacity["memory"]).unwrap();
        let alloc = quantity::value(&shape.allocatable["memory"]).unwrap();
        assert_eq!(cap - alloc, (574 + 100) * MIB);
        // Realistic capacity: more than Karpenter's 7.5% estimate, less than nominal.
        assert!(cap > (8192.0 * 0.925) as i64 * MIB && cap < 8192 * MIB);
        let eph = quantity::value(&shape.capacity["ephemeral-storage"]).unwrap();
        let eph_alloc = quantity::value(&shape.allocatable["ephemeral-storage"]).unwrap();
        assert_eq!(eph, 20 * GIB);
        assert_eq!(eph_alloc, 20 * GIB - GIB - 2 * GIB);
    }

    #[test]
    fn cpu_reservation_steps_down_with_core_count() {
        assert_eq!(kube_reserved_milli_cpu(1), 60);
        assert_eq!(kube_reserved_milli_cpu(4), 80);
        assert_eq!(kube_reserved_milli_cpu(48), 80 + 110);
    }

    #[test]
    fn kubelet_overrides_apply() {
        let k = KubeletSettings {
            max_pods: Some(110),
            pods_per_core: Some(10),
            kube_reserved: BTreeMap::from([("cpu".into(), Quantity("200m".into()))]),
            system_reserved: BTreeMap::from([("memory".into(), Quantity("100Mi".into()))]),
            eviction_hard: BTreeMap::from([("memory.available".into(), "5%".into())]),
        };
        assert_eq!(max_pods(&m5_large(), &k), 20, "podsPerCore caps maxPods");
        let shape = node_shape(&m5_large(), &k, &StorageSettings::default());
        assert_eq!(shape.allocatable["cpu"].0, "1800m");
        let cap = quantity::value(&shape.capacity["memory"]).unwrap();
        let alloc = quantity::value(&shape.allocatable["memory"]).unwrap();
        let eviction = (cap as f64 * 0.05) as i64;
        assert_eq!(cap - alloc, kube_reserved_memory(20) + 100 * MIB + eviction);
    }

    #[test]
    fn gpu_and_nvme_are_advertised() {
        let mut f = m5_large();
        f.gpu = Some((4, GpuVendor::Nvidia));
        f.local_nvme_gib = 900;
        let storage = StorageSettings { root_volume_gib: 20, instance_store_raid0: true };
        let shape = node_shape(&f, &KubeletSettings::default(), &storage);
        assert_eq!(shape.allocatable["nvidia.com/gpu"].0, "4");
        assert_eq!(quantity::value(&shape.capacity["ephemeral-storage"]).unwrap(), 900 * GIB);
    }

    #[test]
    fn built_node_carries_labels_taints_and_provider_id() {
        let node = build_node(
            &m5_large(),
            &KubeletSettings::default(),
            &StorageSettings::default(),
            &launch(),
            false,
            Timestamp::UNIX_EPOCH,
        );
        let labels = node.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["node.kubernetes.io/instance-type"], "m5.large");
        assert_eq!(labels["topology.kubernetes.io/zone"], "us-west-2a");
        assert_eq!(labels["topology.kubernetes.io/region"], "us-west-2");
        assert_eq!(labels["topology.k8s.aws/zone-id"], "usw2-az1");
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["kubernetes.io/hostname"], "ip-10-0-1-23.us-west-2.compute.internal");
        assert_eq!(labels["karpenter.sh/capacity-type"], "spot");
        assert_eq!(labels["karpenter.sh/nodepool"], "default");
        let spec = node.spec.as_ref().unwrap();
        assert_eq!(spec.provider_id.as_deref(), Some("aws:///us-west-2a/i-0123456789abcdef0"));
        let keys: Vec<_> = spec.taints.iter().flatten().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, vec!["karpenter.sh/unregistered", TAINT_NOT_READY]);
        let ready =
            node.status.as_ref().unwrap().conditions.as_ref().unwrap().iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "False");
    }
}
