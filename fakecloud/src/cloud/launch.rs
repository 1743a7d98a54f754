//! Placing one instance, and RunInstances on top of it.
//!
//! Every launch path (CreateFleet, RunInstances) goes through [`FakeCloud::launch_one`],
//! which checks the constraints in the order EC2 surfaces them and names each failure with
//! the error code Karpenter keys on.

use rand::Rng;

use crate::capacity::{CapacityType, PoolKey};
use crate::cloud::launch_template::LaunchTemplateRef;
use crate::cloud::{FakeCloud, draw_between};
use crate::error::{ApiError, ApiResult};
use crate::events::CloudEvent;
use crate::instance::{Instance, InstanceState};
use crate::spot::SpotMarket;
use crate::tags::Tags;

/// The launch template data keys Karpenter targets a reservation with (aws
/// `launchtemplate/types.go` l. 153-165, v1.14.1), as the query protocol flattens them.
pub(crate) const TARGET_KEY: &str = "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId";

/// Where and what to launch, fully resolved.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    pub instance_type: String,
    pub subnet_id: String,
    pub image_id: String,
    pub capacity_type: CapacityType,
    pub tags: Tags,
    pub security_group_ids: Vec<String>,
    pub launch_template_id: Option<String>,
    pub fleet_id: Option<String>,
    pub reservation_id: String,
    /// The capacity reservation the launch template targets, if any.
    pub capacity_reservation_id: Option<String>,
}

/// What RunInstances receives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInstancesRequest {
    /// `ImageId` (or from the launch template).
    pub image_id: Option<String>,
    /// `InstanceType` (or from the launch template).
    pub instance_type: Option<String>,
    /// `MinCount`: fewer than this and the call fails with nothing launched.
    pub min_count: u32,
    /// `MaxCount`.
    pub max_count: u32,
    /// `SubnetId`.
    pub subnet_id: Option<String>,
    /// `Placement.AvailabilityZone`.
    pub availability_zone: Option<String>,
    /// `LaunchTemplate.LaunchTemplateId|Name`.
    pub launch_template: Option<LaunchTemplateRef>,
    /// `InstanceMarketOptions.MarketType=spot`.
    pub spot: bool,
    /// Instance tags from `TagSpecification`.
    pub tags: Tags,
    /// `SecurityGroupId.N`.
    pub security_group_ids: Vec<String>,
    /// `ClientToken`.
    pub client_token: Option<String>,
}

/// What RunInstances returns.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInstancesOutput {
    /// `r-…`
    pub reservation_id: String,
    /// The instances launched, in launch order.
    pub instance_ids: Vec<String>,
}

impl FakeCloud {
    pub(crate) fn zone_of_subnet(&self, subnet_id: &str) -> Option<String> {
        self.network.subnets.get(subnet_id).map(|s| s.zone.clone())
    }

    /// The subnet in `zone` with the most free addresses (ties: lowest id).
    pub(crate) fn best_subnet(&self, zone: Option<&str>) -> Option<String> {
        self.network
            .subnets
            .values()
            .filter(|s| zone.is_none_or(|z| s.zone == z))
            .max_by(|a, b| a.free_ips.cmp(&b.free_ips).then(b.id.cmp(&a.id)))
            .map(|s| s.id.clone())
    }

