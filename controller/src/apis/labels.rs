//! Well-known label, annotation, taint, tag and finalizer keys, and the label-domain rules.
//!
//! Karpenter (core `pkg/apis/v1/labels.go`, `taints.go`; AWS `pkg/apis/v1/labels.go`) defines which
//! node labels the scheduler understands ("well known"), which label domains a user may not set
//! (restricted), and which aliases are normalized. Every controller in Dovetail, and the simulator,
//! must agree on these strings, so they live here once.

/// API group of NodePool, NodeClaim and NodeOverlay.
pub const KARPENTER_GROUP: &str = "karpenter.sh";
/// API group of EC2NodeClass, and the AWS label domain.
pub const AWS_GROUP: &str = "karpenter.k8s.aws";
/// Domain of Karpenter's compatibility annotations (`compatibility.karpenter.sh/...`).
pub const COMPATIBILITY_GROUP: &str = "compatibility.karpenter.sh";

// ---------------------------------------------------------------------------------------------
// Core labels (core:pkg/apis/v1/labels.go, k8s.io/api/core/v1 well_known_labels.go)
// ---------------------------------------------------------------------------------------------

/// Label carrying the owning NodePool's name on NodeClaims and Nodes.
pub const NODE_POOL_LABEL: &str = "karpenter.sh/nodepool";
/// Label carrying the capacity type (`on-demand`, `spot`, `reserved`) of a node.
pub const CAPACITY_TYPE_LABEL: &str = "karpenter.sh/capacity-type";
/// Label set to `"true"` on a Node once its NodeClaim is Registered.
pub const NODE_REGISTERED_LABEL: &str = "karpenter.sh/registered";
/// Label set to `"true"` on a Node once its NodeClaim is Initialized.
pub const NODE_INITIALIZED_LABEL: &str = "karpenter.sh/initialized";
/// Zone of a node (stable key).
pub const TOPOLOGY_ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The zone key the EBS CSI driver writes in the node affinity of the volumes it creates.
pub const EBS_CSI_ZONE_LABEL: &str = "topology.ebs.csi.aws.com/zone";
/// Region of a node (stable key).
pub const TOPOLOGY_REGION_LABEL: &str = "topology.kubernetes.io/region";
/// Instance type of a node (stable key).
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
/// CPU architecture of a node (stable key).
pub const ARCH_LABEL: &str = "kubernetes.io/arch";
/// Operating system of a node (stable key).
pub const OS_LABEL: &str = "kubernetes.io/os";
/// Windows build of a Windows node.
pub const WINDOWS_BUILD_LABEL: &str = "node.kubernetes.io/windows-build";
/// Hostname of a node; restricted in NodePools because Karpenter assigns it.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Deprecated zone alias, normalized to [`TOPOLOGY_ZONE_LABEL`].
pub const FAILURE_DOMAIN_BETA_ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";
/// Deprecated region alias, normalized to [`TOPOLOGY_REGION_LABEL`].
pub const FAILURE_DOMAIN_BETA_REGION_LABEL: &str = "failure-domain.beta.kubernetes.io/region";
/// Deprecated architecture alias, normalized to [`ARCH_LABEL`].
pub const BETA_ARCH_LABEL: &str = "beta.kubernetes.io/arch";
/// Deprecated OS alias, normalized to [`OS_LABEL`].
pub const BETA_OS_LABEL: &str = "beta.kubernetes.io/os";
/// Deprecated instance-type alias, normalized to [`INSTANCE_TYPE_LABEL`].
pub const BETA_INSTANCE_TYPE_LABEL: &str = "beta.kubernetes.io/instance-type";

/// `karpenter.sh/capacity-type` value for spot capacity.
pub const CAPACITY_TYPE_SPOT: &str = "spot";
/// `karpenter.sh/capacity-type` value for on-demand capacity.
pub const CAPACITY_TYPE_ON_DEMAND: &str = "on-demand";
/// `karpenter.sh/capacity-type` value for reserved capacity (ODCR, capacity blocks).
pub const CAPACITY_TYPE_RESERVED: &str = "reserved";
/// `kubernetes.io/arch` value for x86-64.
pub const ARCHITECTURE_AMD64: &str = "amd64";
/// `kubernetes.io/arch` value for 64-bit ARM.
pub const ARCHITECTURE_ARM64: &str = "arm64";

