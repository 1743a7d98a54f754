//! EC2 query-protocol actions: form parameters in, EC2-shaped XML out.

use std::time::Duration;

use crate::capacity::CapacityType;
use crate::cloud::FakeCloud;
use crate::error::{ApiError, ApiResult};
use crate::fleet::{CreateFleetOutput, CreateFleetRequest, FleetLaunchTemplateConfig, FleetOverride};
use crate::instance::Instance;
use crate::launch::RunInstancesRequest;
use crate::launch_template::{LaunchTemplate, LaunchTemplateRef, LaunchTemplateSpec};
use crate::ops_ec2::LocationType;
use crate::timefmt::{iso8601_millis, parse_iso8601, unix_secs};
use crate::wire::query::Params;
use crate::wire::xml::Xml;

/// Runs one EC2 action against the cloud and renders the response document.
pub(crate) fn dispatch(cloud: &mut FakeCloud, action: &str, p: &Params, request_id: &str) -> ApiResult<String> {
    // Karpenter's EC2NodeClass validation probes permissions with DryRun: answer as EC2
    // does for an authorised caller, and change nothing.
    if p.get("DryRun") == Some("true") {
        return Err(ApiError::server("DryRunOperation", "Request would have succeeded, but DryRun flag is set.", 412));
    }
    match action {
        "CreateFleet" => create_fleet(cloud, p, request_id),
        "RunInstances" => run_instances(cloud, p, request_id),
        "TerminateInstances" => terminate_instances(cloud, p, request_id),
        "DescribeInstances" => describe_instances(cloud, p, request_id),
        "DescribeInstanceStatus" => describe_instance_status(cloud, p, request_id),
        "CreateTags" => {
            cloud.create_tags(&p.list("ResourceId"), &p.tags("Tag"))?;
            Ok(simple(action, request_id))
        }
        "DescribeInstanceTypes" => describe_instance_types(cloud, p, request_id),
        "DescribeInstanceTypeOfferings" => describe_instance_type_offerings(cloud, p, request_id),
        "DescribeAvailabilityZones" => describe_availability_zones(cloud, p, request_id),
        "DescribeSubnets" => describe_subnets(cloud, p, request_id),
        "DescribeSecurityGroups" => describe_security_groups(cloud, p, request_id),
        "DescribeImages" => describe_images(cloud, p, request_id),
        "DescribeSpotPriceHistory" => describe_spot_price_history(cloud, p, request_id),
        "CreateLaunchTemplate" => create_launch_template(cloud, p, request_id),
        "DescribeLaunchTemplates" => describe_launch_templates(cloud, p, request_id),
        "DeleteLaunchTemplate" => delete_launch_template(cloud, p, request_id),
        other => {
            Err(ApiError::client("InvalidAction", format!("The action {other} is not valid for this web service.")))
        }
    }
}

fn simple(action: &str, request_id: &str) -> String {
    let mut x = Xml::response(&format!("{action}Response"), request_id);
    x.leaf("return", "true");
    x.finish()
}

fn template_ref(p: &Params) -> Option<LaunchTemplateRef> {
    p.string("LaunchTemplateId")
        .map(LaunchTemplateRef::Id)
        .or_else(|| p.string("LaunchTemplateName").map(LaunchTemplateRef::Name))
}

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
        None => CapacityType::OnDemand,
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

fn create_fleet(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let req = parse_create_fleet(p)?;
    let out = cloud.create_fleet(&req)?;
    Ok(render_fleet(&out, request_id))
}

