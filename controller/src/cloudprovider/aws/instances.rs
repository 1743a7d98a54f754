//! Instances (aws:pkg/providers/instance): the CreateFleet request (instant, one instance,
//! overrides per type × zone → subnet, priced priorities, allocation strategy per capacity
//! type, tags for GC), reading fleet errors into the ICE cache, and Describe/Terminate mapped to
//! NodeClaims.

use std::collections::BTreeMap;

use aws_sdk_ec2::types::{
    CreateFleetError, DefaultTargetCapacityType, FleetLaunchTemplateConfigRequest, FleetLaunchTemplateOverridesRequest,
    FleetLaunchTemplateSpecificationRequest, FleetOnDemandAllocationStrategy, FleetType, Instance, InstanceStateName,
    OnDemandOptionsRequest, ResourceType, SpotAllocationStrategy, SpotOptionsRequest, Tag, TagSpecification,
    TargetCapacitySpecificationRequest,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::apis::labels;
use crate::apis::{NodeClaim, NodeClaimSpec, NodeClaimStatus};
use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::errors::{INSUFFICIENT_FREE_ADDRESSES_CODE, classify, is_unfulfillable_capacity};

/// Tag every instance this cluster's controller launches carries, naming the cluster.
pub const CLUSTER_NAME_TAG: &str = "eks:eks-cluster-name";
/// Tag naming the NodeClaim an instance was launched for.
pub const NODE_CLAIM_TAG: &str = "karpenter.sh/nodeclaim";

/// One (instance type × zone) choice in a fleet request.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetOverride {
    /// Instance type.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
    /// The zone's subnet.
    pub subnet_id: String,
    /// The launch template holding the AMI for this type.
    pub launch_template: String,
    /// AMI (also in the template; repeated so the response can be mapped back).
    pub image_id: String,
    /// Offering price: the fleet's priority (lower is preferred).
    pub price: f64,
}

/// What one fleet call asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetRequest {
    /// `spot`, `on-demand` or `reserved`.
    pub capacity_type: String,
    /// A reserved launch into a capacity block (aws `instance/types.go` l. 205-214: the fleet's
    /// default target capacity type is then `capacity-block`, and it has no on-demand options).
    pub capacity_block: bool,
    /// Overrides, cheapest first.
    pub overrides: Vec<FleetOverride>,
    /// Tags for the instance, its volumes and the fleet.
    pub tags: BTreeMap<String, String>,
    /// `spec.context` of the class.
    pub context: Option<String>,
    /// The claim's prices came through NodeOverlays (`karpenter.sh/price-overlay-applied`):
    /// the fleet follows the overrides' priorities, on-demand `prioritized`, spot
    /// `capacity-optimized-prioritized` (aws `pkg/providers/instance/instance.go` l. 376-378,
    /// `types.go` l. 234 and 244).
    pub prioritized: bool,
}

/// An ICE-class error for one offering, to be cached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnavailableOffering {
    /// The error code.
    pub code: String,
    /// Capacity type.
    pub capacity_type: String,
    /// Instance type.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
}

/// What one (possibly batched) fleet call returned: every instance, shared errors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetOutput {
    /// Launched instances: (id, type, zone, image).
    pub instances: Vec<(String, String, String, String)>,
    /// Offerings to mark unavailable.
    pub unavailable: Vec<UnavailableOffering>,
    /// Every error, as (code, message).
    pub errors: Vec<(String, String)>,
    /// Subnets the fleet reported `InsufficientFreeAddressesInSubnet` for.
    pub iced_subnets: Vec<String>,
}

/// What one caller of the fleet got.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetResult {
    /// The instance launched, if any: (id, type, zone, image).
    pub instance: Option<(String, String, String, String)>,
    /// Offerings to mark unavailable.
    pub unavailable: Vec<UnavailableOffering>,
    /// Every error, as (code, message).
    pub errors: Vec<(String, String)>,
    /// Subnets the fleet reported `InsufficientFreeAddressesInSubnet` for.
    pub iced_subnets: Vec<String>,
}

impl FleetResult {
    /// The error to return when nothing launched: all-ICE ⇒ insufficient capacity (the
    /// NodeClaim is deleted and re-planned), otherwise the first error as a retryable one.
    pub fn failure(&self) -> CloudError {
        if !self.errors.is_empty() && self.errors.iter().all(|(code, _)| is_unfulfillable_capacity(code)) {
            let summary: Vec<String> = self.errors.iter().take(5).map(|(code, m)| format!("{code}: {m}")).collect();
            return CloudError::InsufficientCapacity(summary.join("; "));
        }
        match self.errors.iter().find(|(code, _)| !is_unfulfillable_capacity(code)) {
            Some((code, message)) => CloudError::other(code.clone(), message.clone()),
            None => CloudError::other("FleetLaunchFailed", "CreateFleet returned no instance and no error"),
        }
    }
}

