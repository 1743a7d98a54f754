//! EC2 read and housekeeping operations: Describe*, TerminateInstances, CreateTags,
//! launch templates, spot price history and the SSM parameters behind AMI aliases.

use std::time::Duration;

use crate::capacity::CapacityType;
use crate::catalog::{InstanceTypeInfo, Zone};
use crate::cloud::FakeCloud;
use crate::cloud::launch_template::{LaunchTemplate, LaunchTemplateRef, LaunchTemplateSpec};
use crate::error::{ApiError, ApiResult};
use crate::images::Image;
use crate::instance::{Instance, InstanceState};
use crate::ledger::NODEPOOL_TAG;
use crate::network::{SecurityGroup, Subnet};
use crate::tags::{Filter, Tags};

/// A page of results and the token for the next one.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// Items on this page.
    pub items: Vec<T>,
    /// `NextToken`, if more remain.
    pub next_token: Option<String>,
}

/// One TerminateInstances result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChange {
    /// Instance id.
    pub instance_id: String,
    /// State before the call.
    pub previous: InstanceState,
    /// State after the call.
    pub current: InstanceState,
}

/// One DescribeSpotPriceHistory entry.
#[derive(Debug, Clone, PartialEq)]
pub struct SpotPricePoint {
    /// Instance type.
    pub instance_type: String,
    /// Zone name.
    pub zone: String,
    /// Zone id.
    pub zone_id: String,
    /// e.g. `Linux/UNIX`.
    pub product_description: String,
    /// USD/hour.
    pub price: f64,
    /// When this price took effect.
    pub timestamp: Duration,
}

/// Query of DescribeInstanceTypeOfferings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocationType {
    /// Region-level offerings.
    Region,
    /// By zone name (the default).
    AvailabilityZone,
    /// By zone id.
    AvailabilityZoneId,
}

/// Paginates `items` with an offset token (`<prefix><offset>`).
fn paginate<T>(items: Vec<T>, max_results: Option<u32>, next_token: Option<&str>, prefix: &str) -> ApiResult<Page<T>> {
    let start = match next_token {
        Some(t) => t
            .strip_prefix(prefix)
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| ApiError::client("InvalidNextToken", "The specified NextToken is not valid."))?,
        None => 0,
    };
    let len = items.len();
    // MaxResults=0 would hand out an endless chain of empty pages; treat it as "no limit".
    let size = max_results.filter(|m| *m > 0).map_or(usize::MAX, |m| m as usize);
    let end = start.saturating_add(size).min(len);
    let items: Vec<T> = items.into_iter().skip(start).take(end.saturating_sub(start)).collect();
    Ok(Page { items, next_token: (end < len).then(|| format!("{prefix}{end}")) })
}

fn not_found_instances(ids: &[String]) -> ApiError {
    let list = ids.iter().map(|i| format!("'{i}'")).collect::<Vec<_>>().join(", ");
    let message = if ids.len() == 1 {
        format!("The instance ID {list} does not exist")
    } else {
        format!("The instance IDs {list} do not exist")
    };
    ApiError::client("InvalidInstanceID.NotFound", message)
}

fn check_instance_ids(ids: &[String]) -> ApiResult<()> {
    for id in ids {
        let hex = id.strip_prefix("i-").unwrap_or("");
        if !(hex.len() == 8 || hex.len() == 17) || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(ApiError::client("InvalidInstanceID.Malformed", format!("Invalid id: \"{id}\"")));
        }
    }
    Ok(())
}

impl FakeCloud {
    /// Whether DescribeInstances can see `instance` yet (eventual-consistency fault).
    fn visible(&self, instance: &Instance) -> bool {
        instance.launch_time + self.faults.describe_lag <= self.now
    }

    /// What DescribeInstances and DescribeInstanceStatus both refuse: `MaxResults` with ids or
    /// outside 5–1000, and ids unknown or not yet visible.
    fn check_described(&self, ids: &[String], max_results: Option<u32>) -> ApiResult<()> {
        if !ids.is_empty() && max_results.is_some() {
            return Err(ApiError::client(
                "InvalidParameterCombination",
                "The parameter instancesSet cannot be used with the parameter maxResults",
            ));
        }
        if let Some(m) = max_results
            && !(5..=1000).contains(&m)
        {
            return Err(ApiError::invalid_parameter(format!(
                "Value ( {m} ) for parameter maxResults is invalid. Expecting a value between 5 and 1000."
            )));
        }
        let missing: Vec<String> =
            ids.iter().filter(|id| !self.instances.get(*id).is_some_and(|i| self.visible(i))).cloned().collect();
        if !missing.is_empty() {
            return Err(not_found_instances(&missing));
        }
        Ok(())
    }

