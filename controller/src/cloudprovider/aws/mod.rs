//! The AWS cloud provider (aws:pkg/cloudprovider): instance types and prices from EC2, launches
//! through CreateFleet with launch templates, and Describe/Terminate for the NodeClaim
//! lifecycle and garbage collection. Everything goes through the injected `aws-sdk-ec2` and
//! `aws-sdk-ssm` clients, so the same code talks to AWS, to moto, or to our fake cloud.

pub mod ami_requirements;
pub mod capacity;
pub mod capacity_reservations;
pub mod describe_batcher;
pub mod discovered_capacity;
pub mod discovery;
pub mod drift;
pub mod errors;
pub mod fleet_batcher;
pub mod instance_cache;
pub mod instance_status;
pub mod instance_types;
pub mod instances;
pub mod launch_plan;
pub mod launch_template;
pub mod price_list;
pub mod pricing;
pub mod reservation_capacity_type;
pub mod reservation_expiration;
pub mod reserved_launch;
pub mod tagging;
pub mod user_data;

#[cfg(test)]
mod launch_plan_tests;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use crate::apis::ec2nodeclass::{AMIFamily, EC2NodeClassStatus};
use crate::apis::labels;
use crate::apis::{EC2NodeClass, NodeClaim, NodePool};
use crate::cloudprovider::{CloudError, CloudProvider, InstanceType, UnavailableOfferings};
use crate::runtime::{Settings, SharedClock};
use crate::scheduling::requirements::Requirements;

use self::discovered_capacity::DiscoveredCapacity;
use self::instance_types::InstanceTypeProvider;
use self::instances::{FleetOverride, FleetRequest};
pub use self::launch_plan::LaunchPlan;
use self::launch_template::{LaunchTemplateInput, LaunchTemplateProvider};
use self::pricing::PricingProvider;

/// At most this many instance types go into one CreateFleet call (cheapest first).
pub const MAX_FLEET_INSTANCE_TYPES: usize = 60;

/// The AWS implementation of [`CloudProvider`].
pub struct AwsCloudProvider {
    ec2: aws_sdk_ec2::Client,
    ssm: aws_sdk_ssm::Client,
    /// The Price List API (on-demand prices); never called in an isolated VPC.
    price_list: aws_sdk_pricing::Client,
    settings: Arc<Settings>,
    unavailable: UnavailableOfferings,
    pricing: PricingProvider,
    instance_types: InstanceTypeProvider,
    /// Memory capacities registered nodes reported (the `providers.instancetype.capacity`
    /// controller fills it).
    discovered: DiscoveredCapacity,
    clock: SharedClock,
    launch_templates: LaunchTemplateProvider,
    fleets: fleet_batcher::FleetBatcher,
    reads: instance_cache::InstanceCache,
    /// Free addresses per subnet, from discovery minus launches since.
    subnet_ips: Mutex<BTreeMap<String, i64>>,
    /// How many instances each capacity reservation can still take.
    reservations: capacity_reservations::Availability,
    /// Serialises the first catalog load.
    loading: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for AwsCloudProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCloudProvider").field("region", &self.settings.region).finish_non_exhaustive()
    }
}

impl AwsCloudProvider {
    /// A provider over the given clients.
    pub fn new(
        ec2: aws_sdk_ec2::Client,
        ssm: aws_sdk_ssm::Client,
        price_list: aws_sdk_pricing::Client,
        settings: Arc<Settings>,
        clock: SharedClock,
    ) -> Self {
        Self {
            fleets: fleet_batcher::FleetBatcher::new(ec2.clone()),
            reads: instance_cache::InstanceCache::new(describe_batcher::DescribeBatcher::new(ec2.clone())),
            ec2,
            ssm,
            price_list,
            settings,
            unavailable: UnavailableOfferings::new(clock.clone()),
            pricing: PricingProvider::new(),
            instance_types: InstanceTypeProvider::default(),
            discovered: DiscoveredCapacity::new(clock.clone()),
            clock: clock.clone(),
            launch_templates: LaunchTemplateProvider::new(clock),
            subnet_ips: Mutex::default(),
            reservations: capacity_reservations::Availability::default(),
            loading: tokio::sync::Mutex::new(()),
        }
    }

