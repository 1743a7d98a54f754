//! CreateFleet `instant`: choosing overrides by allocation strategy, partial success and
//! per-override errors, and ClientToken idempotency.
//!
//! Allocation, one unit of capacity at a time:
//! - on-demand `lowest-price`: cheapest on-demand override first (`prioritized`: by Priority);
//! - spot `price-capacity-optimized`: among the pools with the most free capacity (at least
//!   half the deepest candidate pool's free slots) take the lowest current spot price;
//!   ties are broken with the seeded RNG. `capacity-optimized` ignores price,
//!   `lowest-price` ignores capacity, `capacity-optimized-prioritized` uses Priority
//!   among the deep pools.
//!
//! A failed override gets one `errorSet` entry per error code and is not tried again in the
//! same call; the fleet returns whatever it launched plus the errors, with HTTP 200, as
//! EC2 does for `instant` fleets. Karpenter's ICE cache is fed from those errors.

use std::collections::BTreeSet;

use rand::Rng;

use crate::capacity::{CapacityType, PoolKey};
use crate::cloud::FakeCloud;
use crate::cloud::launch::Placement;
use crate::cloud::launch_template::LaunchTemplateRef;
use crate::error::{ApiError, ApiResult};
use crate::tags::Tags;

/// One `Overrides.N` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetOverride {
    /// `InstanceType`.
    pub instance_type: Option<String>,
    /// `SubnetId`.
    pub subnet_id: Option<String>,
    /// `AvailabilityZone`.
    pub availability_zone: Option<String>,
    /// `ImageId`.
    pub image_id: Option<String>,
    /// `Priority` (lower is preferred).
    pub priority: Option<f64>,
    /// `MaxPrice` (USD/hour).
    pub max_price: Option<f64>,
    /// `WeightedCapacity` (echoed only; every instance counts as one unit).
    pub weighted_capacity: Option<f64>,
}

/// One `LaunchTemplateConfigs.N`.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetLaunchTemplateConfig {
    /// The template, by id or name.
    pub template: LaunchTemplateRef,
    /// `Version` as sent (echoed).
    pub version: Option<String>,
    /// The overrides.
    pub overrides: Vec<FleetOverride>,
}

/// What CreateFleet receives.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateFleetRequest {
    /// `LaunchTemplateConfigs`.
    pub configs: Vec<FleetLaunchTemplateConfig>,
    /// `TargetCapacitySpecification.TotalTargetCapacity`.
    pub total_target_capacity: u32,
    /// `TargetCapacitySpecification.DefaultTargetCapacityType`.
    pub default_capacity_type: CapacityType,
    /// `TargetCapacitySpecification.OnDemandTargetCapacity`.
    pub on_demand_target: Option<u32>,
    /// `TargetCapacitySpecification.SpotTargetCapacity`.
    pub spot_target: Option<u32>,
    /// `SpotOptions.AllocationStrategy`.
    pub spot_allocation_strategy: Option<String>,
    /// `OnDemandOptions.AllocationStrategy`.
    pub on_demand_allocation_strategy: Option<String>,
    /// `Type`; only `instant` is modelled.
    pub fleet_type: String,
    /// `ClientToken`.
    pub client_token: Option<String>,
    /// Tags by `TagSpecification.N.ResourceType` (`instance`, `volume`, `fleet`).
    pub tags: std::collections::BTreeMap<String, Tags>,
    /// `Context`.
    pub context: Option<String>,
}

/// Launched instances of one override.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetInstances {
    /// Index into `configs`.
    pub config_index: usize,
    /// The template as referenced.
    pub template: LaunchTemplateRef,
    /// Template id (resolved).
    pub template_id: String,
    /// Template name (resolved).
    pub template_name: String,
    /// Version as sent.
    pub version: Option<String>,
    /// The override, echoed.
    pub overrides: FleetOverride,
    /// `spot` or `on-demand`.
    pub lifecycle: CapacityType,
    /// Instance type.
    pub instance_type: String,
    /// Ids launched.
    pub instance_ids: Vec<String>,
}

/// One `errorSet` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetError {
    /// Template id (resolved).
    pub template_id: String,
    /// Template name (resolved).
    pub template_name: String,
    /// Version as sent.
    pub version: Option<String>,
    /// The override, echoed.
    pub overrides: FleetOverride,
    /// `spot` or `on-demand`.
    pub lifecycle: CapacityType,
    /// e.g. `InsufficientInstanceCapacity`.
    pub code: String,
    /// Message.
    pub message: String,
}

/// What CreateFleet returns.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateFleetOutput {
    /// `fleet-…`
    pub fleet_id: String,
    /// Launched instances grouped by override.
    pub instances: Vec<FleetInstances>,
    /// Failures per override.
    pub errors: Vec<FleetError>,
}