    /// DescribeInstances. Unknown (or not yet visible) ids fail the whole call with
    /// `InvalidInstanceID.NotFound`, as EC2 does; `MaxResults` with ids is rejected.
    pub fn describe_instances(
        &self,
        ids: &[String],
        filters: &[Filter],
        max_results: Option<u32>,
        next_token: Option<&str>,
    ) -> ApiResult<Page<Instance>> {
        check_instance_ids(ids)?;
        self.check_described(ids, max_results)?;
        let matched: Vec<Instance> = if ids.is_empty() {
            self.instances.values().filter(|i| self.visible(i) && i.matches(filters)).cloned().collect()
        } else {
            ids.iter().filter_map(|id| self.instances.get(id)).filter(|i| i.matches(filters)).cloned().collect()
        };
        paginate(matched, max_results, next_token, "di-")
    }

    /// DescribeInstanceStatus: running instances only unless `include_all`; unknown ids
    /// fail with `InvalidInstanceID.NotFound`, unknown filter names with
    /// `InvalidParameterValue` naming the filter, `MaxResults` with ids or outside 5–1000
    /// as DescribeInstances does.
    pub fn describe_instance_status(
        &self,
        ids: &[String],
        include_all: bool,
        filters: &[Filter],
        max_results: Option<u32>,
        next_token: Option<&str>,
    ) -> ApiResult<Page<Instance>> {
        check_instance_ids(ids)?;
        crate::status_checks::check_filters(filters)?;
        self.check_described(ids, max_results)?;
        let matched: Vec<Instance> = self
            .instances
            .values()
            .filter(|i| self.visible(i) && (ids.is_empty() || ids.contains(&i.id)))
            .filter(|i| include_all || i.state == InstanceState::Running)
            .filter(|i| i.matches_status(filters))
            .cloned()
            .collect();
        paginate(matched, max_results, next_token, "dis-")
    }

    /// TerminateInstances: idempotent; unknown ids fail the whole call.
    pub fn terminate_instances(&mut self, ids: &[String]) -> ApiResult<Vec<StateChange>> {
        if ids.is_empty() {
            return Err(ApiError::missing_parameter("InstanceId"));
        }
        check_instance_ids(ids)?;
        let missing: Vec<String> = ids.iter().filter(|id| !self.instances.contains_key(*id)).cloned().collect();
        if !missing.is_empty() {
            return Err(not_found_instances(&missing));
        }
        let mut changes = Vec::new();
        for id in ids {
            let previous = self.instances[id].state;
            self.begin_shutdown(id, Some(("Client.UserInitiatedShutdown", "User initiated shutdown")));
            changes.push(StateChange { instance_id: id.clone(), previous, current: self.instances[id].state });
        }
        Ok(changes)
    }

    /// CreateTags on instances, launch templates, subnets, security groups or images.
    pub fn create_tags(&mut self, resource_ids: &[String], tags: &Tags) -> ApiResult<()> {
        for id in resource_ids {
            let exists = match id.split('-').next() {
                Some("i") => self.instances.contains_key(id),
                Some("lt") => self.launch_templates.contains_key(id),
                Some("subnet") => self.network.subnets.contains_key(id),
                Some("sg") => self.network.security_groups.contains_key(id),
                Some("ami") => self.images.images.contains_key(id),
                _ => false,
            };
            if !exists {
                let code = match id.split('-').next() {
                    Some("i") => "InvalidInstanceID.NotFound",
                    Some("lt") => "InvalidLaunchTemplateId.NotFound",
                    Some("subnet") => "InvalidSubnetID.NotFound",
                    Some("sg") => "InvalidGroup.NotFound",
                    Some("ami") => "InvalidAMIID.NotFound",
                    _ => "InvalidID",
                };
                return Err(ApiError::client(code, format!("The ID '{id}' does not exist")));
            }
        }
        for id in resource_ids {
            let target: Option<&mut Tags> = match id.split('-').next() {
                Some("i") => self.instances.get_mut(id).map(|i| &mut i.tags),
                Some("lt") => self.launch_templates.get_mut(id).map(|t| &mut t.tags),
                Some("subnet") => self.network.subnets.get_mut(id).map(|s| &mut s.tags),
                Some("sg") => self.network.security_groups.get_mut(id).map(|s| &mut s.tags),
                Some("ami") => self.images.images.get_mut(id).map(|i| &mut i.tags),
                _ => None,
            };
            if let Some(t) = target {
                t.extend(tags.clone());
            }
            if let Some(instance) = self.instances.get(id) {
                let pool = instance.tags.get(NODEPOOL_TAG).cloned();
                self.ledger.retag(id, pool);
            }
        }
        Ok(())
    }

