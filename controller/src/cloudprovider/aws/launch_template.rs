//! Launch templates (aws:pkg/providers/launchtemplate): one per distinct parameter set (AMI,
//! user data, security groups, instance profile, IMDS, block devices), named
//! `karpenter.k8s.aws/<hash>`, created on first use and remembered; a template that vanished is
//! forgotten when CreateFleet reports it missing, and recreated on the retry.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::types::{
    LaunchTemplateBlockDeviceMappingRequest, LaunchTemplateEbsBlockDeviceRequest, LaunchTemplateHttpTokensState,
    LaunchTemplateIamInstanceProfileSpecificationRequest, LaunchTemplateInstanceMetadataEndpointState,
    LaunchTemplateInstanceMetadataOptionsRequest, LaunchTemplateInstanceMetadataProtocolIpv6,
    RequestLaunchTemplateData, ResourceType, Tag, TagSpecification, VolumeType,
};
use sha2::{Digest, Sha256};

use crate::apis::ec2nodeclass::{BlockDeviceMapping, MetadataOptions};
use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::errors::classify;
use crate::runtime::SharedClock;

/// How long a template is trusted to exist without looking again.
pub const LAUNCH_TEMPLATE_CACHE_TTL: Duration = Duration::from_secs(300);

/// Everything that goes into one launch template.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LaunchTemplateInput {
    /// AMI.
    pub image_id: String,
    /// Base64 user data.
    pub user_data: String,
    /// Security group IDs.
    pub security_group_ids: Vec<String>,
    /// Instance profile name.
    pub instance_profile: String,
    /// IMDS settings.
    pub metadata: MetadataOptions,
    /// Block devices.
    pub block_devices: Vec<BlockDeviceMapping>,
    /// Detailed monitoring.
    pub monitoring: bool,
    /// Tags on the template itself (cluster, node class).
    pub tags: BTreeMap<String, String>,
    /// The capacity reservation a reserved launch targets, and whether it is a capacity block:
    /// one template per reservation (aws `amifamily/resolver.go` l. 194-225,
    /// `launchtemplate/types.go` l. 151-178, v1.14.1). Absent from the name's hash when unset,
    /// so templates of other launches keep their names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_reservation: Option<(String, bool)>,
}

impl LaunchTemplateInput {
    /// `karpenter.k8s.aws/<hash of every parameter>`.
    pub fn name(&self) -> String {
        let digest = Sha256::digest(serde_json::to_vec(self).unwrap_or_default());
        format!("karpenter.k8s.aws/{}", &hex::encode(digest)[..20])
    }
}

fn enum_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn template_data(input: &LaunchTemplateInput) -> RequestLaunchTemplateData {
    let metadata = &input.metadata;
    let mut options = LaunchTemplateInstanceMetadataOptionsRequest::builder();
    if let Some(endpoint) = &metadata.http_endpoint {
        options =
            options.http_endpoint(LaunchTemplateInstanceMetadataEndpointState::from(enum_text(endpoint).as_str()));
    }
    if let Some(ipv6) = &metadata.http_protocol_ipv6 {
        options =
            options.http_protocol_ipv6(LaunchTemplateInstanceMetadataProtocolIpv6::from(enum_text(ipv6).as_str()));
    }
    if let Some(hops) = metadata.http_put_response_hop_limit {
        options = options.http_put_response_hop_limit(i32::try_from(hops).unwrap_or(1));
    }
    if let Some(tokens) = &metadata.http_tokens {
        options = options.http_tokens(LaunchTemplateHttpTokensState::from(enum_text(tokens).as_str()));
    }
    let mut data = RequestLaunchTemplateData::builder()
        .image_id(&input.image_id)
        .user_data(&input.user_data)
        .iam_instance_profile(
            LaunchTemplateIamInstanceProfileSpecificationRequest::builder().name(&input.instance_profile).build(),
        )
        .set_security_group_ids(Some(input.security_group_ids.clone()))
        .metadata_options(options.build())
        .monitoring(aws_sdk_ec2::types::LaunchTemplatesMonitoringRequest::builder().enabled(input.monitoring).build());
    if let Some((id, block)) = &input.capacity_reservation {
        data = data.capacity_reservation_specification(
            aws_sdk_ec2::types::LaunchTemplateCapacityReservationSpecificationRequest::builder()
                .capacity_reservation_preference(
                    aws_sdk_ec2::types::CapacityReservationPreference::CapacityReservationsOnly,
                )
                .capacity_reservation_target(
                    aws_sdk_ec2::types::CapacityReservationTarget::builder().capacity_reservation_id(id).build(),
                )
                .build(),
        );
        if *block {
            data = data.instance_market_options(
                aws_sdk_ec2::types::LaunchTemplateInstanceMarketOptionsRequest::builder()
                    .market_type(aws_sdk_ec2::types::MarketType::CapacityBlock)
                    .build(),
            );
        }
    }
    for mapping in &input.block_devices {
        let mut request = LaunchTemplateBlockDeviceMappingRequest::builder();
        if let Some(device) = &mapping.device_name {
            request = request.device_name(device);
        }
        if let Some(ebs) = &mapping.ebs {
            let mut block = LaunchTemplateEbsBlockDeviceRequest::builder();
            if let Some(size) =
                ebs.volume_size.as_ref().and_then(|q| crate::scheduling::resources::parse_quantity_units(&q.0))
            {
                // EC2 wants GiB.
                block = block.volume_size(i32::try_from((size + (1 << 30) - 1) / (1 << 30)).unwrap_or(i32::MAX));
            }
            if let Some(kind) = &ebs.volume_type {
                block = block.volume_type(VolumeType::from(enum_text(kind).as_str()));
            }
            block = block
                .set_iops(ebs.iops.and_then(|v| i32::try_from(v).ok()))
                .set_throughput(ebs.throughput.and_then(|v| i32::try_from(v).ok()))
                .set_encrypted(ebs.encrypted)
                .set_kms_key_id(ebs.kms_key_id.clone())
                .set_snapshot_id(ebs.snapshot_id.clone())
                .set_delete_on_termination(ebs.delete_on_termination);
            request = request.ebs(block.build());
        }
        data = data.block_device_mappings(request.build());
    }
    data.build()
}