    /// Reloads DescribeInstanceTypes/Offerings; keeps the previous data on failure.
    ///
    /// # Errors
    /// The EC2 error.
    pub async fn refresh_instance_types(&self) -> Result<usize, CloudError> {
        let catalog = instance_types::describe_catalog(&self.ec2).await?;
        let count = catalog.types.len();
        self.instance_types.set_catalog(catalog);
        Ok(count)
    }

    /// Reloads spot prices; keeps the previous prices on failure.
    ///
    /// # Errors
    /// The EC2 error.
    pub async fn refresh_spot_prices(&self, clock: &SharedClock) -> Result<usize, CloudError> {
        self.pricing.refresh_spot(&self.ec2, clock).await
    }

    /// Reloads on-demand prices ([`PricingProvider::refresh_on_demand`]).
    ///
    /// # Errors
    /// The Price List API's error, or no price found.
    pub async fn refresh_on_demand_prices(&self) -> Result<price_list::OnDemandPrices, CloudError> {
        self.pricing.refresh_on_demand(&self.price_list, &self.settings.region, self.settings.isolated_vpc).await
    }

    async fn ensure_catalog(&self) -> Result<(), CloudError> {
        if self.instance_types.is_loaded() {
            return Ok(());
        }
        let _guard = self.loading.lock().await;
        if !self.instance_types.is_loaded() {
            self.refresh_instance_types().await?;
        }
        Ok(())
    }

    /// The class's instance types ([`InstanceTypeProvider::resolve`]).
    fn resolve_instance_types(&self, class: &EC2NodeClass) -> Result<Vec<Arc<InstanceType>>, CloudError> {
        let now = self.clock.now();
        self.instance_types.resolve(
            class,
            &self.settings,
            &self.pricing,
            &self.unavailable,
            (&self.discovered, &self.reservations),
            now,
        )
    }

    /// `UpdateInstanceTypeCapacityFromNode` (aws `instancetype.go:475-500`): records a registered
    /// node's memory capacity for its type when its claim runs the class's current AMI.
    pub fn update_instance_type_capacity_from_node(
        &self,
        node: &k8s_openapi::api::core::v1::Node,
        claim: &NodeClaim,
        class: &EC2NodeClass,
    ) -> discovered_capacity::Recorded {
        self.discovered.update_from_node(node, claim, class)
    }

    /// Resolves the class's selectors into the status fields (subnets, security groups, AMIs,
    /// instance profile); conditions are the caller's. `k8s_version` is `major.minor`.
    ///
    /// # Errors
    /// The AWS error of a lookup; the caller reports it on the matching condition.
    pub async fn resolve_node_class(
        &self,
        class: &EC2NodeClass,
        k8s_version: &str,
    ) -> Result<EC2NodeClassStatus, CloudError> {
        let subnets = discovery::subnets(&self.ec2, &class.spec.subnet_selector_terms).await?;
        {
            let mut ips = self.subnet_ips.lock().expect("subnet ips");
            for subnet in &subnets {
                ips.insert(subnet.subnet.id.clone(), subnet.available_ips);
            }
        }
        let security_groups = discovery::security_groups(&self.ec2, &class.spec.security_group_selector_terms).await?;
        let amis = discovery::amis(&self.ec2, &self.ssm, &class.spec, k8s_version).await?;
        // Without IAM calls the profile is the one EC2 creates alongside a role of the same name.
        let instance_profile = class.spec.instance_profile.clone().or_else(|| class.spec.role.clone());
        // aws `nodeclass/capacityreservation.go` l. 55-95: only with the ReservedCapacity gate
        // (`controller.go` l. 152); no reservation found leaves the field empty.
        let terms = class.spec.capacity_reservation_selector_terms.clone().unwrap_or_default();
        let capacity_reservations = if self.settings.feature_gates.reserved_capacity && !terms.is_empty() {
            let now = std::time::SystemTime::from(self.clock.now());
            let found = capacity_reservations::resolve(&self.ec2, &terms, &self.reservations, now).await?;
            (!found.is_empty()).then_some(found)
        } else {
            None
        };
        Ok(EC2NodeClassStatus {
            subnets: Some(subnets.into_iter().map(|s| s.subnet).collect()),
            security_groups: Some(security_groups),
            capacity_reservations,
            amis: Some(amis),
            instance_profile,
            conditions: None,
        })
    }