fn write_instance(x: &mut Xml, cloud: &FakeCloud, i: &Instance) {
    let epoch = cloud.config().epoch;
    x.open("item");
    x.leaf("instanceId", &i.id).leaf("imageId", &i.image_id);
    x.open("instanceState").leaf("code", i.state.code()).leaf("name", i.state.name()).close();
    let running_like = i.state.is_live();
    x.leaf("privateDnsName", if running_like { i.private_dns_name(cloud.region()) } else { String::new() });
    x.leaf("dnsName", "");
    x.leaf("reason", "");
    x.leaf("amiLaunchIndex", 0);
    x.open("productCodes").close();
    x.leaf("instanceType", &i.instance_type);
    x.leaf("launchTime", iso8601_millis(epoch, i.launch_time));
    x.open("placement")
        .leaf("availabilityZoneId", &i.zone_id)
        .leaf("availabilityZone", &i.zone)
        .leaf("groupName", "")
        .leaf("tenancy", "default")
        .close();
    x.open("monitoring").leaf("state", "disabled").close();
    x.leaf("subnetId", &i.subnet_id).leaf("vpcId", &i.vpc_id);
    if running_like {
        x.leaf("privateIpAddress", &i.private_ip);
    }
    x.leaf("sourceDestCheck", "true");
    x.open("groupSet");
    for sg in &i.security_group_ids {
        x.open("item").leaf("groupId", sg).close();
    }
    x.close();
    if let Some((code, message)) = &i.state_reason {
        x.open("stateReason").leaf("code", code).leaf("message", message).close();
    }
    x.leaf("architecture", &i.architecture);
    x.leaf("rootDeviceType", "ebs").leaf("rootDeviceName", "/dev/xvda");
    x.open("blockDeviceMapping").close();
    x.leaf("virtualizationType", "hvm");
    x.leaf("clientToken", "");
    if i.capacity_type == CapacityType::Spot {
        x.leaf("instanceLifecycle", "spot");
        x.leaf("spotInstanceRequestId", format!("sir-{}", &i.id[2..10]));
    }
    if !i.tags.is_empty() {
        x.tag_set(&i.tags);
    }
    x.leaf("hypervisor", "xen").leaf("ebsOptimized", "false").leaf("enaSupport", "true");
    x.open("cpuOptions").close();
    x.open("capacityReservationSpecification").leaf("capacityReservationPreference", "open").close();
    x.open("metadataOptions")
        .leaf("state", "applied")
        .leaf("httpTokens", "required")
        .leaf("httpPutResponseHopLimit", 1)
        .leaf("httpEndpoint", "enabled")
        .close();
    x.leaf("bootMode", "uefi-preferred");
    x.leaf("platformDetails", "Linux/UNIX").leaf("usageOperation", "RunInstances");
    x.close();
}

fn run_instances(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let lt = p.sub("LaunchTemplate");
    let req = RunInstancesRequest {
        image_id: p.string("ImageId"),
        instance_type: p.string("InstanceType"),
        min_count: p.u32("MinCount")?.ok_or_else(|| ApiError::missing_parameter("MinCount"))?,
        max_count: p.u32("MaxCount")?.ok_or_else(|| ApiError::missing_parameter("MaxCount"))?,
        subnet_id: p.string("SubnetId"),
        availability_zone: p.string("Placement.AvailabilityZone"),
        launch_template: template_ref(&lt),
        spot: p.get("InstanceMarketOptions.MarketType") == Some("spot"),
        tags: p.tag_specifications("TagSpecification").remove("instance").unwrap_or_default(),
        security_group_ids: p.list("SecurityGroupId"),
        client_token: p.string("ClientToken"),
    };
    let out = cloud.run_instances(&req)?;
    let mut x = Xml::response("RunInstancesResponse", request_id);
    x.leaf("reservationId", &out.reservation_id).leaf("ownerId", &cloud.config().account_id);
    x.open("groupSet").close();
    x.open("instancesSet");
    for id in &out.instance_ids {
        if let Some(i) = cloud.instance(id) {
            write_instance(&mut x, cloud, i);
        }
    }
    x.close();
    Ok(x.finish())
}

fn terminate_instances(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let changes = cloud.terminate_instances(&p.list("InstanceId"))?;
    let mut x = Xml::response("TerminateInstancesResponse", request_id);
    x.open("instancesSet");
    for c in changes {
        x.open("item").leaf("instanceId", &c.instance_id);
        x.open("currentState").leaf("code", c.current.code()).leaf("name", c.current.name()).close();
        x.open("previousState").leaf("code", c.previous.code()).leaf("name", c.previous.name()).close();
        x.close();
    }
    x.close();
    Ok(x.finish())
}

