//! RunInstances, TerminateInstances, DescribeInstances and DescribeInstanceStatus.

use super::template_ref;
use crate::capacity::CapacityType;
use crate::cloud::FakeCloud;
use crate::cloud::launch::RunInstancesRequest;
use crate::error::{ApiError, ApiResult};
use crate::instance::Instance;
use crate::timefmt::iso8601_millis;
use crate::wire::query::Params;
use crate::wire::xml::Xml;

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
    match &i.capacity_reservation_id {
        // A targeted launch: EC2 names the reservation on the instance, which is how
        // Karpenter tells a reserved instance from an on-demand one (aws `instance/types.go`).
        Some(cr) => {
            x.leaf("capacityReservationId", cr);
            x.open("capacityReservationSpecification")
                .leaf("capacityReservationPreference", "capacity-reservations-only")
                .open("capacityReservationTarget")
                .leaf("capacityReservationId", cr)
                .close()
                .close();
        }
        None => {
            x.open("capacityReservationSpecification").leaf("capacityReservationPreference", "open").close();
        }
    }
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

pub(super) fn run_instances(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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

pub(super) fn terminate_instances(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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

pub(super) fn describe_instances(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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

pub(super) fn describe_instance_status(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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
                .leaf("description", crate::instance::SCHEDULED_EVENT_DESCRIPTION)
                .leaf("notBefore", iso8601_millis(epoch, e.not_before))
                .leaf("notAfter", iso8601_millis(epoch, e.not_after))
                .close();
        }
        x.close();
        x.open("instanceState").leaf("code", i.state.code()).leaf("name", i.state.name()).close();
        for check in crate::status_checks::StatusCheck::ALL {
            let (status, detail, since) = i.status_report(check);
            x.open(check.element())
                .leaf("status", status)
                .open("details")
                .open("item")
                .leaf("name", "reachability")
                .leaf("status", detail);
            if let Some(since) = since {
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