fn tag_list(tags: &BTreeMap<String, String>) -> Vec<Tag> {
    tags.iter().map(|(k, v)| Tag::builder().key(k).value(v).build()).collect()
}

/// Sends the fleet request for `count` instances.
///
/// # Errors
/// A request-level EC2 error (throttling, validation, a missing launch template).
pub async fn create_fleet(
    ec2: &aws_sdk_ec2::Client,
    request: &FleetRequest,
    count: usize,
) -> Result<FleetOutput, CloudError> {
    let mut by_template: BTreeMap<&str, Vec<&FleetOverride>> = BTreeMap::new();
    for o in &request.overrides {
        by_template.entry(o.launch_template.as_str()).or_default().push(o);
    }
    let configs: Vec<FleetLaunchTemplateConfigRequest> = by_template
        .into_iter()
        .map(|(template, overrides)| {
            FleetLaunchTemplateConfigRequest::builder()
                .launch_template_specification(
                    FleetLaunchTemplateSpecificationRequest::builder()
                        .launch_template_name(template)
                        .version("$Latest")
                        .build(),
                )
                .set_overrides(Some(
                    overrides
                        .into_iter()
                        .map(|o| {
                            FleetLaunchTemplateOverridesRequest::builder()
                                .instance_type(o.instance_type.as_str().into())
                                .subnet_id(&o.subnet_id)
                                .availability_zone(&o.zone)
                                .image_id(&o.image_id)
                                .priority(o.price)
                                .build()
                        })
                        .collect(),
                ))
                .build()
        })
        .collect();
    let spot = request.capacity_type == labels::CAPACITY_TYPE_SPOT;
    let target = TargetCapacitySpecificationRequest::builder()
        .total_target_capacity(i32::try_from(count).unwrap_or(i32::MAX))
        .default_target_capacity_type(if spot {
            DefaultTargetCapacityType::Spot
        } else if request.capacity_block {
            DefaultTargetCapacityType::CapacityBlock
        } else {
            DefaultTargetCapacityType::OnDemand
        })
        .build();
    let tags = tag_list(&request.tags);
    let mut call = ec2
        .create_fleet()
        .r#type(FleetType::Instant)
        .target_capacity_specification(target)
        .set_launch_template_configs(Some(configs))
        .set_context(request.context.clone());
    call = if spot {
        call.spot_options(
            SpotOptionsRequest::builder()
                .allocation_strategy(if request.prioritized {
                    SpotAllocationStrategy::CapacityOptimizedPrioritized
                } else {
                    SpotAllocationStrategy::PriceCapacityOptimized
                })
                .build(),
        )
    } else if request.capacity_block {
        call
    } else {
        call.on_demand_options(
            OnDemandOptionsRequest::builder()
                .allocation_strategy(if request.prioritized {
                    FleetOnDemandAllocationStrategy::Prioritized
                } else {
                    FleetOnDemandAllocationStrategy::LowestPrice
                })
                .build(),
        )
    };
    for resource in [ResourceType::Instance, ResourceType::Volume, ResourceType::Fleet] {
        call = call.tag_specifications(
            TagSpecification::builder().resource_type(resource).set_tags(Some(tags.clone())).build(),
        );
    }
    let output = call.send().await.map_err(|e| classify(&e))?;
    let mut result = FleetOutput::default();
    for error in output.errors() {
        record_error(request, error, &mut result);
    }
    for launched in output.instances() {
        let overrides = launched.launch_template_and_overrides().and_then(|l| l.overrides());
        let instance_type = launched
            .instance_type()
            .map(|t| t.as_str().to_owned())
            .or_else(|| overrides.and_then(|o| o.instance_type()).map(|t| t.as_str().to_owned()))
            .unwrap_or_default();
        let zone = overrides.and_then(|o| o.availability_zone()).map(str::to_owned).or_else(|| {
            let subnet = overrides.and_then(|o| o.subnet_id())?;
            request.overrides.iter().find(|o| o.subnet_id == subnet).map(|o| o.zone.clone())
        });
        let zone = zone.unwrap_or_default();
        let image = overrides
            .and_then(|o| o.image_id())
            .map(str::to_owned)
            .or_else(|| request.overrides.iter().find(|o| o.instance_type == instance_type).map(|o| o.image_id.clone()))
            .unwrap_or_default();
        for id in launched.instance_ids() {
            result.instances.push((id.clone(), instance_type.clone(), zone.clone(), image.clone()));
        }
    }
    Ok(result)
}