fn describe_instances(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let page =
        cloud.describe_instances(&p.list("InstanceId"), &p.filters(), p.u32("MaxResults")?, p.get("NextToken"))?;
    let mut x = Xml::response("DescribeInstancesResponse", request_id);
    x.open("reservationSet");
    let mut i = 0;
    // Consecutive instances of one launch call share a reservation item.
    while i < page.items.len() {
        let rid = page.items[i].reservation_id.clone();
        x.open("item").leaf("reservationId", &rid).leaf("ownerId", &cloud.config().account_id);
        x.open("groupSet").close();
        x.open("instancesSet");
        while i < page.items.len() && page.items[i].reservation_id == rid {
            write_instance(&mut x, cloud, &page.items[i]);
            i += 1;
        }
        x.close().close();
    }
    x.close();
    x.opt("nextToken", page.next_token);
    Ok(x.finish())
}

fn describe_instance_status(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let include_all = p.get("IncludeAllInstances") == Some("true");
    let page = cloud.describe_instance_status(
        &p.list("InstanceId"),
        include_all,
        &p.filters(),
        p.u32("MaxResults")?,
        p.get("NextToken"),
    )?;
    let epoch = cloud.config().epoch;
    let mut x = Xml::response("DescribeInstanceStatusResponse", request_id);
    x.open("instanceStatusSet");
    for i in &page.items {
        x.open("item")
            .leaf("instanceId", &i.id)
            .leaf("availabilityZone", &i.zone)
            .leaf("availabilityZoneId", &i.zone_id);
        x.open("eventsSet");
        for e in &i.scheduled_events {
            x.open("item")
                .leaf("instanceEventId", &e.id)
                .leaf("code", &e.code)
                .leaf("description", "The instance is running on degraded hardware")
                .leaf("notBefore", iso8601_millis(epoch, e.not_before))
                .leaf("notAfter", iso8601_millis(epoch, e.not_after))
                .close();
        }
        x.close();
        x.open("instanceState").leaf("code", i.state.code()).leaf("name", i.state.name()).close();
        let running = i.state == crate::instance::InstanceState::Running;
        for summary in ["systemStatus", "instanceStatus"] {
            let (status, check) = match (running, i.impaired_since) {
                (false, _) => ("not-applicable", "not-applicable"),
                (true, Some(_)) => ("impaired", "failed"),
                (true, None) => ("ok", "passed"),
            };
            x.open(summary)
                .leaf("status", status)
                .open("details")
                .open("item")
                .leaf("name", "reachability")
                .leaf("status", check);
            if let Some(since) = i.impaired_since.filter(|_| running) {
                x.leaf("impairedSince", iso8601_millis(epoch, since));
            }
            x.close().close().close();
        }
        x.close();
    }
    x.close();
    x.opt("nextToken", page.next_token);
    Ok(x.finish())
}

fn describe_instance_types(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let page = cloud.describe_instance_types(
        &p.list("InstanceType"),
        &p.filters(),
        p.u32("MaxResults")?,
        p.get("NextToken"),
    )?;
    let mut x = Xml::response("DescribeInstanceTypesResponse", request_id);
    x.open("instanceTypeSet");
    for t in &page.items {
        super::instance_type_xml::write(&mut x, t);
    }
    x.close();
    x.opt("nextToken", page.next_token);
    Ok(x.finish())
}

fn describe_instance_type_offerings(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let (location_type, label) = match p.get("LocationType") {
        None | Some("availability-zone") => (LocationType::AvailabilityZone, "availability-zone"),
        Some("availability-zone-id") => (LocationType::AvailabilityZoneId, "availability-zone-id"),
        Some("region") => (LocationType::Region, "region"),
        Some(other) => {
            return Err(ApiError::invalid_parameter(format!("Invalid LocationType {other}")));
        }
    };
    let page = cloud.describe_instance_type_offerings(
        &location_type,
        &p.filters(),
        p.u32("MaxResults")?,
        p.get("NextToken"),
    )?;
    let mut x = Xml::response("DescribeInstanceTypeOfferingsResponse", request_id);
    x.open("instanceTypeOfferingSet");
    for (t, loc) in &page.items {
        x.open("item").leaf("instanceType", t).leaf("locationType", label).leaf("location", loc).close();
    }
    x.close();
    x.opt("nextToken", page.next_token);
    Ok(x.finish())
}

