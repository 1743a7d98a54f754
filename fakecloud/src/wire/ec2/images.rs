//! DescribeImages.

use crate::cloud::FakeCloud;
use crate::error::ApiResult;
use crate::timefmt::iso8601_millis;
use crate::wire::query::Params;
use crate::wire::xml::Xml;

pub(super) fn describe_images(cloud: &mut FakeCloud, p: &Params, request_id: &str) -> ApiResult<String> {
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