    /// Launches one instance or names why not. Checks, in order: zone outage, the type's
    /// usage classes and zone offering, the vCPU quota, subnet addresses, then the pool.
    pub(crate) fn launch_one(&mut self, p: &Placement) -> ApiResult<String> {
        let now = self.now;
        let zone = self.zone_of_subnet(&p.subnet_id).ok_or_else(|| {
            ApiError::client("InvalidSubnetID.NotFound", format!("The subnet ID '{}' does not exist", p.subnet_id))
        })?;
        let info = self.catalog.get(&p.instance_type).cloned().ok_or_else(|| {
            ApiError::invalid_parameter(format!("The instance type '{}' does not exist", p.instance_type))
        })?;
        if self.zone_outages.contains(&zone) {
            return Err(ice(&p.instance_type, &zone));
        }
        if let Some(cr) = &p.capacity_reservation_id {
            self.check_reservation(cr, &p.instance_type, &zone)?;
        }
        if !info.supports(p.capacity_type.as_str()) || !self.catalog.is_offered(&p.instance_type, &zone) {
            return Err(ApiError::client(
                "Unsupported",
                format!(
                    "Your requested instance type ({}) is not supported in your requested Availability Zone ({zone}).",
                    p.instance_type
                ),
            ));
        }
        let used = self.vcpu_in_use.get(&p.capacity_type).copied().unwrap_or(0);
        match p.capacity_type {
            CapacityType::OnDemand if used + info.vcpu > self.config.vcpu_quota_on_demand => {
                return Err(ApiError::client(
                    "VcpuLimitExceeded",
                    format!(
                        "You have requested more vCPU capacity than your current vCPU limit of {} allows for the instance bucket that the specified instance type belongs to.",
                        self.config.vcpu_quota_on_demand
                    ),
                ));
            }
            CapacityType::Spot if used + info.vcpu > self.config.vcpu_quota_spot => {
                return Err(ApiError::client("MaxSpotInstanceCountExceeded", "Max spot instance count exceeded"));
            }
            _ => {}
        }
        if self.network.subnets.get(&p.subnet_id).is_none_or(|s| s.free_ips == 0) {
            return Err(ApiError::client(
                "InsufficientFreeAddressesInSubnet",
                format!(
                    "There are not enough free addresses in subnet '{}' to satisfy the requested number of instances.",
                    p.subnet_id
                ),
            ));
        }
        let key = PoolKey::new(&p.instance_type, &zone, p.capacity_type);
        // Reserved capacity is held for the account: the shared pool is not consulted.
        if p.capacity_reservation_id.is_none() && !self.pools.take(&key, info.vcpu, now) {
            return Err(ice(&p.instance_type, &zone));
        }
        *self.vcpu_in_use.entry(p.capacity_type).or_default() += info.vcpu;
        let subnet = self.network.subnets.get_mut(&p.subnet_id).expect("checked above");
        subnet.free_ips -= 1;
        let private_ip = subnet.allocate_ip();
        let (vpc_id, zone_id) = (subnet.vpc_id.clone(), subnet.zone_id.clone());

        let id = self.ids.long("i");
        let (lo, hi) = self.config.launch_delay;
        let delay = draw_between(&mut self.rng_launch, lo, hi);
        let stuck_draw: f64 = self.rng_launch.random();
        let stuck = stuck_draw < self.faults.stuck_pending_rate;
        let instance = Instance {
            id: id.clone(),
            instance_type: p.instance_type.clone(),
            zone: zone.clone(),
            zone_id,
            subnet_id: p.subnet_id.clone(),
            vpc_id,
            image_id: p.image_id.clone(),
            architecture: info
                .ec2_architectures
                .iter()
                .find(|a| *a != "i386")
                .cloned()
                .unwrap_or_else(|| "x86_64".into()),
            capacity_type: p.capacity_type,
            state: InstanceState::Pending,
            state_since: now,
            launch_time: now,
            running_at: None,
            billing_end: None,
            private_ip,
            reservation_id: p.reservation_id.clone(),
            launch_template_id: p.launch_template_id.clone(),
            fleet_id: p.fleet_id.clone(),
            security_group_ids: p.security_group_ids.clone(),
            tags: p.tags.clone(),
            state_reason: None,
            reclaim_at: None,
            stuck_pending: stuck,
            status_checks: Default::default(),
            scheduled_events: Vec::new(),
            capacity_reservation_id: p.capacity_reservation_id.clone(),
        };
        self.instances.insert(id.clone(), instance);
        if let Some(cr) = &p.capacity_reservation_id {
            self.take_reservation(cr, &id);
        }
        self.publish_state(&id, InstanceState::Pending);
        if !stuck {
            self.events.schedule(now + delay, CloudEvent::LaunchComplete(id.clone()));
        }
        if p.capacity_type == CapacityType::Spot {
            self.schedule_hazard(&id, &info);
        }
        Ok(id)
    }

    /// Draws when a new spot instance will be interrupted (and whether a rebalance
    /// recommendation precedes it). Always three draws, so the stream stays aligned.
    fn schedule_hazard(&mut self, id: &str, info: &crate::catalog::InstanceTypeInfo) {
        let u: f64 = self.rng_spot.random();
        let with_rebalance = self.rng_spot.random::<f64>() < self.config.rebalance_probability;
        let (lo, hi) = self.config.rebalance_lead;
        let lead = draw_between(&mut self.rng_spot, lo, hi);
        let Some(after) = SpotMarket::time_to_interruption(info, self.config.spot_hazard_multiplier, u) else {
            return;
        };
        let warn_at = self.now + after;
        if with_rebalance && warn_at > self.now + lead {
            self.events.schedule(warn_at - lead, CloudEvent::Rebalance(id.to_string()));
        }
        self.events.schedule(warn_at, CloudEvent::SpotWarning(id.to_string()));
    }