    /// The subnet in `zone` with the most free addresses.
    fn subnet_for_zone(&self, status: &EC2NodeClassStatus, zone: &str) -> Option<String> {
        let ips = self.subnet_ips.lock().expect("subnet ips");
        status
            .subnets
            .iter()
            .flatten()
            .filter(|s| s.zone == zone)
            .max_by(|a, b| {
                let free = |id: &str| ips.get(id).copied().unwrap_or(0);
                free(&a.id).cmp(&free(&b.id)).then_with(|| b.id.cmp(&a.id))
            })
            .map(|s| s.id.clone())
    }

    async fn create_claim(
        &self,
        claim: &NodeClaim,
        class: &EC2NodeClass,
        types: &[Arc<InstanceType>],
        retried: bool,
    ) -> Result<NodeClaim, CloudError> {
        let status = class.status.clone().unwrap_or_default();
        if status.subnets.as_ref().is_none_or(Vec::is_empty) {
            return Err(CloudError::NodeClassNotReady("EC2NodeClass has no resolved subnets".into()));
        }
        let requirements = Requirements::from_node_selector(&claim.spec.requirements);
        let live = reserved_launch::with_live_counts(types, &self.reservations);
        let mut plan = LaunchPlan::new(claim, &requirements, &live, &self.instance_types)?;
        let reserved = plan.capacity_type == labels::CAPACITY_TYPE_RESERVED;
        let blocks = reserved_launch::capacity_blocks(&status);
        let capacity_block = reserved && reserved_launch::one_reservation_type(&mut plan, &blocks);
        let family = class.spec.ami_family().unwrap_or(AMIFamily::AL2023);
        let bootstrap = user_data::Bootstrap {
            cluster_name: self.settings.cluster_name.clone(),
            cluster_endpoint: self.settings.cluster_endpoint.clone(),
            ca_bundle: self.settings.cluster_ca_bundle.clone(),
            cluster_dns: class
                .spec
                .kubelet
                .as_ref()
                .and_then(|k| k.cluster_dns.as_ref())
                .and_then(|dns| dns.first().cloned())
                .or_else(|| self.settings.cluster_dns.clone()),
            labels: claim.metadata.labels.clone().unwrap_or_default(),
            taints: claim
                .spec
                .taints
                .iter()
                .flatten()
                .chain(claim.spec.startup_taints.iter().flatten())
                .map(|t| match &t.value {
                    Some(value) => format!("{}={value}:{}", t.key, t.effect),
                    None => format!("{}:{}", t.key, t.effect),
                })
                .collect(),
            max_pods: class.spec.kubelet.as_ref().and_then(|k| k.max_pods),
            custom: class.spec.user_data.clone(),
        };
        let user_data = bootstrap.render(family);
        let mut template_tags = BTreeMap::from([
            ("karpenter.k8s.aws/cluster".to_owned(), self.settings.cluster_name.clone()),
            (labels::EC2_NODE_CLASS_LABEL.to_owned(), class.metadata.name.clone().unwrap_or_default()),
        ]);
        template_tags.extend(class.spec.tags.clone().unwrap_or_default());
        let metadata = class.spec.metadata_options();
        let block_devices = class.spec.block_device_mappings.clone().unwrap_or_default();
        let security_group_ids: Vec<String> = status.security_groups.iter().flatten().map(|g| g.id.clone()).collect();
        let instance_profile = status.instance_profile.clone().unwrap_or_default();
        let mut overrides = Vec::new();
        let mut templates: BTreeMap<String, String> = BTreeMap::new();
        for (instance_type, offerings) in &plan.types {
            let Some(ami) =
                status.amis.iter().flatten().find(|ami| {
                    ami_requirements::ami_requirements(ami).compatible(&instance_type.requirements).is_ok()
                })
            else {
                continue;
            };
            for offering in offerings {
                let Some(subnet_id) = self.subnet_for_zone(&status, &offering.zone) else { continue };
                // One template per AMI, and per reservation for a reserved launch.
                let reservation = offering.reservation_id.clone().filter(|_| reserved);
                let key = format!("{}|{}", ami.id, reservation.as_deref().unwrap_or_default());
                let template = match templates.get(&key) {
                    Some(name) => name.clone(),
                    None => {
                        let input = LaunchTemplateInput {
                            image_id: ami.id.clone(),
                            user_data: user_data.clone(),
                            security_group_ids: security_group_ids.clone(),
                            instance_profile: instance_profile.clone(),
                            metadata: metadata.clone(),
                            block_devices: block_devices.clone(),
                            monitoring: class.spec.detailed_monitoring.unwrap_or(false),
                            tags: template_tags.clone(),
                            capacity_reservation: reservation
                                .clone()
                                .map(|id| (id.clone(), blocks.get(&id).copied().unwrap_or(false))),
                        };
                        let name = self.launch_templates.ensure(&self.ec2, &input).await?;
                        templates.insert(key, name.clone());
                        name
                    }
                };
                overrides.push(FleetOverride {
                    instance_type: instance_type.name.clone(),
                    zone: offering.zone.clone(),
                    subnet_id,
                    launch_template: template.clone(),
                    image_id: ami.id.clone(),
                    price: offering.price,
                });
            }
        }
        if overrides.is_empty() {
            return Err(CloudError::InsufficientCapacity(
                "no instance type has an AMI and a subnet for an available offering".into(),
            ));
        }
        let pool = claim.metadata.labels.as_ref().and_then(|l| l.get(labels::NODE_POOL_LABEL)).cloned();
        let mut tags = BTreeMap::from([
            (format!("kubernetes.io/cluster/{}", self.settings.cluster_name), "owned".to_owned()),
            (instances::CLUSTER_NAME_TAG.to_owned(), self.settings.cluster_name.clone()),
            (labels::NODE_POOL_LABEL.to_owned(), pool.unwrap_or_default()),
            (labels::EC2_NODE_CLASS_LABEL.to_owned(), class.metadata.name.clone().unwrap_or_default()),
        ]);
        tags.extend(class.spec.tags.clone().unwrap_or_default());
        let request = FleetRequest {
            capacity_type: plan.capacity_type.clone(),
            capacity_block,
            overrides,
            tags,
            context: class.spec.context.clone(),
            prioritized: claim
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(labels::PRICE_OVERLAY_APPLIED_ANNOTATION)),
        };
        let held = if reserved { reserved_launch::hold(&plan, &self.reservations) } else { Vec::new() };
        let result = self.fleets.create(request.clone()).await;
        let used = match &result {
            Ok(r) => r.instance.as_ref().and_then(|(_, t, z, _)| reserved_launch::reservation_of(&plan, t, z)),
            Err(_) => None,
        };
        reserved_launch::release(&held, used.as_deref(), &self.reservations);
        let template_missing = match &result {
            Err(CloudError::NotFound(message)) => message.contains("LaunchTemplate"),
            Ok(result) => {
                result.instance.is_none()
                    && result
                        .errors
                        .iter()
                        .any(|(code, _)| errors::LAUNCH_TEMPLATE_NOT_FOUND_CODES.contains(&code.as_str()))
            }
            Err(_) => false,
        };
        if template_missing && !retried {
            // A template deleted behind our back: forget what we knew, recreate, retry once.
            tracing::info!(templates = ?templates.values().collect::<Vec<_>>(), "launch template missing; recreating");
            self.launch_templates.invalidate_all();
            return Box::pin(self.create_claim(claim, class, types, true)).await;
        }
        let result = result?;
        if reserved {
            reserved_launch::note_refusals(&plan, &result, &self.reservations);
        }
        for offering in result.unavailable.iter().filter(|_| !reserved) {
            self.unavailable.mark_unavailable(
                &offering.code,
                &offering.capacity_type,
                &offering.instance_type,
                &offering.zone,
            );
        }
        note_fleet_errors(&self.unavailable, &self.subnet_ips, &plan.capacity_type, &result);
        let Some((instance_id, instance_type, zone, image_id)) = result.instance.clone() else {
            return Err(result.failure());
        };
        if let Some(subnet) = request.overrides.iter().find(|o| o.zone == zone).map(|o| o.subnet_id.clone())
            && let Some(free) = self.subnet_ips.lock().expect("subnet ips").get_mut(&subnet)
        {
            *free -= 1;
        }
        let chosen = plan.types.iter().map(|(t, _)| t).find(|t| t.name == instance_type).ok_or_else(|| {
            CloudError::other("FleetLaunchFailed", format!("fleet launched unrequested {instance_type}"))
        })?;
        let mut launched =
            launched_claim(claim, chosen, &self.settings.region, &zone, &plan.capacity_type, &instance_id, &image_id);
        // The used reservation's slot was taken by `hold` (aws `MarkLaunched`).
        let reservation = used;
        reserved_launch::label_reservation(
            &mut launched,
            reservation.as_deref().map(|id| (id, blocks.get(id).copied().unwrap_or(false))),
        );
        // The class's static hash at launch, which NodeClassDrift compares against later.
        let annotations = launched.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations
            .insert(labels::EC2_NODE_CLASS_HASH_ANNOTATION.to_owned(), crate::apis::hash::ec2_node_class_hash(class));
        annotations.insert(
            labels::EC2_NODE_CLASS_HASH_VERSION_ANNOTATION.to_owned(),
            labels::EC2_NODE_CLASS_HASH_VERSION.to_owned(),
        );
        Ok(launched)
    }

    /// AWS drift of a launched claim: the static class hash first, then the instance (from
    /// DescribeInstances) against the class's resolved AMIs, security groups and subnets.
    async fn drift_of(
        &self,
        claim: &NodeClaim,
        node_class: &EC2NodeClass,
    ) -> Result<Option<crate::cloudprovider::DriftReason>, CloudError> {
        if let Some(reason) = drift::static_drift(claim, node_class) {
            return Ok(Some(reason));
        }
        let provider_id = claim
            .provider_id()
            .ok_or_else(|| CloudError::NotFound(format!("NodeClaim {:?} has no providerID", claim.metadata.name)))?;
        let id = instances::parse_provider_id(provider_id)?;
        let found = self.reads.get(&id, instance_cache::Read::Cached).await?;
        let instance = found.ok_or_else(|| CloudError::NotFound(format!("instance {id} not found")))?;
        let facts = drift::InstanceFacts::of(&instance);
        self.ensure_catalog().await?;
        let types = self.resolve_instance_types(node_class)?;
        let type_name = instance.instance_type().map(|t| t.as_str().to_owned()).unwrap_or_default();
        let instance_type = types.iter().find(|t| t.name == type_name).ok_or_else(|| {
            CloudError::other("InstanceTypeNotFound", format!("finding node instance type {type_name:?}"))
        })?;
        drift::dynamic_drift(&facts, node_class, instance_type)
    }
}

