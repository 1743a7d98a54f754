//! Launch template settings of an EC2NodeClass: block devices, instance store, IMDS, connection
//! tracking, CPU options and network interfaces.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One block device mapping of the launch template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceMapping {
    /// Device name, e.g. `/dev/xvda`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    /// The EBS volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ebs: Option<BlockDevice>,
    /// Whether this is the root volume (its size feeds ephemeral-storage capacity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_volume: Option<bool>,
}

/// An EBS volume.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockDevice {
    /// Whether the volume is deleted with the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_on_termination: Option<bool>,
    /// Whether the volume is encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    /// Provisioned IOPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops: Option<i64>,
    /// KMS key for encryption.
    #[serde(default, rename = "kmsKeyID", skip_serializing_if = "Option::is_none")]
    pub kms_key_id: Option<String>,
    /// Snapshot to create the volume from.
    #[serde(default, rename = "snapshotID", skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// Throughput in MiB/s (gp3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<i64>,
    /// Snapshot initialization rate in MiB/s (100–300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_initialization_rate: Option<i32>,
    /// Size, e.g. `20Gi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_size: Option<Quantity>,
    /// Volume type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_type: Option<VolumeType>,
}

/// EBS volume type.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VolumeType {
    /// Magnetic.
    Standard,
    /// Provisioned IOPS SSD.
    Io1,
    /// Provisioned IOPS SSD, newer.
    Io2,
    /// General purpose SSD.
    Gp2,
    /// Cold HDD.
    Sc1,
    /// Throughput-optimized HDD.
    St1,
    /// General purpose SSD, newer.
    Gp3,
}

/// How instance-store volumes are used.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum InstanceStorePolicy {
    /// Stripe all NVMe instance stores into one RAID-0 array for ephemeral storage.
    RAID0,
}

/// `enabled` or `disabled`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EnabledDisabled {
    /// On.
    Enabled,
    /// Off.
    Disabled,
}

/// IMDSv2 token requirement.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HttpTokens {
    /// IMDSv2 only.
    Required,
    /// IMDSv1 allowed.
    Optional,
}

/// IMDS settings; the CRD defaults the whole object and each field.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetadataOptions {
    /// IMDS endpoint (default `enabled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_endpoint: Option<EnabledDisabled>,
    /// IMDS IPv6 endpoint (default `disabled`).
    #[serde(default, rename = "httpProtocolIPv6", skip_serializing_if = "Option::is_none")]
    pub http_protocol_ipv6: Option<EnabledDisabled>,
    /// PUT response hop limit, 1–64 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_put_response_hop_limit: Option<i64>,
    /// Token requirement (default `required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_tokens: Option<HttpTokens>,
}

impl MetadataOptions {
    /// The CRD default object.
    pub fn crd_default() -> Self {
        Self {
            http_endpoint: Some(EnabledDisabled::Enabled),
            http_protocol_ipv6: Some(EnabledDisabled::Disabled),
            http_put_response_hop_limit: Some(1),
            http_tokens: Some(HttpTokens::Required),
        }
    }

    /// Fills each absent field with its CRD default.
    pub(super) fn apply_defaults(&mut self) {
        let default = Self::crd_default();
        self.http_endpoint = self.http_endpoint.or(default.http_endpoint);
        self.http_protocol_ipv6 = self.http_protocol_ipv6.or(default.http_protocol_ipv6);
        self.http_put_response_hop_limit = self.http_put_response_hop_limit.or(default.http_put_response_hop_limit);
        self.http_tokens = self.http_tokens.or(default.http_tokens);
    }
}

/// Connection tracking timeouts (seconds).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionTracking {
    /// Established TCP timeout, 60–432000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_established_timeout: Option<i32>,
    /// UDP stream timeout, 60–180.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_stream_timeout: Option<i32>,
    /// UDP timeout, 30–60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_timeout: Option<i32>,
}

/// CPU options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CpuOptions {
    /// Nested virtualization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_virtualization: Option<EnabledDisabled>,
}

/// One network interface of the launch template.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterface {
    /// Network card index.
    pub network_card_index: i32,
    /// Device index on the card.
    pub device_index: i32,
    /// `interface` or `efa-only`.
    pub interface_type: InterfaceType,
}

/// Network interface type.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum InterfaceType {
    /// A regular ENI (optionally EFA-enabled).
    #[serde(rename = "interface")]
    Interface,
    /// An EFA-only interface.
    #[serde(rename = "efa-only")]
    EfaOnly,
}