// ---------------------------------------------------------------------------------------------
// Core annotations, taints and finalizers
// ---------------------------------------------------------------------------------------------

/// Pod or Node annotation that blocks voluntary disruption (`"true"`, or a Go duration on pods).
pub const DO_NOT_DISRUPT_ANNOTATION: &str = "karpenter.sh/do-not-disrupt";
/// Node annotation `"true"` that stops Karpenter from syncing NodeClaim taints onto the Node.
pub const DO_NOT_SYNC_TAINTS_LABEL: &str = "karpenter.sh/do-not-sync-taints";
/// Hash of the NodePool's `spec.template` (requirements excluded), used for static drift.
pub const NODE_POOL_HASH_ANNOTATION: &str = "karpenter.sh/nodepool-hash";
/// Version of the hashing scheme of [`NODE_POOL_HASH_ANNOTATION`].
pub const NODE_POOL_HASH_VERSION_ANNOTATION: &str = "karpenter.sh/nodepool-hash-version";
/// Current value of [`NODE_POOL_HASH_VERSION_ANNOTATION`] (karpenter-behaviour.md §1.1).
pub const NODE_POOL_HASH_VERSION: &str = "v3";
/// Set on a deleting NodeClaim to `deletionTimestamp + terminationGracePeriod`.
pub const NODE_CLAIM_TERMINATION_TIMESTAMP_ANNOTATION: &str = "karpenter.sh/nodeclaim-termination-timestamp";
/// Set to `"true"` when minValues was relaxed under the BestEffort policy.
pub const NODE_CLAIM_MIN_VALUES_RELAXED_ANNOTATION: &str = "karpenter.sh/nodeclaim-min-values-relaxed";
/// Set on a NodeClaim whose instance types a NodeOverlay priced (core `v1alpha1/labels.go`
/// l. 22, `nodeclaimtemplate.go` l. 129-133): the launch then follows the overlay prices.
pub const PRICE_OVERLAY_APPLIED_ANNOTATION: &str = "karpenter.sh/price-overlay-applied";
/// Set on a NodeClaim whose instance types a NodeOverlay added capacity to
/// (`nodeclaimtemplate.go` l. 134-138).
pub const CAPACITY_OVERLAY_APPLIED_ANNOTATION: &str = "karpenter.sh/capacity-overlay-applied";
/// Records which cloud provider created an object (`compatibility.karpenter.sh/provider`).
pub const PROVIDER_COMPATIBILITY_ANNOTATION: &str = "compatibility.karpenter.sh/provider";

/// Taint put on nodes being disrupted or terminated so nothing new schedules there.
pub const DISRUPTED_TAINT_KEY: &str = "karpenter.sh/disrupted";
/// Effect of the [`DISRUPTED_TAINT_KEY`] taint.
pub const DISRUPTED_TAINT_EFFECT: &str = "NoSchedule";
/// Taint nodes boot with until their NodeClaim is Registered.
pub const UNREGISTERED_TAINT_KEY: &str = "karpenter.sh/unregistered";
/// Effect of the [`UNREGISTERED_TAINT_KEY`] taint.
pub const UNREGISTERED_TAINT_EFFECT: &str = "NoExecute";

/// Finalizer Karpenter puts on NodeClaims and Nodes so it can drain and terminate first.
pub const TERMINATION_FINALIZER: &str = "karpenter.sh/termination";
/// Finalizer the AWS provider puts on EC2NodeClasses (cleans up instance profiles, LTs).
pub const AWS_TERMINATION_FINALIZER: &str = "karpenter.k8s.aws/termination";

/// Taint effect: new pods that do not tolerate it are not scheduled.
pub const TAINT_EFFECT_NO_SCHEDULE: &str = "NoSchedule";
/// Taint effect: the scheduler tries to avoid the node.
pub const TAINT_EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
/// Taint effect: running pods that do not tolerate it are evicted.
pub const TAINT_EFFECT_NO_EXECUTE: &str = "NoExecute";
/// All taint effects a CRD accepts.
pub const TAINT_EFFECTS: [&str; 3] =
    [TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_PREFER_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE];

