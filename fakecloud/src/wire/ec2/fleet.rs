//! CreateFleet: the request's nested launch template configs in, the fleet's instances and
//! per-override errors out.

use super::template_ref;
use crate::capacity::CapacityType;
use crate::cloud::FakeCloud;
use crate::cloud::fleet::{CreateFleetOutput, CreateFleetRequest, FleetLaunchTemplateConfig, FleetOverride};
use crate::error::{ApiError, ApiResult};
use crate::wire::query::Params;
use crate::wire::xml::Xml;

fn parse_create_fleet(p: &Params) -> ApiResult<CreateFleetRequest> {
    let mut configs = Vec::new();
    for i in p.indices("LaunchTemplateConfigs") {
        let c = p.sub(&format!("LaunchTemplateConfigs.{i}"));
        let spec = c.sub("LaunchTemplateSpecification");
        let template = template_ref(&spec).ok_or_else(|| ApiError::missing_parameter("LaunchTemplateSpecification"))?;
        let mut overrides = Vec::new();
        for j in c.indices("Overrides") {
            let o = c.sub(&format!("Overrides.{j}"));
            overrides.push(FleetOverride {
                instance_type: o.string("InstanceType"),
                subnet_id: o.string("SubnetId"),
                availability_zone: o.string("AvailabilityZone"),
                image_id: o.string("ImageId"),
                priority: o.f64("Priority")?,
                max_price: o.f64("MaxPrice")?,
                weighted_capacity: o.f64("WeightedCapacity")?,
            });
        }
        configs.push(FleetLaunchTemplateConfig { template, version: spec.string("Version"), overrides });
    }
    let target = p.sub("TargetCapacitySpecification");
    let default_capacity_type = match target.get("DefaultTargetCapacityType") {
        // A capacity block launches as on-demand capacity held by the block its launch
        // template targets (aws `instance/types.go` l. 205-214, v1.14.1).
        None | Some("capacity-block") => CapacityType::OnDemand,
        Some(v) => CapacityType::parse(v).ok_or_else(|| {
            ApiError::invalid_parameter(format!("DefaultTargetCapacityType '{v}' is not modelled by the fake cloud"))
        })?,
    };
    Ok(CreateFleetRequest {
        configs,
        total_target_capacity: target
            .u32("TotalTargetCapacity")?
            .ok_or_else(|| ApiError::missing_parameter("TotalTargetCapacity"))?,
        default_capacity_type,
        on_demand_target: target.u32("OnDemandTargetCapacity")?,
        spot_target: target.u32("SpotTargetCapacity")?,
        spot_allocation_strategy: p.string("SpotOptions.AllocationStrategy"),
        on_demand_allocation_strategy: p.string("OnDemandOptions.AllocationStrategy"),
        fleet_type: p.string("Type").unwrap_or_else(|| "maintain".into()),
        client_token: p.string("ClientToken"),
        tags: p.tag_specifications("TagSpecification"),
        context: p.string("Context"),
    })
}

fn write_overrides(x: &mut Xml, o: &FleetOverride) {
    x.open("overrides");
    x.opt("instanceType", o.instance_type.as_deref());
    x.opt("maxPrice", o.max_price);
    x.opt("subnetId", o.subnet_id.as_deref());
    x.opt("availabilityZone", o.availability_zone.as_deref());
    x.opt("weightedCapacity", o.weighted_capacity);
    x.opt("priority", o.priority);
    x.opt("imageId", o.image_id.as_deref());
    x.close();
}

fn write_lt_and_overrides(x: &mut Xml, id: &str, name: &str, version: Option<&str>, o: &FleetOverride) {
    x.open("launchTemplateAndOverrides").open("launchTemplateSpecification");
    if !id.is_empty() {
        x.leaf("launchTemplateId", id);
    }
    if !name.is_empty() {
        x.leaf("launchTemplateName", name);
    }
    x.opt("version", version);
    x.close();
    write_overrides(x, o);
    x.close();
}

fn render_fleet(out: &CreateFleetOutput, request_id: &str) -> String {
    let mut x = Xml::response("CreateFleetResponse", request_id);
    x.leaf("fleetId", &out.fleet_id);
    x.open("errorSet");
    for e in &out.errors {
        x.open("item");
        write_lt_and_overrides(&mut x, &e.template_id, &e.template_name, e.version.as_deref(), &e.overrides);
        x.leaf("lifecycle", e.lifecycle.as_str()).leaf("errorCode", &e.code).leaf("errorMessage", &e.message);
        x.close();
    }
    x.close();
    x.open("fleetInstanceSet");
    for g in &out.instances {
        x.open("item");
        write_lt_and_overrides(&mut x, &g.template_id, &g.template_name, g.version.as_deref(), &g.overrides);
        x.leaf("lifecycle", g.lifecycle.as_str());
        x.items("instanceIds", &g.instance_ids);
        x.leaf("instanceType", &g.instance_type);
        x.close();
    }
    x.close();
    x.finish()
}

pub(super) fn create_fleet(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let req = parse_create_fleet(p)?;
    let out = cloud.create_fleet(&req)?;
    Ok(render_fleet(&out, request_id))
}
