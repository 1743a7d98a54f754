//! What can be launched where and at what price: DescribeInstanceTypes,
//! DescribeInstanceTypeOfferings, DescribeAvailabilityZones and DescribeSpotPriceHistory.

use std::time::Duration;

use crate::cloud::FakeCloud;
use crate::cloud::ops_ec2::LocationType;
use crate::error::{ApiError, ApiResult};
use crate::timefmt::{iso8601_millis, parse_instant};
use crate::wire::query::Params;
use crate::wire::xml::Xml;

pub(super) fn describe_instance_types(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let page = cloud.describe_instance_types(
        &p.list("InstanceType"),
        &p.filters(),
        p.u32("MaxResults")?,
        p.get("NextToken"),
    )?;
    let mut x = Xml::response("DescribeInstanceTypesResponse", request_id);
    x.open("instanceTypeSet");
    for t in &page.items {
        crate::wire::instance_type_xml::write(&mut x, t);
    }
    x.close();
    x.opt("nextToken", page.next_token);
    Ok(x.finish())
}

pub(super) fn describe_instance_type_offerings(
    cloud: &mut FakeCloud,
    p: &Params,
    request_id: &str,
) -> ApiResult<String> {
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

pub(super) fn describe_availability_zones(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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

pub(super) fn describe_spot_price_history(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let epoch = cloud.config().epoch;
    let to_sim = |key: &str| -> ApiResult<Option<Duration>> {
        p.get(key)
            .map(|v| parse_instant(epoch, v).ok_or_else(|| ApiError::invalid_parameter(format!("Invalid {key} '{v}'"))))
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