/// Ephemeral taints that Initialization waits on, besides startup taints (karpenter-behaviour §3.6).
pub const NODE_NOT_READY_TAINT_KEY: &str = "node.kubernetes.io/not-ready";
/// Taint the node lifecycle controller adds when a node stops reporting.
pub const NODE_UNREACHABLE_TAINT_KEY: &str = "node.kubernetes.io/unreachable";
/// Taint the cloud controller manager removes once it has initialized the node.
pub const NODE_UNINITIALIZED_TAINT_KEY: &str = "node.cloudprovider.kubernetes.io/uninitialized";
/// Prefix of readiness-gate taints (`readiness.k8s.io/*`), all treated as ephemeral.
pub const READINESS_TAINT_PREFIX: &str = "readiness.k8s.io/";

// ---------------------------------------------------------------------------------------------
// AWS labels and annotations (aws:pkg/apis/v1/labels.go)
// ---------------------------------------------------------------------------------------------

/// Label naming the EC2NodeClass a node was launched from.
pub const EC2_NODE_CLASS_LABEL: &str = "karpenter.k8s.aws/ec2nodeclass";

/// The node class label key of a class reference, `<group>/<lowercased kind>` (core
/// `pkg/apis/v1/labels.go` l. 173 `NodeClassLabelKey`): [`EC2_NODE_CLASS_LABEL`] for an
/// EC2NodeClass.
pub fn node_class_label_key(group: &str, kind: &str) -> String {
    format!("{group}/{}", kind.to_lowercase())
}
/// ID of the capacity reservation a reserved node runs in.
pub const CAPACITY_RESERVATION_ID_LABEL: &str = "karpenter.k8s.aws/capacity-reservation-id";
/// Type (`default`, `capacity-block`) of the capacity reservation.
pub const CAPACITY_RESERVATION_TYPE_LABEL: &str = "karpenter.k8s.aws/capacity-reservation-type";
/// Whether the capacity reservation is interruptible.
pub const CAPACITY_RESERVATION_INTERRUPTIBLE_LABEL: &str = "karpenter.k8s.aws/capacity-reservation-interruptible";
/// Tenancy of the instance.
pub const INSTANCE_TENANCY_LABEL: &str = "karpenter.k8s.aws/instance-tenancy";
/// Hypervisor (`nitro`, `xen`, or empty for metal).
pub const INSTANCE_HYPERVISOR_LABEL: &str = "karpenter.k8s.aws/instance-hypervisor";
/// Whether the type supports encryption in transit.
pub const INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED_LABEL: &str =
    "karpenter.k8s.aws/instance-encryption-in-transit-supported";
/// Instance category: the letters before the generation (`c`, `m`, `r`, ...).
pub const INSTANCE_CATEGORY_LABEL: &str = "karpenter.k8s.aws/instance-category";
/// Instance family (`m5`, `c6g`, ...).
pub const INSTANCE_FAMILY_LABEL: &str = "karpenter.k8s.aws/instance-family";
/// Instance generation (`5`, `6`, ...).
pub const INSTANCE_GENERATION_LABEL: &str = "karpenter.k8s.aws/instance-generation";
/// Local NVMe storage in GiB.
pub const INSTANCE_LOCAL_NVME_LABEL: &str = "karpenter.k8s.aws/instance-local-nvme";
/// Instance size (`large`, `2xlarge`, ...).
pub const INSTANCE_SIZE_LABEL: &str = "karpenter.k8s.aws/instance-size";
/// vCPU count.
pub const INSTANCE_CPU_LABEL: &str = "karpenter.k8s.aws/instance-cpu";
/// CPU manufacturer (`intel`, `amd`, `aws`).
pub const INSTANCE_CPU_MANUFACTURER_LABEL: &str = "karpenter.k8s.aws/instance-cpu-manufacturer";
/// Sustained CPU clock speed in MHz.
pub const INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ_LABEL: &str =
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz";
/// Memory in MiB.
pub const INSTANCE_MEMORY_LABEL: &str = "karpenter.k8s.aws/instance-memory";
/// EBS bandwidth in Mbps.
pub const INSTANCE_EBS_BANDWIDTH_LABEL: &str = "karpenter.k8s.aws/instance-ebs-bandwidth";
/// Network bandwidth in Mbps.
pub const INSTANCE_NETWORK_BANDWIDTH_LABEL: &str = "karpenter.k8s.aws/instance-network-bandwidth";
/// GPU name.
pub const INSTANCE_GPU_NAME_LABEL: &str = "karpenter.k8s.aws/instance-gpu-name";
/// GPU manufacturer.
pub const INSTANCE_GPU_MANUFACTURER_LABEL: &str = "karpenter.k8s.aws/instance-gpu-manufacturer";
/// GPU count.
pub const INSTANCE_GPU_COUNT_LABEL: &str = "karpenter.k8s.aws/instance-gpu-count";
/// GPU memory in MiB.
pub const INSTANCE_GPU_MEMORY_LABEL: &str = "karpenter.k8s.aws/instance-gpu-memory";
/// Accelerator name (Inferentia, Trainium, ...).
pub const INSTANCE_ACCELERATOR_NAME_LABEL: &str = "karpenter.k8s.aws/instance-accelerator-name";
/// Accelerator manufacturer.
pub const INSTANCE_ACCELERATOR_MANUFACTURER_LABEL: &str = "karpenter.k8s.aws/instance-accelerator-manufacturer";
/// Accelerator count.
pub const INSTANCE_ACCELERATOR_COUNT_LABEL: &str = "karpenter.k8s.aws/instance-accelerator-count";
/// Whether the type is a "flex" type.
pub const INSTANCE_CAPABILITY_FLEX_LABEL: &str = "karpenter.k8s.aws/instance-capability-flex";
/// Placement group ID of the instance.
pub const PLACEMENT_GROUP_ID_LABEL: &str = "karpenter.k8s.aws/placement-group-id";
/// Placement group partition of the instance.
pub const PLACEMENT_GROUP_PARTITION_LABEL: &str = "karpenter.k8s.aws/placement-group-partition";
/// Zone ID (`use1-az1`) of the instance.
pub const TOPOLOGY_ZONE_ID_LABEL: &str = "topology.k8s.aws/zone-id";