fn describe_availability_zones(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let mut names = p.list("ZoneName");
    for id in p.list("ZoneId") {
        if let Some(z) = cloud.catalog().zones().iter().find(|z| z.id == id) {
            names.push(z.name.clone());
        }
    }
    let zones = cloud.describe_availability_zones(&names, &p.filters());
    let region = cloud.region().to_string();
    let mut x = Xml::response("DescribeAvailabilityZonesResponse", request_id);
    x.open("availabilityZoneInfo");
    for z in zones {
        x.open("item")
            .leaf("optInStatus", "opt-in-not-required")
            .open("messageSet")
            .close()
            .leaf("regionName", &region)
            .leaf("zoneName", &z.name)
            .leaf("zoneId", &z.id)
            .leaf("groupName", &region)
            .leaf("networkBorderGroup", &region)
            .leaf("zoneType", "availability-zone")
            .leaf("zoneState", "available")
            .close();
    }
    x.close();
    Ok(x.finish())
}

fn describe_subnets(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let subnets = cloud.describe_subnets(&p.list("SubnetId"), &p.filters())?;
    let owner = cloud.config().account_id.clone();
    let region = cloud.region().to_string();
    let mut x = Xml::response("DescribeSubnetsResponse", request_id);
    x.open("subnetSet");
    for s in subnets {
        x.open("item")
            .leaf("subnetId", &s.id)
            .leaf("subnetArn", format!("arn:aws:ec2:{region}:{owner}:subnet/{}", s.id))
            .leaf("state", "available")
            .leaf("ownerId", &owner)
            .leaf("vpcId", &s.vpc_id)
            .leaf("cidrBlock", &s.cidr)
            .open("ipv6CidrBlockAssociationSet")
            .close()
            .leaf("availableIpAddressCount", s.free_ips)
            .leaf("availabilityZone", &s.zone)
            .leaf("availabilityZoneId", &s.zone_id)
            .leaf("defaultForAz", "false")
            .leaf("mapPublicIpOnLaunch", "false")
            .leaf("assignIpv6AddressOnCreation", "false");
        if !s.tags.is_empty() {
            x.tag_set(&s.tags);
        }
        x.close();
    }
    x.close();
    Ok(x.finish())
}

fn describe_security_groups(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let groups = cloud.describe_security_groups(&p.list("GroupId"), &p.list("GroupName"), &p.filters())?;
    let owner = cloud.config().account_id.clone();
    let mut x = Xml::response("DescribeSecurityGroupsResponse", request_id);
    x.open("securityGroupInfo");
    for g in groups {
        x.open("item")
            .leaf("ownerId", &owner)
            .leaf("groupId", &g.id)
            .leaf("groupName", &g.name)
            .leaf("groupDescription", &g.description)
            .leaf("vpcId", &g.vpc_id)
            .open("ipPermissions")
            .close()
            .open("ipPermissionsEgress")
            .close();
        if !g.tags.is_empty() {
            x.tag_set(&g.tags);
        }
        x.close();
    }
    x.close();
    Ok(x.finish())
}

fn describe_images(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let images = cloud.describe_images(&p.list("ImageId"), &p.list("Owner"), &p.filters())?;
    let epoch = cloud.config().epoch;
    let mut x = Xml::response("DescribeImagesResponse", request_id);
    x.open("imagesSet");
    for i in images {
        x.open("item")
            .leaf("imageId", &i.id)
            .leaf("imageLocation", format!("amazon/{}", i.name))
            .leaf("imageState", "available")
            .leaf("imageOwnerId", &i.owner_id)
            .leaf("creationDate", iso8601_millis(epoch, i.created_at))
            .leaf("isPublic", "true")
            .leaf("architecture", &i.architecture)
            .leaf("imageType", "machine")
            .leaf("imageOwnerAlias", "amazon")
            .leaf("name", &i.name)
            .leaf(
                "description",
                format!("EKS-optimized Kubernetes node based on Amazon Linux 2023, ({}, {})", i.variant, i.version),
            )
            .leaf("rootDeviceType", "ebs")
            .leaf("rootDeviceName", "/dev/xvda")
            .open("blockDeviceMapping")
            .close()
            .leaf("virtualizationType", "hvm")
            .leaf("hypervisor", "xen")
            .leaf("enaSupport", "true")
            .leaf("platformDetails", "Linux/UNIX")
            .leaf("usageOperation", "RunInstances")
            .leaf("bootMode", "uefi-preferred");
        if let Some(d) = i.deprecated_at {
            x.leaf("deprecationTime", iso8601_millis(epoch, d));
        }
        if !i.tags.is_empty() {
            x.tag_set(&i.tags);
        }
        x.close();
    }
    x.close();
    Ok(x.finish())
}

