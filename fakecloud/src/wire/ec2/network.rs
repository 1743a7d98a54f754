//! DescribeSubnets and DescribeSecurityGroups.

use crate::cloud::FakeCloud;
use crate::error::ApiResult;
use crate::wire::query::Params;
use crate::wire::xml::Xml;

pub(super) fn describe_subnets(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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

pub(super) fn describe_security_groups(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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