    /// DescribeInstanceTypes with `InstanceType.N`, filters and pagination.
    pub fn describe_instance_types(
        &self,
        names: &[String],
        filters: &[Filter],
        max_results: Option<u32>,
        next_token: Option<&str>,
    ) -> ApiResult<Page<InstanceTypeInfo>> {
        for n in names {
            if self.catalog.get(n).is_none() {
                return Err(ApiError::client(
                    "InvalidInstanceType",
                    format!("The following supplied instance types do not exist: [{n}]"),
                ));
            }
        }
        let matched: Vec<InstanceTypeInfo> = self
            .catalog
            .types()
            .filter(|t| names.is_empty() || names.contains(&t.name))
            .filter(|t| filters.iter().all(|f| type_matches(t, f)))
            .cloned()
            .collect();
        paginate(matched, max_results, next_token, "dit-")
    }

    /// DescribeInstanceTypeOfferings: `(instance type, location)` pairs.
    pub fn describe_instance_type_offerings(
        &self,
        location_type: &LocationType,
        filters: &[Filter],
        max_results: Option<u32>,
        next_token: Option<&str>,
    ) -> ApiResult<Page<(String, String)>> {
        let mut rows: Vec<(String, String)> = match location_type {
            LocationType::Region => self.catalog.types().map(|t| (t.name.clone(), self.region().to_string())).collect(),
            LocationType::AvailabilityZone => {
                self.catalog.offerings().map(|(t, z)| (t.to_string(), z.to_string())).collect()
            }
            LocationType::AvailabilityZoneId => self
                .catalog
                .offerings()
                .filter_map(|(t, z)| self.catalog.zone(z).map(|zone| (t.to_string(), zone.id.clone())))
                .collect(),
        };
        rows.retain(|(t, loc)| {
            filters.iter().all(|f| match f.name.as_str() {
                "instance-type" => f.matches(t),
                "location" => f.matches(loc),
                _ => false,
            })
        });
        paginate(rows, max_results, next_token, "dito-")
    }

    /// DescribeAvailabilityZones (fixed name → id map).
    pub fn describe_availability_zones(&self, names: &[String], filters: &[Filter]) -> Vec<Zone> {
        self.catalog
            .zones()
            .iter()
            .filter(|z| names.is_empty() || names.contains(&z.name))
            .filter(|z| {
                filters.iter().all(|f| match f.name.as_str() {
                    "zone-name" => f.matches(&z.name),
                    "zone-id" => f.matches(&z.id),
                    "state" => f.matches(if self.zone_outages.contains(&z.name) { "impaired" } else { "available" }),
                    "region-name" => f.matches(self.region()),
                    "zone-type" => f.matches("availability-zone"),
                    _ => false,
                })
            })
            .cloned()
            .collect()
    }

    /// DescribeSubnets.
    pub fn describe_subnets(&self, ids: &[String], filters: &[Filter]) -> ApiResult<Vec<Subnet>> {
        for id in ids {
            if !self.network.subnets.contains_key(id) {
                return Err(ApiError::client(
                    "InvalidSubnetID.NotFound",
                    format!("The subnet ID '{id}' does not exist"),
                ));
            }
        }
        Ok(self
            .network
            .subnets
            .values()
            .filter(|s| (ids.is_empty() || ids.contains(&s.id)) && s.matches(filters))
            .cloned()
            .collect())
    }