/// Hash of the EC2NodeClass spec, used for static drift.
pub const EC2_NODE_CLASS_HASH_ANNOTATION: &str = "karpenter.k8s.aws/ec2nodeclass-hash";
/// Version of the hashing scheme of [`EC2_NODE_CLASS_HASH_ANNOTATION`].
pub const EC2_NODE_CLASS_HASH_VERSION_ANNOTATION: &str = "karpenter.k8s.aws/ec2nodeclass-hash-version";
/// Current value of [`EC2_NODE_CLASS_HASH_VERSION_ANNOTATION`] (karpenter-behaviour.md §1.3).
pub const EC2_NODE_CLASS_HASH_VERSION: &str = "v6";
/// Set on a NodeClaim once its instance has been tagged with the NodeClaim and Node names.
pub const INSTANCE_TAGGED_ANNOTATION: &str = "karpenter.k8s.aws/tagged";
/// Set on a NodeClaim once its instance carries `eks:eks-cluster-name` (aws `apis/v1/labels.go`
/// l. 177 `AnnotationClusterNameTaggedCompatability`, v1.14.1).
pub const CLUSTER_NAME_TAGGED_ANNOTATION: &str = "compatibility.karpenter.k8s.aws/cluster-name-tagged";
/// Name of the instance profile Karpenter created for an EC2NodeClass role.
pub const INSTANCE_PROFILE_ANNOTATION: &str = "karpenter.k8s.aws/instance-profile-name";

/// EC2 tag carrying the NodePool name.
pub const NODE_POOL_TAG_KEY: &str = NODE_POOL_LABEL;
/// EC2 tag carrying the EC2NodeClass name.
pub const NODE_CLASS_TAG_KEY: &str = EC2_NODE_CLASS_LABEL;
/// EC2 tag carrying the NodeClaim name.
pub const NODE_CLAIM_TAG_KEY: &str = "karpenter.sh/nodeclaim";
/// EC2 tag carrying the EKS cluster name.
pub const EKS_CLUSTER_NAME_TAG_KEY: &str = "eks:eks-cluster-name";
/// EC2 `Name` tag.
pub const NAME_TAG_KEY: &str = "Name";
/// Prefix of the `kubernetes.io/cluster/<name>=owned` tag.
pub const CLUSTER_TAG_KEY_PREFIX: &str = "kubernetes.io/cluster/";
/// Name prefix of the launch templates Karpenter creates.
pub const LAUNCH_TEMPLATE_NAME_PREFIX: &str = AWS_GROUP;

