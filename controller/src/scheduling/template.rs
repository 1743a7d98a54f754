//! A NodePool turned into what new NodeClaims start from (core `nodeclaimtemplate.go`): the
//! requirements (pool requirements, template labels, the pool's own label), taints, DaemonSet
//! overhead per instance-type group, and the instance types that could ever satisfy them, cheapest first.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::daemon_overhead::DaemonOverhead;
use super::instance_selection::{MinValuesPolicy, cheapest_price, min_values_shortfall};
use super::pod::SchedulablePod;
use super::requirements::{Requirement, Requirements};
use super::resources::Resources;
use super::snapshot::NodePoolInput;
use super::taints::Taint;
use crate::apis::labels;
use crate::apis::quantity::ResourceList;
use crate::cloudprovider::InstanceType;

/// The resource name of a NodePool's node-count limit.
pub const LIMIT_NODES: &str = "nodes";

/// A NodePool prepared for the pass.
#[derive(Clone, Debug)]
pub struct NodeClaimTemplate {
    /// NodePool name.
    pub node_pool: String,
    /// `spec.weight` (absent = 0).
    pub weight: i32,
    /// Pool requirements ∩ template labels ∩ `karpenter.sh/nodepool In [name]` ∩ the node
    /// class label `In [class name]`.
    pub requirements: Requirements,
    /// Taints pods must tolerate (startup taints are not: something else removes them).
    pub taints: Vec<Taint>,
    /// Feasible instance types, cheapest compatible offering first (ties by name).
    pub instance_types: Vec<Arc<InstanceType>>,
    /// DaemonSet overhead and host ports per instance type (same order as `instance_types`).
    pub daemons: DaemonOverhead,
    /// `spec.limits` in base units (CPU in milli-cores), `None` when unlimited.
    pub limits: Option<BTreeMap<String, i64>>,
}

impl NodeClaimTemplate {
    /// Prepares a NodePool. Fails (the pool is skipped for the pass, with this reason) when its
    /// requirements leave no instance type, or not enough for a `minValues` under Strict.
    pub fn new(
        input: &NodePoolInput,
        daemon_set_pods: &[SchedulablePod],
        policy: MinValuesPolicy,
    ) -> Result<Self, String> {
        let pool = &input.node_pool;
        let name = pool.metadata.name.clone().unwrap_or_default();
        let spec = &pool.spec.template.spec;
        let mut requirements = Requirements::from_node_selector(&spec.requirements);
        requirements.add_all(&Requirements::from_labels(&pool.spec.template_labels()));
        requirements.add(labels::NODE_POOL_LABEL, Requirement::in_values([name.clone()]));
        // The node class label is one of the template's labels too, so a pod selecting it
        // (`karpenter.k8s.aws/ec2nodeclass: default`) is compatible (core
        // `nodeclaimtemplate.go` l. 79-84: labels, nodepool and node class, become requirements).
        let class = pool.node_class_ref();
        requirements.add(
            &labels::node_class_label_key(&class.group, &class.kind),
            Requirement::in_values([class.name.clone()]),
        );
        let taints: Vec<Taint> = spec.taints().iter().map(Taint::from_k8s).collect();
        // DaemonSet overhead per group of instance types that run the same DaemonSets (core
        // `scheduler.go` `buildDaemonOverheadGroups` l. 969-1003): a type whose own overhead
        // leaves no room is dropped, the others keep what their DaemonSets leave free.
        let candidates: Vec<&Arc<InstanceType>> = input
            .instance_types
            .iter()
            .filter(|it| it.requirements.intersects(&requirements).is_ok() && it.has_compatible_offering(&requirements))
            .collect();
        let types: Vec<&InstanceType> = candidates.iter().map(|it| it.as_ref()).collect();
        let (mut daemons, groups) = DaemonOverhead::group(&requirements, &taints, &types, daemon_set_pods);
        let mut priced: Vec<(f64, u32, Arc<InstanceType>)> = candidates
            .into_iter()
            .zip(groups)
            .filter(|(it, group)| daemons.overhead(*group).fits_in(it.allocatable()))
            .map(|(it, group)| (cheapest_price(it, &requirements), group, Arc::clone(it)))
            .collect();
        priced.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.2.name.cmp(&b.2.name)));
        daemons.select(priced.iter().map(|(_, group, it)| (*group, it.as_ref())));
        let instance_types: Vec<Arc<InstanceType>> = priced.into_iter().map(|(_, _, it)| it).collect();
        if instance_types.is_empty() {
            return Err(format!("nodepool {name}: requirements filtered out all instance types"));
        }
        if let Some((key, wanted, found)) = min_values_shortfall(&requirements, instance_types.iter().map(Arc::as_ref))
            && policy == MinValuesPolicy::Strict
        {
            return Err(format!(
                "nodepool {name}: minValues requirement is not met for label {key}: wanted {wanted}, found {found}"
            ));
        }
        let limits = pool.spec.limits.as_ref().map(parse_limits).transpose()?;
        Ok(Self { node_pool: name, weight: pool.spec.weight(), requirements, taints, instance_types, daemons, limits })
    }
}