    /// DescribeSecurityGroups by id, name and filters.
    pub fn describe_security_groups(
        &self,
        ids: &[String],
        names: &[String],
        filters: &[Filter],
    ) -> ApiResult<Vec<SecurityGroup>> {
        for id in ids {
            if !self.network.security_groups.contains_key(id) {
                return Err(ApiError::client(
                    "InvalidGroup.NotFound",
                    format!("The security group '{id}' does not exist"),
                ));
            }
        }
        Ok(self
            .network
            .security_groups
            .values()
            .filter(|g| {
                (ids.is_empty() || ids.contains(&g.id))
                    && (names.is_empty() || names.contains(&g.name))
                    && g.matches(filters)
            })
            .cloned()
            .collect())
    }

    /// DescribeImages by id, owner and filters. Unknown ids are `InvalidAMIID.NotFound`.
    pub fn describe_images(&self, ids: &[String], owners: &[String], filters: &[Filter]) -> ApiResult<Vec<Image>> {
        for id in ids {
            if !self.images.images.contains_key(id) {
                return Err(ApiError::client("InvalidAMIID.NotFound", format!("The image id '[{id}]' does not exist")));
            }
        }
        Ok(self
            .images
            .images
            .values()
            .filter(|i| ids.is_empty() || ids.contains(&i.id))
            .filter(|i| owners.is_empty() || owners.iter().any(|o| o == &i.owner_id || o == "amazon"))
            .filter(|i| i.matches(filters))
            .cloned()
            .collect())
    }

    /// DescribeSpotPriceHistory: for each matching spot-capable offering, the prices in
    /// effect between `start` (default now) and `end` (default now), newest first, at most
    /// one day of periods per pool.
    #[allow(clippy::too_many_arguments)]
    pub fn describe_spot_price_history(
        &self,
        types: &[String],
        zone: Option<&str>,
        product_descriptions: &[String],
        filters: &[Filter],
        start: Option<Duration>,
        end: Option<Duration>,
        max_results: Option<u32>,
        next_token: Option<&str>,
    ) -> ApiResult<Page<SpotPricePoint>> {
        let product = if product_descriptions.is_empty() || product_descriptions.iter().any(|p| p == "Linux/UNIX") {
            "Linux/UNIX"
        } else if product_descriptions.iter().any(|p| p == "Linux/UNIX (Amazon VPC)") {
            "Linux/UNIX (Amazon VPC)"
        } else {
            return Ok(Page { items: Vec::new(), next_token: None });
        };
        let end = end.unwrap_or(self.now).min(self.now);
        let start = start.unwrap_or(end).min(end);
        let period = self.market.period();
        let mut points = Vec::new();
        for (ty, z) in self.catalog.offerings() {
            if (!types.is_empty() && !types.iter().any(|t| t == ty)) || zone.is_some_and(|want| want != z) {
                continue;
            }
            let Some(info) = self.catalog.get(ty) else {
                continue;
            };
            if !info.supports(CapacityType::Spot.as_str()) {
                continue;
            }
            let zone_id = self.catalog.zone(z).map(|zz| zz.id.clone()).unwrap_or_default();
            let point_filters_ok = |p: &SpotPricePoint| {
                filters.iter().all(|f| match f.name.as_str() {
                    "instance-type" => f.matches(&p.instance_type),
                    "availability-zone" => f.matches(&p.zone),
                    "product-description" => f.matches(&p.product_description),
                    _ => true,
                })
            };
            let mut t = self.market.period_start(end);
            for _ in 0..24 {
                let Some(price) = self.market.price(info, z, t) else {
                    break;
                };
                let p = SpotPricePoint {
                    instance_type: ty.to_string(),
                    zone: z.to_string(),
                    zone_id: zone_id.clone(),
                    product_description: product.to_string(),
                    price,
                    timestamp: t,
                };
                if point_filters_ok(&p) {
                    points.push(p);
                }
                if t <= self.market.period_start(start) || t < period {
                    break;
                }
                t -= period;
            }
        }
        paginate(points, max_results, next_token, "dsph-")
    }