impl CreateFleetOutput {
    /// Every launched instance id, in launch order within each group.
    pub fn instance_ids(&self) -> Vec<String> {
        self.instances.iter().flat_map(|g| g.instance_ids.iter().cloned()).collect()
    }
}

/// An override resolved to a concrete placement candidate.
#[derive(Debug, Clone)]
struct Candidate {
    config_index: usize,
    override_index: usize,
    template_id: String,
    template_name: String,
    instance_type: String,
    zone: String,
    subnet_id: String,
    image_id: String,
    priority: f64,
    max_price: Option<f64>,
    security_group_ids: Vec<String>,
    instance_tags: Tags,
    /// The capacity reservation the launch template targets, if any.
    capacity_reservation_id: Option<String>,
}

impl FakeCloud {
    /// CreateFleet. See the module docs for the allocation rules.
    ///
    /// # Errors
    /// API errors only for a malformed request, a missing launch template
    /// (`InvalidLaunchTemplateName.NotFoundException` / `InvalidLaunchTemplateId.NotFound`,
    /// which Karpenter recovers from) or a reused ClientToken with other parameters;
    /// capacity failures are reported in [`CreateFleetOutput::errors`].
    pub fn create_fleet(&mut self, req: &CreateFleetRequest) -> ApiResult<CreateFleetOutput> {
        let fingerprint = req.client_token.as_ref().map(|t| format!("{req:?}").replace(t.as_str(), ""));
        if let (Some(token), Some(fp)) = (&req.client_token, &fingerprint)
            && let Some((seen, out)) = self.fleet_tokens.get(token)
        {
            if seen != fp {
                return Err(ApiError::client(
                    "IdempotentParameterMismatch",
                    "The client token you have provided is associated with a resource that is already deleted or has different parameters.",
                ));
            }
            return Ok(out.clone());
        }
        if req.fleet_type != "instant" {
            return Err(ApiError::invalid_parameter(format!(
                "The fake cloud models only instant fleets, not '{}'.",
                req.fleet_type
            )));
        }
        if req.configs.is_empty() {
            return Err(ApiError::missing_parameter("LaunchTemplateConfigs"));
        }
        if req.total_target_capacity == 0 {
            return Err(ApiError::invalid_parameter("TotalTargetCapacity must be at least 1."));
        }
        let (candidates, mut errors) = self.fleet_candidates(req)?;
        self.fleet_count += 1;
        let fleet_id = format!("fleet-{}", self.ids.uuid());
        self.fleet_targets.insert(fleet_id.clone(), req.total_target_capacity);
        let reservation_id = self.ids.long("r");
        let (spot_units, od_units) = split_target(req);
        let mut out = CreateFleetOutput { fleet_id: fleet_id.clone(), instances: Vec::new(), errors: Vec::new() };
        for (capacity_type, units) in [(CapacityType::Spot, spot_units), (CapacityType::OnDemand, od_units)] {
            let mut viable: Vec<Candidate> = candidates.clone();
            let mut failed: BTreeSet<(usize, usize, String)> = BTreeSet::new();
            let mut launched = 0;
            // Bounded: each iteration launches one unit or removes one candidate.
            while launched < units && !viable.is_empty() {
                let pick = self.rank(req, capacity_type, &viable);
                let c = viable[pick].clone();
                if let Some(limit) = c.max_price.filter(|_| capacity_type == CapacityType::Spot) {
                    let price = self.spot_price(&c.instance_type, &c.zone, self.now).unwrap_or(f64::INFINITY);
                    if price > limit {
                        viable.remove(pick);
                        errors.push(self.fleet_error(req, &c, capacity_type, "SpotMaxPriceTooLow", format!("Your Spot request price of {limit} is lower than the minimum required Spot request fulfillment price of {price}.")));
                        continue;
                    }
                }
                let placement = Placement {
                    instance_type: c.instance_type.clone(),
                    subnet_id: c.subnet_id.clone(),
                    image_id: c.image_id.clone(),
                    capacity_type,
                    tags: merged_tags(&c.instance_tags, req.tags.get("instance")),
                    security_group_ids: c.security_group_ids.clone(),
                    launch_template_id: Some(c.template_id.clone()),
                    fleet_id: Some(fleet_id.clone()),
                    reservation_id: reservation_id.clone(),
                    capacity_reservation_id: c.capacity_reservation_id.clone(),
                };
                match self.launch_one(&placement) {
                    Ok(id) => {
                        launched += 1;
                        if self.faults.duplicate_launches {
                            // The twin is a fault's side effect; whether it launched does
                            // not change the answer.
                            let _ = self.launch_one(&placement);
                        }
                        push_instance(&mut out, req, &c, capacity_type, id);
                    }
                    Err(e) => {
                        viable.remove(pick);
                        if failed.insert((c.config_index, c.override_index, e.code.clone())) {
                            errors.push(self.fleet_error(req, &c, capacity_type, &e.code, e.message));
                        }
                    }
                }
            }
            if launched < units && candidates.is_empty() {
                errors.push(FleetError {
                    template_id: String::new(),
                    template_name: String::new(),
                    version: None,
                    overrides: FleetOverride::default(),
                    lifecycle: capacity_type,
                    code: "UnfulfillableCapacity".into(),
                    message: "Unable to fulfill capacity due to your request configuration. Please adjust your request and try again.".into(),
                });
            }
        }
        out.errors = errors;
        if let (Some(token), Some(fp)) = (&req.client_token, fingerprint) {
            self.fleet_tokens.insert(token.clone(), (fp, out.clone()));
        }
        Ok(out)
    }

