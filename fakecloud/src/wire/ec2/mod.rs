//! EC2 query-protocol actions: form parameters in, EC2-shaped XML out. [`dispatch`] routes
//! an action to the file for its family: fleets, instances, the catalog (types, offerings,
//! zones, spot prices), network, images and launch templates.

mod catalog;
mod fleet;
mod images;
mod instances;
mod launch_templates;
mod network;
mod reservations;

use crate::cloud::FakeCloud;
use crate::cloud::launch_template::LaunchTemplateRef;
use crate::error::{ApiError, ApiResult};
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
        "CreateFleet" => fleet::create_fleet(cloud, p, request_id),
        "RunInstances" => instances::run_instances(cloud, p, request_id),
        "TerminateInstances" => instances::terminate_instances(cloud, p, request_id),
        "DescribeInstances" => instances::describe_instances(cloud, p, request_id),
        "DescribeInstanceStatus" => instances::describe_instance_status(cloud, p, request_id),
        "CreateTags" => {
            cloud.create_tags(&p.list("ResourceId"), &p.tags("Tag"))?;
            Ok(simple(action, request_id))
        }
        "DescribeInstanceTypes" => catalog::describe_instance_types(cloud, p, request_id),
        "DescribeInstanceTypeOfferings" => catalog::describe_instance_type_offerings(cloud, p, request_id),
        "DescribeAvailabilityZones" => catalog::describe_availability_zones(cloud, p, request_id),
        "DescribeSubnets" => network::describe_subnets(cloud, p, request_id),
        "DescribeSecurityGroups" => network::describe_security_groups(cloud, p, request_id),
        "DescribeImages" => images::describe_images(cloud, p, request_id),
        "DescribeCapacityReservations" => reservations::describe_capacity_reservations(cloud, p, request_id),
        "DescribeSpotPriceHistory" => catalog::describe_spot_price_history(cloud, p, request_id),
        "CreateLaunchTemplate" => launch_templates::create_launch_template(cloud, p, request_id),
        "DescribeLaunchTemplates" => launch_templates::describe_launch_templates(cloud, p, request_id),
        "DeleteLaunchTemplate" => launch_templates::delete_launch_template(cloud, p, request_id),
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
