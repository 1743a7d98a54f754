//! CreateLaunchTemplate, DescribeLaunchTemplates and DeleteLaunchTemplate.

use super::template_ref;
use crate::cloud::FakeCloud;
use crate::cloud::launch_template::{LaunchTemplate, LaunchTemplateSpec};
use crate::error::{ApiError, ApiResult};
use crate::timefmt::iso8601_millis;
use crate::wire::query::Params;
use crate::wire::xml::Xml;

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

pub(super) fn create_launch_template(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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

pub(super) fn describe_launch_templates(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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

pub(super) fn delete_launch_template(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
    let r = template_ref(p).ok_or_else(|| ApiError::missing_parameter("LaunchTemplateName"))?;
    let t = cloud.delete_launch_template(&r)?;
    let mut x = Xml::response("DeleteLaunchTemplateResponse", request_id);
    x.open("launchTemplate");
    write_launch_template(&mut x, cloud, &t);
    x.close();
    Ok(x.finish())
}