fn parse_limits(limits: &ResourceList) -> Result<BTreeMap<String, i64>, String> {
    let mut parsed = BTreeMap::new();
    for (name, quantity) in limits {
        let mut scratch = Resources::default();
        let key = if name == LIMIT_NODES { super::resources::RESOURCE_PODS } else { name.as_str() };
        scratch.set_text(key, &quantity.as_text())?;
        parsed.insert(name.clone(), scratch.get(key));
    }
    Ok(parsed)
}

/// The amount of `resource` (a limit name) one node of `capacity` uses: `nodes` counts 1.
pub fn limit_usage(capacity: &Resources, resource: &str) -> i64 {
    if resource == LIMIT_NODES { 1 } else { capacity.get(resource) }
}

/// Whether a node of `capacity` fits in the `remaining` limits (a limit is exceeded only when
/// usage is strictly greater).
pub fn within_limits(capacity: &Resources, remaining: &BTreeMap<String, i64>) -> bool {
    remaining.iter().all(|(resource, left)| limit_usage(capacity, resource) <= *left)
}

/// Every NodePool's template for a pass, highest weight first, and why the others have none.
/// A pure function of the NodePools, the DaemonSet pods and the minValues policy: the
/// consolidation probes of one disruption pass share these and build them once instead of once
/// per probe (filtering every instance type against every NodePool was most of a probe's setup).
#[derive(Clone, Debug)]
pub struct PoolTemplates {
    /// Higher weight first; equal weights by name descending (core nodepool.go).
    pub templates: Vec<NodeClaimTemplate>,
    /// NodePool name → why it yields no template.
    pub node_pool_errors: BTreeMap<String, String>,
    /// Whether some template carries a `PreferNoSchedule` taint (then relaxation may tolerate it).
    pub tolerate_prefer_no_schedule: bool,
}

impl PoolTemplates {
    /// The templates of `node_pools`, in the order the scheduler tries them.
    pub fn new(node_pools: &[NodePoolInput], daemon_set_pods: &[SchedulablePod], policy: MinValuesPolicy) -> Self {
        let mut node_pool_errors = BTreeMap::new();
        let mut templates = Vec::new();
        for pool in node_pools {
            match NodeClaimTemplate::new(pool, daemon_set_pods, policy) {
                Ok(template) => templates.push(template),
                Err(reason) => {
                    node_pool_errors.insert(pool.node_pool.metadata.name.clone().unwrap_or_default(), reason);
                }
            }
        }
        templates.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| b.node_pool.cmp(&a.node_pool)));
        let tolerate_prefer_no_schedule = templates
            .iter()
            .any(|t| t.taints.iter().any(|taint| taint.effect == super::taints::TaintEffect::PreferNoSchedule));
        Self { templates, node_pool_errors, tolerate_prefer_no_schedule }
    }
}