/// Known templates (name → when we last confirmed it exists).
pub struct LaunchTemplateProvider {
    known: Mutex<BTreeMap<String, jiff::Timestamp>>,
    clock: SharedClock,
    /// Held across each `ensure`, as upstream holds the provider's lock across `EnsureAll`
    /// (aws `pkg/providers/launchtemplate/launchtemplate.go` l. 146-147): two launches that
    /// need the same new template do not both find it missing and both create it.
    serial: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for LaunchTemplateProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchTemplateProvider").field("known", &self.known).finish_non_exhaustive()
    }
}

impl LaunchTemplateProvider {
    /// An empty cache.
    pub fn new(clock: SharedClock) -> Self {
        Self { known: Mutex::default(), clock, serial: tokio::sync::Mutex::new(()) }
    }

    /// Makes sure the template for `input` exists and returns its name.
    ///
    /// # Errors
    /// The EC2 error of Describe/CreateLaunchTemplate.
    pub async fn ensure(&self, ec2: &aws_sdk_ec2::Client, input: &LaunchTemplateInput) -> Result<String, CloudError> {
        let _serial = self.serial.lock().await;
        let name = input.name();
        let now = self.clock.now();
        if let Some(seen) = self.known.lock().expect("launch templates").get(&name)
            && crate::runtime::clock::elapsed(*seen, now) < LAUNCH_TEMPLATE_CACHE_TTL
        {
            return Ok(name);
        }
        let exists = match ec2.describe_launch_templates().launch_template_names(&name).send().await {
            Ok(output) => !output.launch_templates().is_empty(),
            Err(error) if error.code().is_some_and(crate::cloudprovider::aws::errors::is_not_found) => false,
            Err(error) => return Err(classify(&error)),
        };
        if !exists {
            let tags: Vec<Tag> = input.tags.iter().map(|(k, v)| Tag::builder().key(k).value(v).build()).collect();
            let result = ec2
                .create_launch_template()
                .launch_template_name(&name)
                .launch_template_data(template_data(input))
                .tag_specifications(
                    TagSpecification::builder()
                        .resource_type(ResourceType::LaunchTemplate)
                        .set_tags(Some(tags))
                        .build(),
                )
                .send()
                .await;
            match result {
                Ok(_) => tracing::info!(launch_template = %name, image = %input.image_id, "created launch template"),
                // Another replica (or our previous life) made it first.
                Err(error) if error.code() == Some("InvalidLaunchTemplateName.AlreadyExistsException") => {}
                Err(error) => return Err(classify(&error)),
            }
        }
        self.known.lock().expect("launch templates").insert(name.clone(), now);
        Ok(name)
    }

    /// Forgets every template.
    pub fn invalidate_all(&self) {
        self.known.lock().expect("launch templates").clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> LaunchTemplateInput {
        LaunchTemplateInput {
            image_id: "ami-1".into(),
            user_data: "dXNlcg==".into(),
            security_group_ids: vec!["sg-1".into()],
            instance_profile: "KarpenterNodeRole".into(),
            metadata: MetadataOptions::crd_default(),
            block_devices: Vec::new(),
            monitoring: false,
            tags: BTreeMap::new(),
            capacity_reservation: None,
        }
    }

    #[test]
    fn names_are_stable_and_change_with_any_parameter() {
        let a = input();
        assert_eq!(a.name(), input().name());
        assert!(a.name().starts_with("karpenter.k8s.aws/"));
        let mut b = input();
        b.image_id = "ami-2".into();
        assert_ne!(a.name(), b.name());
        let mut c = input();
        c.user_data = "b3RoZXI=".into();
        assert_ne!(a.name(), c.name());
    }

    #[test]
    fn template_data_carries_imds_and_profile() {
        let data = template_data(&input());
        assert_eq!(data.image_id(), Some("ami-1"));
        assert_eq!(data.iam_instance_profile().and_then(|p| p.name()), Some("KarpenterNodeRole"));
        let options = data.metadata_options().expect("imds options");
        assert_eq!(options.http_tokens().map(|t| t.as_str()), Some("required"));
        assert_eq!(options.http_put_response_hop_limit(), Some(1));
    }
}