/// Extended resource for NVIDIA GPUs.
pub const RESOURCE_NVIDIA_GPU: &str = "nvidia.com/gpu";
/// Extended resource for AMD GPUs.
pub const RESOURCE_AMD_GPU: &str = "amd.com/gpu";
/// Extended resource for AWS Neuron devices.
pub const RESOURCE_AWS_NEURON: &str = "aws.amazon.com/neuron";
/// Extended resource for AWS Neuron cores.
pub const RESOURCE_AWS_NEURON_CORE: &str = "aws.amazon.com/neuroncore";
/// Extended resource for Habana Gaudi.
pub const RESOURCE_HABANA_GAUDI: &str = "habana.ai/gaudi";
/// Extended resource for branch ENIs (security groups for pods).
pub const RESOURCE_AWS_POD_ENI: &str = "vpc.amazonaws.com/pod-eni";
/// Extended resource for secondary private IPv4 addresses (Windows).
pub const RESOURCE_PRIVATE_IPV4_ADDRESS: &str = "vpc.amazonaws.com/PrivateIPv4Address";
/// Extended resource for EFA interfaces.
pub const RESOURCE_EFA: &str = "vpc.amazonaws.com/efa";
/// Resources the exotic-instance filter treats as "exotic" (karpenter-behaviour §2.5 item 5).
pub const WELL_KNOWN_EXOTIC_RESOURCES: [&str; 5] =
    [RESOURCE_NVIDIA_GPU, RESOURCE_AMD_GPU, RESOURCE_AWS_NEURON, RESOURCE_AWS_NEURON_CORE, RESOURCE_HABANA_GAUDI];

// ---------------------------------------------------------------------------------------------
// Label domain rules
// ---------------------------------------------------------------------------------------------

/// Labels inside restricted domains that users may still use in requirements: the scheduler
/// knows their values. Core's `WellKnownLabels` plus the AWS provider's additions (its `init()`),
/// plus the AWS keys the v1.14 CRD CEL rules allow (tenancy, reservation-interruptible and the
/// placement-group labels), so that runtime validation never rejects what admission accepted.
pub const WELL_KNOWN_LABELS: [&str; 36] = [
    NODE_POOL_LABEL,
    TOPOLOGY_ZONE_LABEL,
    TOPOLOGY_REGION_LABEL,
    INSTANCE_TYPE_LABEL,
    ARCH_LABEL,
    OS_LABEL,
    CAPACITY_TYPE_LABEL,
    WINDOWS_BUILD_LABEL,
    CAPACITY_RESERVATION_ID_LABEL,
    CAPACITY_RESERVATION_TYPE_LABEL,
    INSTANCE_HYPERVISOR_LABEL,
    INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED_LABEL,
    INSTANCE_CATEGORY_LABEL,
    INSTANCE_CAPABILITY_FLEX_LABEL,
    INSTANCE_FAMILY_LABEL,
    INSTANCE_GENERATION_LABEL,
    INSTANCE_SIZE_LABEL,
    INSTANCE_LOCAL_NVME_LABEL,
    INSTANCE_CPU_LABEL,
    INSTANCE_CPU_MANUFACTURER_LABEL,
    INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ_LABEL,
    INSTANCE_MEMORY_LABEL,
    INSTANCE_EBS_BANDWIDTH_LABEL,
    INSTANCE_NETWORK_BANDWIDTH_LABEL,
    INSTANCE_GPU_NAME_LABEL,
    INSTANCE_GPU_MANUFACTURER_LABEL,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_GPU_MEMORY_LABEL,
    INSTANCE_ACCELERATOR_NAME_LABEL,
    INSTANCE_ACCELERATOR_MANUFACTURER_LABEL,
    INSTANCE_ACCELERATOR_COUNT_LABEL,
    TOPOLOGY_ZONE_ID_LABEL,
    INSTANCE_TENANCY_LABEL,
    CAPACITY_RESERVATION_INTERRUPTIBLE_LABEL,
    PLACEMENT_GROUP_ID_LABEL,
    PLACEMENT_GROUP_PARTITION_LABEL,
];

/// Label domains that are prohibited by the kubelet or reserved by Karpenter; a label whose
/// domain ends with one of these is restricted unless it is well known or an exception.
pub const RESTRICTED_LABEL_DOMAINS: [&str; 4] = ["kubernetes.io", "k8s.io", KARPENTER_GROUP, AWS_GROUP];