    /// Finds a launch template by reference, with EC2's not-found codes.
    pub(crate) fn resolve_launch_template(&self, r: &LaunchTemplateRef) -> ApiResult<&LaunchTemplate> {
        match r {
            LaunchTemplateRef::Id(id) => self.launch_templates.get(id).ok_or_else(|| {
                ApiError::client(
                    "InvalidLaunchTemplateId.NotFound",
                    format!("The specified launch template, with template ID {id}, does not exist."),
                )
            }),
            LaunchTemplateRef::Name(name) => {
                self.launch_templates.values().find(|t| &t.name == name).ok_or_else(|| {
                    ApiError::client(
                        "InvalidLaunchTemplateName.NotFoundException",
                        format!("The specified launch template, with template name {name}, does not exist."),
                    )
                })
            }
        }
    }

    /// CreateLaunchTemplate; a taken name is `InvalidLaunchTemplateName.AlreadyExistsException`.
    pub fn create_launch_template(&mut self, spec: LaunchTemplateSpec) -> ApiResult<LaunchTemplate> {
        if spec.name.is_empty() {
            return Err(ApiError::missing_parameter("LaunchTemplateName"));
        }
        if self.launch_templates.values().any(|t| t.name == spec.name) {
            return Err(ApiError::client(
                "InvalidLaunchTemplateName.AlreadyExistsException",
                format!("Launch template name already in use: {}", spec.name),
            ));
        }
        let template = LaunchTemplate {
            id: self.ids.long("lt"),
            name: spec.name,
            created_at: self.now,
            image_id: spec.image_id,
            instance_type: spec.instance_type,
            security_group_ids: spec.security_group_ids,
            user_data: spec.user_data,
            tags: spec.tags,
            instance_tags: spec.instance_tags,
            data: spec.data,
        };
        self.launch_templates.insert(template.id.clone(), template.clone());
        Ok(template)
    }

    /// DescribeLaunchTemplates by ids, names and filters. Unknown names or ids fail.
    pub fn describe_launch_templates(
        &self,
        ids: &[String],
        names: &[String],
        filters: &[Filter],
        max_results: Option<u32>,
        next_token: Option<&str>,
    ) -> ApiResult<Page<LaunchTemplate>> {
        for id in ids {
            self.resolve_launch_template(&LaunchTemplateRef::Id(id.clone()))?;
        }
        for name in names {
            self.resolve_launch_template(&LaunchTemplateRef::Name(name.clone()))?;
        }
        let matched: Vec<LaunchTemplate> = self
            .launch_templates
            .values()
            .filter(|t| {
                (ids.is_empty() || ids.contains(&t.id))
                    && (names.is_empty() || names.contains(&t.name))
                    && t.matches(filters)
            })
            .cloned()
            .collect();
        paginate(matched, max_results, next_token, "dlt-")
    }

    /// DeleteLaunchTemplate.
    pub fn delete_launch_template(&mut self, r: &LaunchTemplateRef) -> ApiResult<LaunchTemplate> {
        let id = self.resolve_launch_template(r)?.id.clone();
        Ok(self.launch_templates.remove(&id).expect("resolved above"))
    }

    /// SSM GetParameter for the public AMI parameters (`ParameterNotFound` otherwise).
    pub fn get_parameter(&self, name: &str) -> ApiResult<String> {
        self.images
            .parameter(name)
            .map(str::to_string)
            .ok_or_else(|| ApiError::client("ParameterNotFound", format!("Parameter {name} not found.")))
    }
}

fn type_matches(t: &InstanceTypeInfo, f: &Filter) -> bool {
    match f.name.as_str() {
        "instance-type" => f.matches(&t.name),
        "processor-info.supported-architecture" => f.matches_any(t.ec2_architectures.iter().map(String::as_str)),
        "supported-virtualization-type" => f.matches("hvm"),
        "current-generation" => f.matches(if t.current_generation { "true" } else { "false" }),
        "bare-metal" => f.matches(if t.bare_metal { "true" } else { "false" }),
        "burstable-performance-supported" => f.matches(if t.burstable { "true" } else { "false" }),
        "hypervisor" => f.matches(t.hypervisor.as_deref().unwrap_or("")),
        "supported-usage-class" => f.matches_any(t.usage_classes.iter().map(String::as_str)),
        "vcpu-info.default-vcpus" => f.matches(&t.vcpu.to_string()),
        "memory-info.size-in-mib" => f.matches(&t.memory_mib.to_string()),
        _ => false,
    }
}