fn describe_spot_price_history(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let epoch = cloud.config().epoch;
    let base = unix_secs(epoch, Duration::ZERO);
    let to_sim = |key: &str| -> ApiResult<Option<Duration>> {
        p.get(key)
            .map(|v| {
                let secs = parse_iso8601(v)
                    .or_else(|| v.parse::<f64>().ok())
                    .ok_or_else(|| ApiError::invalid_parameter(format!("Invalid {key} '{v}'")))?;
                Ok(Duration::from_secs_f64((secs - base).max(0.0)))
            })
            .transpose()
    };
    let page = cloud.describe_spot_price_history(
        &p.list("InstanceType"),
        p.get("AvailabilityZone"),
        &p.list("ProductDescription"),
        &p.filters(),
        to_sim("StartTime")?,
        to_sim("EndTime")?,
        p.u32("MaxResults")?,
        p.get("NextToken"),
    )?;
    let mut x = Xml::response("DescribeSpotPriceHistoryResponse", request_id);
    x.open("spotPriceHistorySet");
    for s in &page.items {
        x.open("item")
            .leaf("instanceType", &s.instance_type)
            .leaf("productDescription", &s.product_description)
            .leaf("spotPrice", format!("{:.6}", s.price))
            .leaf("timestamp", iso8601_millis(epoch, s.timestamp))
            .leaf("availabilityZone", &s.zone)
            .leaf("availabilityZoneId", &s.zone_id)
            .close();
    }
    x.close();
    x.leaf("nextToken", page.next_token.unwrap_or_default());
    Ok(x.finish())
}

fn write_launch_template(x: &mut Xml, cloud: &FakeCloud, t: &LaunchTemplate) {
    x.leaf("launchTemplateId", &t.id)
        .leaf("launchTemplateName", &t.name)
        .leaf("createTime", iso8601_millis(cloud.config().epoch, t.created_at))
        .leaf("createdBy", format!("arn:aws:iam::{}:role/KarpenterControllerRole", cloud.config().account_id))
        .leaf("defaultVersionNumber", 1)
        .leaf("latestVersionNumber", 1);
    if !t.tags.is_empty() {
        x.tag_set(&t.tags);
    }
}

fn create_launch_template(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let data = p.sub("LaunchTemplateData");
    let spec = LaunchTemplateSpec {
        name: p.required("LaunchTemplateName")?.to_string(),
        image_id: data.string("ImageId"),
        instance_type: data.string("InstanceType"),
        security_group_ids: data.list("SecurityGroupId"),
        user_data: data.string("UserData"),
        tags: p.tag_specifications("TagSpecification").remove("launch-template").unwrap_or_default(),
        instance_tags: data.tag_specifications("TagSpecification").remove("instance").unwrap_or_default(),
        data: data.raw().clone(),
    };
    let t = cloud.create_launch_template(spec)?;
    let mut x = Xml::response("CreateLaunchTemplateResponse", request_id);
    x.open("launchTemplate");
    write_launch_template(&mut x, cloud, &t);
    x.close();
    Ok(x.finish())
}

fn describe_launch_templates(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let page = cloud.describe_launch_templates(
        &p.list("LaunchTemplateId"),
        &p.list("LaunchTemplateName"),
        &p.filters(),
        p.u32("MaxResults")?,
        p.get("NextToken"),
    )?;
    let mut x = Xml::response("DescribeLaunchTemplatesResponse", request_id);
    x.open("launchTemplates");
    for t in &page.items {
        x.open("item");
        write_launch_template(&mut x, cloud, t);
        x.close();
    }
    x.close();
    x.opt("nextToken", page.next_token);
    Ok(x.finish())
}

fn delete_launch_template(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let r = template_ref(p).ok_or_else(|| ApiError::missing_parameter("LaunchTemplateName"))?;
    let t = cloud.delete_launch_template(&r)?;
    let mut x = Xml::response("DeleteLaunchTemplateResponse", request_id);
    x.open("launchTemplate");
    write_launch_template(&mut x, cloud, &t);
    x.close();
    Ok(x.finish())
}
