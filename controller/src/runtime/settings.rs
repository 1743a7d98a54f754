//! Operator settings (Karpenter's `--flags` / environment variables). The binary fills them from
//! flags and env; the simulator builds them from a scenario. Defaults are Karpenter's.

use std::time::Duration;

use crate::scheduling::{MinValuesPolicy, PreferencePolicy};

/// Karpenter's feature gates (`--feature-gates`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    /// `SpotToSpotConsolidation` (default off).
    pub spot_to_spot_consolidation: bool,
    /// `NodeRepair` (default off).
    pub node_repair: bool,
    /// `ReservedCapacity` (default on since v1.6).
    pub reserved_capacity: bool,
    /// `NodeOverlay` (default off).
    pub node_overlay: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        Self { spot_to_spot_consolidation: false, node_repair: false, reserved_capacity: true, node_overlay: false }
    }
}

/// Everything configurable about one controller process.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `--cluster-name`: tags instances and scopes garbage collection.
    pub cluster_name: String,
    /// `--cluster-endpoint`: the API server address nodes join (user data).
    pub cluster_endpoint: String,
    /// Cluster CA bundle (base64) written into user data.
    pub cluster_ca_bundle: String,
    /// Kubernetes service CIDR's DNS IP for the kubelet (`--cluster-dns`), if known.
    pub cluster_dns: Option<String>,
    /// AWS region.
    pub region: String,
    /// `--interruption-queue`: the SQS queue name; empty disables interruption handling.
    pub interruption_queue: String,
    /// `--batch-idle-duration` (1 s).
    pub batch_idle_duration: Duration,
    /// `--batch-max-duration` (10 s).
    pub batch_max_duration: Duration,
    /// `--preference-policy`.
    pub preference_policy: PreferencePolicy,
    /// `--min-values-policy`.
    pub min_values_policy: MinValuesPolicy,
    /// `--vm-memory-overhead-percent` (0.075).
    pub vm_memory_overhead_percent: f64,
    /// `--reserved-enis` (0).
    pub reserved_enis: i64,
    /// `--isolated-vpc`: no Pricing API calls.
    pub isolated_vpc: bool,
    /// Feature gates.
    pub feature_gates: FeatureGates,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            cluster_name: String::new(),
            cluster_endpoint: String::new(),
            cluster_ca_bundle: String::new(),
            cluster_dns: None,
            region: "us-east-1".into(),
            interruption_queue: String::new(),
            batch_idle_duration: Duration::from_secs(1),
            batch_max_duration: Duration::from_secs(10),
            preference_policy: PreferencePolicy::Respect,
            min_values_policy: MinValuesPolicy::Strict,
            vm_memory_overhead_percent: crate::cloudprovider::types::VM_MEMORY_OVERHEAD_PERCENT,
            reserved_enis: 0,
            isolated_vpc: false,
            feature_gates: FeatureGates::default(),
        }
    }
}

impl Settings {
    /// The node nomination window: max(2 × batch max, 10 s) (core statenode.go).
    pub fn nomination_window(&self) -> Duration {
        (self.batch_max_duration * 2).max(Duration::from_secs(10))
    }
}
