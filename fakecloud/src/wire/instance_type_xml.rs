//! DescribeInstanceTypes items: the fields Karpenter's instance-type provider reads
//! (vCPU, memory, architectures, GPUs/accelerators, network cards, ENIs and IPv4 per ENI,
//! hypervisor, bare metal, usage classes, EBS, local NVMe).

use crate::catalog::InstanceTypeInfo;
use crate::wire::xml::Xml;

fn flag(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

pub(crate) fn write(x: &mut Xml, t: &InstanceTypeInfo) {
    x.open("item");
    x.leaf("instanceType", &t.name)
        .leaf("currentGeneration", flag(t.current_generation))
        .leaf("freeTierEligible", "false");
    x.items("supportedUsageClasses", &t.usage_classes);
    x.items("supportedRootDeviceTypes", ["ebs"]);
    x.items("supportedVirtualizationTypes", ["hvm"]);
    x.leaf("bareMetal", flag(t.bare_metal));
    x.opt("hypervisor", t.hypervisor.as_deref());
    x.open("processorInfo");
    x.items("supportedArchitectures", &t.ec2_architectures);
    x.leaf("manufacturer", &t.cpu_manufacturer);
    x.close();
    let threads = if t.vcpu > 1 && t.cpu_manufacturer != "AWS" { 2 } else { 1 };
    x.open("vCpuInfo")
        .leaf("defaultVCpus", t.vcpu)
        .leaf("defaultCores", (t.vcpu / threads).max(1))
        .leaf("defaultThreadsPerCore", threads)
        .close();
    x.open("memoryInfo").leaf("sizeInMiB", t.memory_mib).close();
    x.leaf("instanceStorageSupported", flag(t.local_nvme_gb.is_some()));
    if let Some(gb) = t.local_nvme_gb {
        x.open("instanceStorageInfo")
            .leaf("totalSizeInGB", gb)
            .open("disks")
            .open("item")
            .leaf("sizeInGB", gb)
            .leaf("count", 1)
            .leaf("type", "ssd")
            .close()
            .close()
            .leaf("nvmeSupport", "required")
            .leaf("encryptionSupport", "required")
            .close();
    }
    x.open("ebsInfo")
        .leaf("ebsOptimizedSupport", if t.ebs_max_bandwidth_mbps.is_some() { "default" } else { "supported" })
        .leaf("encryptionSupport", "supported");
    if let Some(mbps) = t.ebs_max_bandwidth_mbps {
        x.open("ebsOptimizedInfo").leaf("baselineBandwidthInMbps", mbps).leaf("maximumBandwidthInMbps", mbps).close();
    }
    x.leaf("nvmeSupport", if t.hypervisor.as_deref() == Some("nitro") { "required" } else { "unsupported" });
    // Nitro types share 27 slots between EBS volumes and ENIs; Xen types have 40.
    let nitro = t.hypervisor.as_deref() == Some("nitro");
    x.leaf("maximumEbsAttachments", if nitro { 27 } else { 40 }).leaf("attachmentLimitType", "shared");
    x.close();
    x.open("networkInfo")
        .leaf("networkPerformance", &t.network_performance)
        .leaf("maximumNetworkInterfaces", t.max_enis_all_cards)
        .leaf(
            "maximumNetworkCards",
            if t.max_enis_all_cards > t.max_enis { t.max_enis_all_cards.div_ceil(t.max_enis.max(1)) } else { 1 },
        )
        .leaf("defaultNetworkCardIndex", 0)
        .open("networkCards")
        .open("item")
        .leaf("networkCardIndex", 0)
        .leaf("networkPerformance", &t.network_performance)
        .leaf("maximumNetworkInterfaces", t.max_enis)
        .leaf("baselineBandwidthInGbps", t.network_baseline_gbps)
        .leaf("peakBandwidthInGbps", t.network_baseline_gbps)
        .close()
        .close()
        .leaf("ipv4AddressesPerInterface", t.ipv4_per_eni)
        .leaf("ipv6AddressesPerInterface", t.ipv4_per_eni)
        .leaf("ipv6Supported", "true")
        .leaf("enaSupport", if t.hypervisor.as_deref() == Some("nitro") { "required" } else { "supported" })
        .leaf("efaSupported", "false")
        .leaf("encryptionInTransitSupported", flag(t.hypervisor.as_deref() == Some("nitro")))
        .close();
    if t.gpu_count > 0 {
        x.open("gpuInfo")
            .open("gpus")
            .open("item")
            .opt("name", t.gpu_name.as_deref())
            .opt("manufacturer", t.gpu_manufacturer.as_deref())
            .leaf("count", t.gpu_count)
            .open("memoryInfo")
            .leaf("sizeInMiB", t.gpu_memory_mib / u64::from(t.gpu_count.max(1)))
            .close()
            .close()
            .close()
            .leaf("totalGpuMemoryInMiB", t.gpu_memory_mib)
            .close();
    }
    if t.accelerator_count > 0 {
        let name = t.accelerator_name.as_deref().unwrap_or("Inferentia");
        x.open("neuronInfo")
            .open("neuronDevices")
            .open("item")
            .leaf("count", t.accelerator_count)
            .leaf("name", name)
            .close()
            .close()
            .close();
        x.open("inferenceAcceleratorInfo")
            .open("accelerators")
            .open("item")
            .leaf("count", t.accelerator_count)
            .leaf("name", name)
            .leaf("manufacturer", "AWS")
            .close()
            .close()
            .close();
    }
    x.open("placementGroupInfo").items("supportedStrategies", ["cluster", "partition", "spread"]).close();
    x.leaf("hibernationSupported", "false")
        .leaf("burstablePerformanceSupported", flag(t.burstable))
        .leaf("dedicatedHostsSupported", "false")
        .leaf("autoRecoverySupported", flag(!t.bare_metal));
    x.items("supportedBootModes", ["legacy-bios", "uefi"]);
    x.close();
}
