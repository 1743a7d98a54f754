//! `status` of an EC2NodeClass: what its selectors resolved to, and its conditions.

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::selectors::InstanceMatchCriteria;
use crate::apis::condition::Condition;

/// `status` of an EC2NodeClass: what the selectors resolved to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EC2NodeClassStatus {
    /// Resolved subnets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<Vec<Subnet>>,
    /// Resolved security groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_groups: Option<Vec<SecurityGroup>>,
    /// Resolved capacity reservations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_reservations: Option<Vec<CapacityReservation>>,
    /// Resolved AMIs with the instance-type requirements each serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amis: Option<Vec<AMI>>,
    /// Resolved instance profile name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_profile: Option<String>,
    /// SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady, ..., Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// A resolved subnet.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subnet {
    /// Subnet ID.
    pub id: String,
    /// Availability zone name.
    pub zone: String,
    /// Availability zone ID.
    #[serde(default, rename = "zoneID", skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
}

/// A resolved security group.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroup {
    /// Security group ID.
    pub id: String,
    /// Security group name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A resolved AMI.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AMI {
    /// AMI ID.
    pub id: String,
    /// Whether the AMI is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<bool>,
    /// AMI name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Instance-type requirements this AMI serves (architecture, GPU, ...).
    pub requirements: Vec<NodeSelectorRequirement>,
}

/// A resolved capacity reservation.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapacityReservation {
    /// Availability zone of the reservation.
    pub availability_zone: String,
    /// When the reservation ends, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Time>,
    /// Reservation ID.
    pub id: String,
    /// Match criteria.
    pub instance_match_criteria: InstanceMatchCriteria,
    /// Instance type reserved.
    pub instance_type: String,
    /// Whether the reservation is interruptible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interruptible: Option<bool>,
    /// Owning account ID.
    #[serde(rename = "ownerID")]
    pub owner_id: String,
    /// `default` or `capacity-block` (CRD default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_type: Option<CapacityReservationType>,
    /// `active` or `expiring` (CRD default `active`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<CapacityReservationState>,
}

/// Type of a capacity reservation.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum CapacityReservationType {
    /// An on-demand capacity reservation (ODCR).
    #[serde(rename = "default")]
    Default,
    /// An EC2 capacity block for ML.
    #[serde(rename = "capacity-block")]
    CapacityBlock,
}

/// State of a capacity reservation.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CapacityReservationState {
    /// Usable.
    Active,
    /// Within the reclaim window (capacity blocks only).
    Expiring,
}