/// Sub-domains of [`RESTRICTED_LABEL_DOMAINS`] that are allowed because the kubelet may set them.
pub const LABEL_DOMAIN_EXCEPTIONS: [&str; 3] = ["kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io"];

/// Labels that must never be set by users because they interfere with provisioning.
pub const RESTRICTED_LABELS: [&str; 1] = [HOSTNAME_LABEL];

/// Deprecated aliases and the well-known keys they mean. Pod requirements are translated.
pub const NORMALIZED_LABELS: [(&str, &str); 6] = [
    (FAILURE_DOMAIN_BETA_ZONE_LABEL, TOPOLOGY_ZONE_LABEL),
    // The EBS CSI driver's zone key on the volumes it provisions: the AWS provider adds it
    // (karpenter-provider-aws `pkg/operator/operator.go` l. 82), so a volume's zone affinity
    // constrains the zone a claim launches in.
    (EBS_CSI_ZONE_LABEL, TOPOLOGY_ZONE_LABEL),
    (BETA_ARCH_LABEL, ARCH_LABEL),
    (BETA_OS_LABEL, OS_LABEL),
    (BETA_INSTANCE_TYPE_LABEL, INSTANCE_TYPE_LABEL),
    (FAILURE_DOMAIN_BETA_REGION_LABEL, TOPOLOGY_REGION_LABEL),
];

/// `karpenter.sh/*` keys that the CRD CEL rules allow in requirements and template labels.
pub const CRD_ALLOWED_KARPENTER_SH_KEYS: [&str; 2] = [CAPACITY_TYPE_LABEL, NODE_POOL_LABEL];

/// `karpenter.k8s.aws/*` keys that the AWS CRD CEL rules allow in NodePool and NodeClaim
/// requirements and labels (the list in `x-kubernetes-validations`, duplicates removed).
pub const CRD_ALLOWED_AWS_KEYS: [&str; 28] = [
    INSTANCE_TENANCY_LABEL,
    CAPACITY_RESERVATION_TYPE_LABEL,
    CAPACITY_RESERVATION_ID_LABEL,
    CAPACITY_RESERVATION_INTERRUPTIBLE_LABEL,
    EC2_NODE_CLASS_LABEL,
    INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED_LABEL,
    INSTANCE_CATEGORY_LABEL,
    INSTANCE_HYPERVISOR_LABEL,
    INSTANCE_FAMILY_LABEL,
    INSTANCE_GENERATION_LABEL,
    INSTANCE_LOCAL_NVME_LABEL,
    INSTANCE_SIZE_LABEL,
    INSTANCE_CPU_LABEL,
    INSTANCE_CPU_MANUFACTURER_LABEL,
    INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ_LABEL,
    INSTANCE_MEMORY_LABEL,
    INSTANCE_EBS_BANDWIDTH_LABEL,
    INSTANCE_NETWORK_BANDWIDTH_LABEL,
    INSTANCE_GPU_NAME_LABEL,
    INSTANCE_GPU_MANUFACTURER_LABEL,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_GPU_MEMORY_LABEL,
    INSTANCE_ACCELERATOR_NAME_LABEL,
    INSTANCE_ACCELERATOR_MANUFACTURER_LABEL,
    INSTANCE_ACCELERATOR_COUNT_LABEL,
    INSTANCE_CAPABILITY_FLEX_LABEL,
    PLACEMENT_GROUP_ID_LABEL,
    PLACEMENT_GROUP_PARTITION_LABEL,
];

/// The domain (prefix before `/`) of a label key, or `""` when it has none
/// (core `GetLabelDomain`).
pub fn label_domain(key: &str) -> &str {
    match key.split_once('/') {
        Some((domain, _)) => domain,
        None => "",
    }
}

/// The well-known key an alias stands for, or the key itself (core `NormalizedLabels`).
pub fn normalize_label(key: &str) -> &str {
    NORMALIZED_LABELS.iter().find(|(alias, _)| *alias == key).map_or(key, |(_, stable)| stable)
}

/// Whether `key` is a well-known label (core+AWS `WellKnownLabels`).
pub fn is_well_known_label(key: &str) -> bool {
    WELL_KNOWN_LABELS.contains(&key)
}