    /// Resolves every override to a placement candidate; overrides that cannot be placed at
    /// all (unknown type or subnet, no image) become errors right away.
    fn fleet_candidates(&mut self, req: &CreateFleetRequest) -> ApiResult<(Vec<Candidate>, Vec<FleetError>)> {
        let mut candidates = Vec::new();
        let mut errors = Vec::new();
        for (ci, config) in req.configs.iter().enumerate() {
            let template = self.resolve_launch_template(&config.template)?.clone();
            let overrides =
                if config.overrides.is_empty() { vec![FleetOverride::default()] } else { config.overrides.clone() };
            for (oi, o) in overrides.iter().enumerate() {
                let instance_type = o.instance_type.clone().or_else(|| template.instance_type.clone());
                let subnet_id = match (&o.subnet_id, &o.availability_zone) {
                    (Some(s), _) => Some(s.clone()),
                    (None, zone) => self.best_subnet(zone.as_deref()),
                };
                let zone = subnet_id.as_deref().and_then(|s| self.zone_of_subnet(s));
                let image_id = o.image_id.clone().or_else(|| template.image_id.clone());
                let problem = match (&instance_type, &zone, &image_id) {
                    (None, _, _) => Some((
                        "InvalidParameterValue",
                        "No instance type in the override or the launch template.".to_string(),
                    )),
                    (Some(t), _, _) if self.catalog.get(t).is_none() => {
                        Some(("InvalidParameterValue", format!("The instance type '{t}' does not exist.")))
                    }
                    (_, None, _) => Some((
                        "InvalidSubnetID.NotFound",
                        format!("The subnet ID '{}' does not exist", o.subnet_id.clone().unwrap_or_default()),
                    )),
                    (_, _, None) => Some((
                        "InvalidParameterValue",
                        "No image id in the override or the launch template.".to_string(),
                    )),
                    (_, _, Some(ami)) if !self.images.images.contains_key(ami) => {
                        Some(("InvalidAMIID.NotFound", format!("The image id '[{ami}]' does not exist")))
                    }
                    _ => None,
                };
                if let Some((code, message)) = problem {
                    errors.push(FleetError {
                        template_id: template.id.clone(),
                        template_name: template.name.clone(),
                        version: config.version.clone(),
                        overrides: o.clone(),
                        lifecycle: req.default_capacity_type,
                        code: code.into(),
                        message,
                    });
                    continue;
                }
                candidates.push(Candidate {
                    config_index: ci,
                    override_index: oi,
                    template_id: template.id.clone(),
                    template_name: template.name.clone(),
                    instance_type: instance_type.expect("checked above"),
                    zone: zone.expect("checked above"),
                    subnet_id: subnet_id.expect("checked above"),
                    image_id: image_id.expect("checked above"),
                    priority: o.priority.unwrap_or(f64::MAX),
                    max_price: o.max_price,
                    security_group_ids: template.security_group_ids.clone(),
                    instance_tags: template.instance_tags.clone(),
                    capacity_reservation_id: template.data.get(super::launch::TARGET_KEY).cloned(),
                });
            }
        }
        Ok((candidates, errors))
    }