    /// Undoes a launch that must not stand (RunInstances below MinCount).
    fn unlaunch(&mut self, id: &str) {
        let Some(instance) = self.instances.remove(id) else {
            return;
        };
        let vcpu = self.catalog.get(&instance.instance_type).map_or(0, |t| t.vcpu);
        if let Some(cr) = &instance.capacity_reservation_id
            && let Some(r) = self.reservations.get_mut(cr)
            && r.instances.remove(id)
        {
            r.available = (r.available + 1).min(r.total);
        } else {
            self.pools.give_back(
                &PoolKey::new(&instance.instance_type, &instance.zone, instance.capacity_type),
                vcpu,
                self.now,
            );
        }
        if let Some(used) = self.vcpu_in_use.get_mut(&instance.capacity_type) {
            *used = used.saturating_sub(vcpu);
        }
        if let Some(s) = self.network.subnets.get_mut(&instance.subnet_id) {
            s.free_ips += 1;
        }
    }

    /// RunInstances: launches between `min_count` and `max_count` identical instances, or
    /// fails with the first launch error (ICE is an API error here, unlike CreateFleet).
    pub fn run_instances(&mut self, req: &RunInstancesRequest) -> ApiResult<RunInstancesOutput> {
        if let Some(token) = &req.client_token {
            let fingerprint = format!("{req:?}").replace(token.as_str(), "");
            if let Some((fp, out)) = self.run_tokens.get(token) {
                if *fp != fingerprint {
                    return Err(ApiError::client(
                        "IdempotentParameterMismatch",
                        "Client token reused with different parameters.",
                    ));
                }
                return Ok(out.clone());
            }
        }
        if req.min_count == 0 || req.max_count < req.min_count {
            return Err(ApiError::invalid_parameter("MinCount must be at least 1 and at most MaxCount."));
        }
        let template = match &req.launch_template {
            Some(r) => Some(self.resolve_launch_template(r)?.clone()),
            None => None,
        };
        let instance_type = req
            .instance_type
            .clone()
            .or_else(|| template.as_ref().and_then(|t| t.instance_type.clone()))
            .unwrap_or_else(|| "m1.small".into());
        let image_id = req
            .image_id
            .clone()
            .or_else(|| template.as_ref().and_then(|t| t.image_id.clone()))
            .ok_or_else(|| ApiError::missing_parameter("ImageId"))?;
        if !self.images.images.contains_key(&image_id) {
            return Err(ApiError::client(
                "InvalidAMIID.NotFound",
                format!("The image id '[{image_id}]' does not exist"),
            ));
        }
        let subnet_id = match &req.subnet_id {
            Some(s) => s.clone(),
            None => self
                .best_subnet(req.availability_zone.as_deref())
                .ok_or_else(|| ApiError::client("InvalidParameterValue", "No subnet in the requested zone"))?,
        };
        let mut tags = template.as_ref().map(|t| t.instance_tags.clone()).unwrap_or_default();
        tags.extend(req.tags.clone());
        let mut security_group_ids = req.security_group_ids.clone();
        if security_group_ids.is_empty() {
            security_group_ids = template.as_ref().map(|t| t.security_group_ids.clone()).unwrap_or_default();
        }
        let placement = Placement {
            instance_type,
            subnet_id,
            image_id,
            capacity_type: if req.spot { CapacityType::Spot } else { CapacityType::OnDemand },
            tags,
            security_group_ids,
            launch_template_id: template.as_ref().map(|t| t.id.clone()),
            fleet_id: None,
            reservation_id: self.ids.long("r"),
            capacity_reservation_id: template.as_ref().and_then(|t| t.data.get(TARGET_KEY).cloned()),
        };
        let mut launched = Vec::new();
        for _ in 0..req.max_count {
            match self.launch_one(&placement) {
                Ok(id) => launched.push(id),
                Err(e) if launched.len() < req.min_count as usize => {
                    for id in &launched {
                        self.unlaunch(id);
                    }
                    // EC2 classifies ICE as a server error (HTTP 500), which SDKs retry.
                    let status = if e.code == "InsufficientInstanceCapacity" { 500 } else { e.status };
                    return Err(ApiError { status, ..e });
                }
                Err(_) => break,
            }
        }
        let out = RunInstancesOutput { reservation_id: placement.reservation_id, instance_ids: launched };
        if let Some(token) = &req.client_token {
            let fingerprint = format!("{req:?}").replace(token.as_str(), "");
            self.run_tokens.insert(token.clone(), (fingerprint, out.clone()));
        }
        Ok(out)
    }
}

/// EC2's insufficient-capacity error for one offering.
pub(crate) fn ice(instance_type: &str, zone: &str) -> ApiError {
    ApiError::client(
        "InsufficientInstanceCapacity",
        format!(
            "We currently do not have sufficient {instance_type} capacity in the Availability Zone you requested ({zone}). Our system will be working on provisioning additional capacity."
        ),
    )
}