/// Whether Karpenter must not inject `key` onto a node itself: well-known labels (set from the
/// instance type) and keys in restricted domains (core `IsRestrictedNodeLabel`).
pub fn is_restricted_node_label(key: &str) -> bool {
    if is_well_known_label(key) {
        return true;
    }
    let domain = label_domain(key);
    if LABEL_DOMAIN_EXCEPTIONS.iter().any(|exception| domain.ends_with(exception)) {
        return false;
    }
    if RESTRICTED_LABEL_DOMAINS.iter().any(|restricted| domain.ends_with(restricted)) {
        return true;
    }
    RESTRICTED_LABELS.contains(&key)
}

/// Why a user may not use `key` in a NodePool's labels or requirements, or `None` when allowed
/// (core `IsRestrictedLabel`, which the NodePool `ValidationSucceeded` condition runs).
pub fn restricted_label_reason(key: &str) -> Option<String> {
    if is_well_known_label(key) || !is_restricted_node_label(key) {
        return None;
    }
    Some(format!(
        "label {key} is restricted; specify a well known label: [{}], or a custom label that does \
         not use a restricted domain: [{}]",
        sorted_join(&WELL_KNOWN_LABELS),
        sorted_join(&RESTRICTED_LABEL_DOMAINS),
    ))
}

/// Whether `key` is an ephemeral taint that initialization waits to disappear (core
/// `pkg/scheduling/taints.go` KnownEphemeralTaints plus the unregistered taint).
pub fn is_known_ephemeral_taint(key: &str, effect: &str) -> bool {
    match key {
        NODE_NOT_READY_TAINT_KEY => effect == TAINT_EFFECT_NO_SCHEDULE || effect == TAINT_EFFECT_NO_EXECUTE,
        NODE_UNREACHABLE_TAINT_KEY => effect == TAINT_EFFECT_NO_SCHEDULE,
        NODE_UNINITIALIZED_TAINT_KEY => effect == TAINT_EFFECT_NO_SCHEDULE,
        UNREGISTERED_TAINT_KEY => effect == UNREGISTERED_TAINT_EFFECT,
        _ => key.starts_with(READINESS_TAINT_PREFIX),
    }
}

fn sorted_join(items: &[&str]) -> String {
    let mut sorted = items.to_vec();
    sorted.sort_unstable();
    sorted.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_labels_are_allowed_even_in_restricted_domains() {
        for key in WELL_KNOWN_LABELS {
            assert_eq!(restricted_label_reason(key), None, "{key}");
        }
    }

    #[test]
    fn kubernetes_io_and_karpenter_domains_are_restricted() {
        for key in [
            "kubernetes.io/hostname",
            "kubernetes.io/foo",
            "beta.kubernetes.io/arch",
            "k8s.io/foo",
            "sub.k8s.io/foo",
            "karpenter.sh/foo",
            "karpenter.k8s.aws/foo",
        ] {
            let reason = restricted_label_reason(key).unwrap_or_default();
            assert!(reason.starts_with(&format!("label {key} is restricted")), "{key}: {reason}");
        }
    }

    #[test]
    fn exception_domains_and_custom_domains_are_allowed() {
        for key in [
            "node.kubernetes.io/custom",
            "node-restriction.kubernetes.io/team",
            "kops.k8s.io/instancegroup",
            "example.com/team",
            "team",
        ] {
            assert_eq!(restricted_label_reason(key), None, "{key}");
        }
    }

    #[test]
    fn aliases_normalize_to_stable_keys() {
        assert_eq!(normalize_label("beta.kubernetes.io/arch"), ARCH_LABEL);
        assert_eq!(normalize_label("failure-domain.beta.kubernetes.io/zone"), TOPOLOGY_ZONE_LABEL);
        assert_eq!(normalize_label("example.com/x"), "example.com/x");
    }

    #[test]
    fn ephemeral_taints_match_karpenter() {
        assert!(is_known_ephemeral_taint(NODE_NOT_READY_TAINT_KEY, "NoExecute"));
        assert!(is_known_ephemeral_taint(UNREGISTERED_TAINT_KEY, "NoExecute"));
        assert!(is_known_ephemeral_taint("readiness.k8s.io/network", "NoSchedule"));
        assert!(!is_known_ephemeral_taint("example.com/x", "NoSchedule"));
    }
}