fn record_error(request: &FleetRequest, error: &CreateFleetError, result: &mut FleetOutput) {
    let code = error.error_code().unwrap_or("UnknownError").to_owned();
    let message = error.error_message().unwrap_or_default().to_owned();
    // aws instance.go l. 602-607: a subnet out of addresses is remembered (and sorted last).
    if code == INSUFFICIENT_FREE_ADDRESSES_CODE
        && let Some(subnet) =
            error.launch_template_and_overrides().and_then(|l| l.overrides()).and_then(|o| o.subnet_id())
    {
        result.iced_subnets.push(subnet.to_owned());
    }
    if is_unfulfillable_capacity(&code)
        && let Some(overrides) = error.launch_template_and_overrides().and_then(|l| l.overrides())
    {
        let instance_type = overrides.instance_type().map(|t| t.as_str().to_owned()).unwrap_or_default();
        let zone = overrides.availability_zone().map(str::to_owned).or_else(|| {
            let subnet = overrides.subnet_id()?;
            request.overrides.iter().find(|o| o.subnet_id == subnet).map(|o| o.zone.clone())
        });
        let capacity_type = match error.lifecycle().map(|l| l.as_str()) {
            Some("spot") => labels::CAPACITY_TYPE_SPOT.to_owned(),
            Some(_) => labels::CAPACITY_TYPE_ON_DEMAND.to_owned(),
            None => request.capacity_type.clone(),
        };
        if let Some(zone) = zone {
            result.unavailable.push(UnavailableOffering { code: code.clone(), capacity_type, instance_type, zone });
        }
    }
    result.errors.push((code, message));
}

/// `aws:///<zone>/<instance-id>`.
pub fn provider_id(zone: &str, instance_id: &str) -> String {
    format!("aws:///{zone}/{instance_id}")
}

/// The instance ID in a provider ID.
///
/// # Errors
/// A provider ID not of the `aws:///zone/id` form.
pub fn parse_provider_id(provider_id: &str) -> Result<String, CloudError> {
    provider_id
        .strip_prefix("aws:///")
        .and_then(|rest| rest.rsplit('/').next())
        .filter(|id| id.starts_with("i-"))
        .map(str::to_owned)
        .ok_or_else(|| CloudError::NotFound(format!("provider ID {provider_id:?} is not aws:///<zone>/<instance-id>")))
}

/// An instance as a NodeClaim (providerID, type/zone/capacity-type labels, the nodepool tag,
/// launch time as creationTimestamp, a deletionTimestamp once it is shutting down).
pub fn instance_to_node_claim(instance: &Instance) -> NodeClaim {
    let zone = instance.placement().and_then(|p| p.availability_zone()).unwrap_or_default().to_owned();
    let id = instance.instance_id().unwrap_or_default().to_owned();
    let tags: BTreeMap<String, String> = instance
        .tags()
        .iter()
        .filter_map(|t| Some((t.key()?.to_owned(), t.value().unwrap_or_default().to_owned())))
        .collect();
    let mut node_labels = BTreeMap::new();
    if let Some(t) = instance.instance_type() {
        node_labels.insert(labels::INSTANCE_TYPE_LABEL.to_owned(), t.as_str().to_owned());
    }
    node_labels.insert(labels::TOPOLOGY_ZONE_LABEL.to_owned(), zone.clone());
    // aws `instance/types.go` `NewInstance`: an instance EC2 names a capacity reservation for is
    // reserved capacity.
    let capacity_type = if instance.instance_lifecycle().is_some_and(|l| l.as_str() == "spot") {
        labels::CAPACITY_TYPE_SPOT
    } else if instance.capacity_reservation_id().is_some() {
        labels::CAPACITY_TYPE_RESERVED
    } else {
        labels::CAPACITY_TYPE_ON_DEMAND
    };
    node_labels.insert(labels::CAPACITY_TYPE_LABEL.to_owned(), capacity_type.to_owned());
    if let Some(reservation) = instance.capacity_reservation_id() {
        node_labels.insert(labels::CAPACITY_RESERVATION_ID_LABEL.to_owned(), reservation.to_owned());
    }
    if let Some(pool) = tags.get(labels::NODE_POOL_LABEL) {
        node_labels.insert(labels::NODE_POOL_LABEL.to_owned(), pool.clone());
    }
    let launch = instance.launch_time().and_then(|t| jiff::Timestamp::from_second(t.secs()).ok());
    let state = instance.state().and_then(|s| s.name());
    let terminating = matches!(state, Some(InstanceStateName::ShuttingDown | InstanceStateName::Terminated));
    NodeClaim {
        metadata: ObjectMeta {
            name: tags.get(NODE_CLAIM_TAG).cloned(),
            labels: Some(node_labels),
            creation_timestamp: launch.map(Time),
            deletion_timestamp: if terminating { launch.map(Time) } else { None },
            ..ObjectMeta::default()
        },
        spec: NodeClaimSpec {
            requirements: Vec::new(),
            resources: None,
            taints: None,
            startup_taints: None,
            node_class_ref: crate::apis::NodeClassReference {
                group: labels::AWS_GROUP.to_owned(),
                kind: "EC2NodeClass".to_owned(),
                name: tags.get(labels::EC2_NODE_CLASS_LABEL).cloned().unwrap_or_default(),
            },
            expire_after: None,
            termination_grace_period: None,
        },
        status: Some(NodeClaimStatus {
            provider_id: Some(provider_id(&zone, &id)),
            image_id: instance.image_id().map(str::to_owned),
            ..NodeClaimStatus::default()
        }),
    }
}