    /// Index of the candidate to try next under the request's allocation strategy.
    fn rank(&mut self, req: &CreateFleetRequest, capacity_type: CapacityType, viable: &[Candidate]) -> usize {
        let now = self.now;
        let price = |cloud: &FakeCloud, c: &Candidate| -> f64 {
            let info = cloud.catalog.get(&c.instance_type);
            match capacity_type {
                CapacityType::OnDemand => info.and_then(|i| i.on_demand_price),
                CapacityType::Spot => info.and_then(|i| cloud.market.price(i, &c.zone, now)),
            }
            .unwrap_or(f64::INFINITY)
        };
        let order = |a: f64, b: f64| a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal);
        if capacity_type == CapacityType::OnDemand {
            let prioritized = req.on_demand_allocation_strategy.as_deref() == Some("prioritized");
            return (0..viable.len())
                .min_by(|&a, &b| {
                    let (ca, cb) = (&viable[a], &viable[b]);
                    let primary = if prioritized {
                        order(ca.priority, cb.priority).then(order(price(self, ca), price(self, cb)))
                    } else {
                        order(price(self, ca), price(self, cb)).then(order(ca.priority, cb.priority))
                    };
                    primary.then(a.cmp(&b))
                })
                .unwrap_or(0);
        }
        let strategy = req.spot_allocation_strategy.as_deref().unwrap_or("price-capacity-optimized");
        let free: Vec<u32> = viable
            .iter()
            .map(|c| {
                let vcpu = self.catalog.get(&c.instance_type).map_or(2, |t| t.vcpu);
                self.pools.free(&PoolKey::new(&c.instance_type, &c.zone, CapacityType::Spot), vcpu, now)
            })
            .collect();
        let deepest = free.iter().copied().max().unwrap_or(0);
        let deep: Vec<usize> = match strategy {
            "lowest-price" => (0..viable.len()).collect(),
            "capacity-optimized" => (0..viable.len()).filter(|&i| free[i] == deepest).collect(),
            _ => (0..viable.len()).filter(|&i| free[i] >= deepest.div_ceil(2)).collect(),
        };
        let key = |i: usize| -> (f64, f64) {
            match strategy {
                "capacity-optimized-prioritized" => (viable[i].priority, 0.0),
                "capacity-optimized" => (0.0, 0.0),
                _ => (price(self, &viable[i]), 0.0),
            }
        };
        let best = deep
            .iter()
            .map(|&i| key(i))
            .fold((f64::INFINITY, 0.0), |acc, k| if order(k.0, acc.0).is_lt() { k } else { acc });
        let ties: Vec<usize> = deep.into_iter().filter(|&i| key(i).0 == best.0).collect();
        match ties.len() {
            0 => 0,
            1 => ties[0],
            n => ties[self.rng_fleet.random_range(0..n)],
        }
    }

    fn fleet_error(
        &self,
        req: &CreateFleetRequest,
        c: &Candidate,
        lifecycle: CapacityType,
        code: &str,
        message: String,
    ) -> FleetError {
        let config = &req.configs[c.config_index];
        FleetError {
            template_id: c.template_id.clone(),
            template_name: c.template_name.clone(),
            version: config.version.clone(),
            overrides: config.overrides.get(c.override_index).cloned().unwrap_or_default(),
            lifecycle,
            code: code.to_string(),
            message,
        }
    }
}

fn split_target(req: &CreateFleetRequest) -> (u32, u32) {
    let total = req.total_target_capacity;
    match (req.spot_target, req.on_demand_target, req.default_capacity_type) {
        (Some(s), Some(o), _) => (s.min(total), o.min(total - s.min(total))),
        (Some(s), None, _) => (s.min(total), total - s.min(total)),
        (None, Some(o), _) => (total - o.min(total), o.min(total)),
        (None, None, CapacityType::Spot) => (total, 0),
        (None, None, CapacityType::OnDemand) => (0, total),
    }
}

fn merged_tags(template: &Tags, request: Option<&Tags>) -> Tags {
    let mut tags = template.clone();
    if let Some(r) = request {
        tags.extend(r.clone());
    }
    tags
}

fn push_instance(
    out: &mut CreateFleetOutput,
    req: &CreateFleetRequest,
    c: &Candidate,
    lifecycle: CapacityType,
    id: String,
) {
    if let Some(group) = out.instances.iter_mut().find(|g| {
        g.config_index == c.config_index
            && g.lifecycle == lifecycle
            && g.instance_type == c.instance_type
            && g.overrides == req.configs[c.config_index].overrides.get(c.override_index).cloned().unwrap_or_default()
    }) {
        group.instance_ids.push(id);
        return;
    }
    let config = &req.configs[c.config_index];
    out.instances.push(FleetInstances {
        config_index: c.config_index,
        template: config.template.clone(),
        template_id: c.template_id.clone(),
        template_name: c.template_name.clone(),
        version: config.version.clone(),
        overrides: config.overrides.get(c.override_index).cloned().unwrap_or_default(),
        lifecycle,
        instance_type: c.instance_type.clone(),
        instance_ids: vec![id],
    });
}
