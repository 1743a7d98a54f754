//! DescribeCapacityReservations, in the element names the AWS SDK reads
//! (`shape_capacity_reservation.rs` of aws-sdk-ec2).

use crate::cloud::FakeCloud;
use crate::error::ApiResult;
use crate::timefmt::iso8601_millis;
use crate::wire::query::Params;
use crate::wire::xml::Xml;

pub(super) fn describe_capacity_reservations(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let reservations = cloud.describe_capacity_reservations(&p.list("CapacityReservationId"), &p.filters())?;
    let epoch = cloud.config().epoch;
    let region = cloud.region().to_string();
    let now = cloud.now();
    let mut x = Xml::response("DescribeCapacityReservationsResponse", request_id);
    x.open("capacityReservationSet");
    for r in reservations {
        x.open("item")
            .leaf("capacityReservationId", &r.id)
            .leaf("ownerId", &r.owner_id)
            .leaf(
                "capacityReservationArn",
                format!("arn:aws:ec2:{region}:{}:capacity-reservation/{}", r.owner_id, r.id),
            )
            .leaf("availabilityZoneId", &r.zone_id)
            .leaf("instanceType", &r.instance_type)
            .leaf("instancePlatform", "Linux/UNIX")
            .leaf("availabilityZone", &r.zone)
            .leaf("tenancy", "default")
            .leaf("totalInstanceCount", r.total)
            .leaf("availableInstanceCount", r.available)
            .leaf("ebsOptimized", "true")
            .leaf("ephemeralStorage", "false")
            .leaf("state", r.state(now))
            .leaf("startDate", iso8601_millis(epoch, r.start));
        match r.end {
            Some(end) => {
                x.leaf("endDate", iso8601_millis(epoch, end)).leaf("endDateType", "limited");
            }
            None => {
                x.leaf("endDateType", "unlimited");
            }
        }
        x.leaf("instanceMatchCriteria", r.match_criteria.as_str())
            .leaf("createDate", iso8601_millis(epoch, r.start))
            .leaf("reservationType", r.reservation_type.as_str())
            .leaf("deliveryPreference", "fixed")
            .leaf("interruptible", "false");
        if !r.tags.is_empty() {
            x.tag_set(&r.tags);
        }
        x.close();
    }
    x.close();
    Ok(x.finish())
}