/// What a fleet's errors teach beyond ICE'd offerings (aws `instance.go` v1.14.1
/// `updateUnavailableOfferingsCache`): a subnet out of addresses gets zero free addresses, so it
/// is chosen last (l. 602-607, subnet provider `UpdateICEdSubnet` l. 237-241); a spot launch that
/// may not create the spot service-linked role marks the whole `spot` capacity type unavailable
/// (l. 640-643).
pub fn note_fleet_errors(
    unavailable: &UnavailableOfferings,
    subnet_ips: &Mutex<BTreeMap<String, i64>>,
    capacity_type: &str,
    result: &instances::FleetResult,
) {
    if !result.iced_subnets.is_empty() {
        let mut ips = subnet_ips.lock().expect("subnet ips");
        for subnet in &result.iced_subnets {
            ips.insert(subnet.clone(), 0);
        }
    }
    if capacity_type != labels::CAPACITY_TYPE_RESERVED
        && result.errors.iter().any(|(code, _)| code == errors::SPOT_SERVICE_LINKED_ROLE_CODE)
    {
        unavailable.mark_capacity_type_unavailable(labels::CAPACITY_TYPE_SPOT);
    }
}

/// The NodeClaim as launched: the type's single-valued labels plus zone, region and capacity
/// type, providerID, image, and capacity/allocatable from the type's estimate.
pub fn launched_claim(
    claim: &NodeClaim,
    instance_type: &InstanceType,
    region: &str,
    zone: &str,
    capacity_type: &str,
    instance_id: &str,
    image_id: &str,
) -> NodeClaim {
    let mut launched = claim.clone();
    let mut node_labels = instance_type.requirements.single_valued_labels();
    node_labels.insert(labels::TOPOLOGY_ZONE_LABEL.to_owned(), zone.to_owned());
    node_labels.insert(labels::TOPOLOGY_REGION_LABEL.to_owned(), region.to_owned());
    node_labels.insert(labels::CAPACITY_TYPE_LABEL.to_owned(), capacity_type.to_owned());
    node_labels.insert(labels::INSTANCE_TYPE_LABEL.to_owned(), instance_type.name.clone());
    let mut all = claim.metadata.labels.clone().unwrap_or_default();
    all.extend(node_labels);
    launched.metadata.labels = Some(all);
    let mut status = launched.status.clone().unwrap_or_default();
    status.provider_id = Some(instances::provider_id(zone, instance_id));
    status.image_id = Some(image_id.to_owned());
    status.capacity = Some(instance_type.capacity.to_resource_list());
    status.allocatable = Some(instance_type.allocatable().to_resource_list());
    launched.status = Some(status);
    launched
}

