//! The VPC, its subnets (each with a finite pool of free IPs) and security groups.

use std::collections::BTreeMap;

use crate::tags::{Filter, Tags};

/// A subnet in one zone. Launches take one address from `free_ips`; terminations return it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subnet {
    /// `subnet-…`
    pub id: String,
    /// `vpc-…`
    pub vpc_id: String,
    /// Zone name.
    pub zone: String,
    /// Zone id.
    pub zone_id: String,
    /// e.g. `10.0.0.0/20`.
    pub cidr: String,
    /// Free IPv4 addresses; `InsufficientFreeAddressesInSubnet` at zero.
    pub free_ips: u32,
    /// Tags (Karpenter discovers subnets by `karpenter.sh/discovery`).
    pub tags: Tags,
    /// Next host number handed out as a private IP.
    pub(crate) next_host: u32,
}

impl Subnet {
    /// Whether the subnet passes every filter (EC2 ANDs filters, ORs values).
    pub fn matches(&self, filters: &[Filter]) -> bool {
        filters.iter().all(|f| {
            f.match_tags(&self.tags).unwrap_or_else(|| match f.name.as_str() {
                "subnet-id" => f.matches(&self.id),
                "vpc-id" => f.matches(&self.vpc_id),
                "availability-zone" => f.matches(&self.zone),
                "availability-zone-id" => f.matches(&self.zone_id),
                "cidr-block" | "cidr" => f.matches(&self.cidr),
                "state" => f.matches("available"),
                _ => false,
            })
        })
    }

    /// A private IP for the next instance (10.x.y.z from the subnet's /20), deterministic.
    pub(crate) fn allocate_ip(&mut self) -> String {
        let base: Vec<u32> =
            self.cidr.split('/').next().unwrap_or("10.0.0.0").split('.').filter_map(|o| o.parse().ok()).collect();
        let host = self.next_host;
        self.next_host = if host >= 4090 { 4 } else { host + 1 };
        let third = base.get(2).copied().unwrap_or(0) + host / 256;
        format!(
            "{}.{}.{}.{}",
            base.first().copied().unwrap_or(10),
            base.get(1).copied().unwrap_or(0),
            third,
            host % 256
        )
    }
}

/// A security group.
#[derive(Debug, Clone, PartialEq)]
pub struct SecurityGroup {
    /// `sg-…`
    pub id: String,
    /// Group name.
    pub name: String,
    /// Description.
    pub description: String,
    /// `vpc-…`
    pub vpc_id: String,
    /// Tags.
    pub tags: Tags,
}

impl SecurityGroup {
    /// Whether the group passes every filter.
    pub fn matches(&self, filters: &[Filter]) -> bool {
        filters.iter().all(|f| {
            f.match_tags(&self.tags).unwrap_or_else(|| match f.name.as_str() {
                "group-id" => f.matches(&self.id),
                "group-name" => f.matches(&self.name),
                "vpc-id" => f.matches(&self.vpc_id),
                "description" => f.matches(&self.description),
                _ => false,
            })
        })
    }
}

/// The one VPC of the fake account.
#[derive(Debug, Clone, Default)]
pub struct Network {
    /// `vpc-…`
    pub vpc_id: String,
    /// Subnets by id.
    pub subnets: BTreeMap<String, Subnet>,
    /// Security groups by id.
    pub security_groups: BTreeMap<String, SecurityGroup>,
}