/// Live instances by ID (terminated ones are filtered out, so a gone instance reads as absent).
///
/// # Errors
/// The EC2 error, except not-found which reads as an empty result.
pub async fn describe(ec2: &aws_sdk_ec2::Client, ids: &[String]) -> Result<Vec<Instance>, CloudError> {
    let result = ec2.describe_instances().set_instance_ids(Some(ids.to_vec())).filters(live_states()).send().await;
    match result {
        Ok(output) => Ok(output.reservations().iter().flat_map(|r| r.instances().iter().cloned()).collect()),
        Err(error) => match classify(&error) {
            CloudError::NotFound(_) => Ok(Vec::new()),
            other => Err(other),
        },
    }
}

fn live_states() -> aws_sdk_ec2::types::Filter {
    aws_sdk_ec2::types::Filter::builder()
        .name("instance-state-name")
        .values("pending")
        .values("running")
        .values("stopping")
        .values("stopped")
        .values("shutting-down")
        .build()
}

/// Every live instance this cluster's controller launched (GC input).
///
/// # Errors
/// The EC2 error.
pub async fn list(ec2: &aws_sdk_ec2::Client, cluster_name: &str) -> Result<Vec<Instance>, CloudError> {
    let pages = ec2
        .describe_instances()
        .filters(aws_sdk_ec2::types::Filter::builder().name("tag-key").values(labels::NODE_POOL_LABEL).build())
        .filters(aws_sdk_ec2::types::Filter::builder().name("tag-key").values(labels::EC2_NODE_CLASS_LABEL).build())
        .filters(
            aws_sdk_ec2::types::Filter::builder().name(format!("tag:{CLUSTER_NAME_TAG}")).values(cluster_name).build(),
        )
        .filters(live_states())
        .max_results(1000)
        .into_paginator()
        .send()
        .try_collect()
        .await
        .map_err(|e| classify(&e))?;
    Ok(pages.iter().flat_map(|p| p.reservations().iter().flat_map(|r| r.instances().iter().cloned())).collect())
}

/// CreateTags on one instance (aws `instance/instance.go` l. 297-318 `CreateTags`).
///
/// # Errors
/// The EC2 error; `NotFound` when the instance does not exist.
pub async fn create_tags(
    ec2: &aws_sdk_ec2::Client,
    id: &str,
    tags: &BTreeMap<String, String>,
) -> Result<(), CloudError> {
    ec2.create_tags().resources(id).set_tags(Some(tag_list(tags))).send().await.map(|_| ()).map_err(|e| classify(&e))
}

/// Terminates `id`; not-found reads as already gone.
///
/// # Errors
/// The EC2 error, `NotFound` when the instance does not exist.
pub async fn terminate(ec2: &aws_sdk_ec2::Client, id: &str) -> Result<(), CloudError> {
    ec2.terminate_instances().instance_ids(id).send().await.map(|_| ()).map_err(|e| classify(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_round_trip() {
        let id = provider_id("us-east-1a", "i-0123456789abcdef0");
        assert_eq!(id, "aws:///us-east-1a/i-0123456789abcdef0");
        assert_eq!(parse_provider_id(&id).expect("valid"), "i-0123456789abcdef0");
        assert!(parse_provider_id("gce://p/z/n").is_err());
    }

    #[test]
    fn all_ice_errors_mean_insufficient_capacity_otherwise_retry() {
        let ice = FleetResult {
            instance: None,
            unavailable: Vec::new(),
            errors: vec![("InsufficientInstanceCapacity".into(), "no m5.large".into())],
            iced_subnets: Vec::new(),
        };
        assert!(matches!(ice.failure(), CloudError::InsufficientCapacity(_)));
        let mixed = FleetResult {
            instance: None,
            unavailable: Vec::new(),
            errors: vec![
                ("InsufficientInstanceCapacity".into(), "no m5.large".into()),
                ("InvalidParameterValue".into(), "bad".into()),
            ],
            iced_subnets: Vec::new(),
        };
        assert_eq!(mixed.failure(), CloudError::other("InvalidParameterValue", "bad"));
    }
}