impl CloudProvider for AwsCloudProvider {
    fn create<'a>(
        &'a self,
        claim: &'a NodeClaim,
        node_class: &'a EC2NodeClass,
        instance_types: &'a [Arc<InstanceType>],
    ) -> BoxFuture<'a, Result<NodeClaim, CloudError>> {
        Box::pin(self.create_claim(claim, node_class, instance_types, false))
    }

    fn get<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<NodeClaim, CloudError>> {
        Box::pin(async move {
            let id = instances::parse_provider_id(provider_id)?;
            let found = self.reads.get(&id, instance_cache::Read::Cached).await?;
            found
                .as_ref()
                .map(instances::instance_to_node_claim)
                .ok_or_else(|| CloudError::NotFound(format!("instance {id} not found")))
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<NodeClaim>, CloudError>> {
        Box::pin(async move {
            let found = instances::list(&self.ec2, &self.settings.cluster_name).await?;
            self.reads.listed(&found);
            Ok(found.iter().map(instances::instance_to_node_claim).collect())
        })
    }

    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(async move {
            let provider_id = claim.status.as_ref().and_then(|s| s.provider_id.as_deref()).ok_or_else(|| {
                CloudError::NotFound(format!(
                    "NodeClaim {} has no providerID",
                    claim.metadata.name.as_deref().unwrap_or_default()
                ))
            })?;
            let id = instances::parse_provider_id(provider_id)?;
            let Some(instance) = self.reads.get(&id, instance_cache::Read::Fresh).await? else {
                return Err(CloudError::NotFound(format!("instance {id} not found")));
            };
            let shutting_down = instance
                .state()
                .and_then(|s| s.name())
                .is_some_and(|s| *s == aws_sdk_ec2::types::InstanceStateName::ShuttingDown);
            if !shutting_down {
                instances::terminate(&self.ec2, &id).await?;
                // aws `capacityreservation/types.go` l. 150-164 `MarkTerminated`.
                if let Some(reservation) = instance.capacity_reservation_id() {
                    self.reservations.mark_terminated(reservation);
                }
                tracing::info!(instance = %id, "terminating instance");
            }
            Ok(())
        })
    }

    fn instance_types<'a>(
        &'a self,
        _node_pool: &'a NodePool,
        node_class: &'a EC2NodeClass,
    ) -> BoxFuture<'a, Result<Vec<Arc<InstanceType>>, CloudError>> {
        Box::pin(async move {
            self.ensure_catalog().await?;
            self.resolve_instance_types(node_class)
        })
    }

    fn unavailable_offerings(&self) -> &UnavailableOfferings {
        &self.unavailable
    }

    fn is_drifted<'a>(
        &'a self,
        claim: &'a NodeClaim,
        _node_pool: &'a NodePool,
        node_class: &'a EC2NodeClass,
    ) -> BoxFuture<'a, Result<Option<crate::cloudprovider::DriftReason>, CloudError>> {
        Box::pin(self.drift_of(claim, node_class))
    }

    fn repair_policies(&self) -> Vec<crate::cloudprovider::RepairPolicy> {
        crate::cloudprovider::repair::aws_repair_policies()
    }
}
