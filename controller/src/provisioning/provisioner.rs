//! The provisioning pass (core provisioner.go): batch pending pods, run the scheduling
//! simulation over the cluster state, create the NodeClaims it plans, and nominate the existing
//! nodes it fills.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client};

use super::input;
use super::node_claim_template::to_node_claim;
use super::pending::is_provisionable;
use crate::apis::condition::StatusConditions;
use crate::apis::validation::ValidationErrors;
use crate::apis::{EC2NodeClass, NodeClaim, NodePool, labels};
use crate::cloudprovider::CloudProvider;
use crate::runtime::{Event, EventRecorder, EventType, Settings, SharedClock};
use crate::scheduling::{NodePoolInput, Resources, Results, SchedulerOptions, SchedulingInput, schedule};
use crate::state::{Cluster, Snapshot};

/// A pod's `FailedScheduling` event, published at most every 5 minutes per pod (core
/// `provisioning/scheduling/events.go` `PodFailedToScheduleEvent`: `DedupeTimeout: 5m`).
fn failed_to_schedule(pod: &Pod, error: &dyn std::fmt::Display) -> Event {
    Event::about(pod, EventType::Warning, "FailedScheduling", format!("Failed to schedule pod, {error}"))
        .deduped_for(std::time::Duration::from_secs(5 * 60))
}

/// Everything the provisioner needs.
#[derive(Clone)]
pub struct Provisioner {
    /// API server.
    pub client: Client,
    /// Cluster state.
    pub cluster: Arc<Cluster>,
    /// Cloud.
    pub cloud: Arc<dyn CloudProvider>,
    /// Wall clock.
    pub clock: SharedClock,
    /// Events.
    pub events: EventRecorder,
    /// Settings (batch windows, policies).
    pub settings: Settings,
}

/// What one provisioning pass did, for logs, metrics and tests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassSummary {
    /// Pods considered.
    pub pods: usize,
    /// NodeClaims created (names).
    pub created: Vec<String>,
    /// Pods that fit nowhere.
    pub unschedulable: usize,
}

/// Why a NodePool cannot launch nodes now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolUnusable {
    /// The pool has a deletionTimestamp.
    #[error("NodePool is being deleted")]
    Deleting,
    /// A static pool keeps its replica count; the provisioner never launches for it.
    #[error("static NodePool")]
    Static,
    /// The pool fails Karpenter's runtime validation.
    #[error("NodePool is invalid: {0}")]
    Invalid(#[source] ValidationErrors),
    /// The EC2NodeClass it references does not exist.
    #[error("EC2NodeClass {0:?} not found")]
    NodeClassNotFound(String),
    /// The EC2NodeClass it references is not Ready (unresolved subnets, AMIs...).
    #[error("EC2NodeClass {0:?} is not ready")]
    NodeClassNotReady(String),
}

/// Whether a pool can provision: not deleting, not static, valid, its node class Ready.
///
/// # Errors
/// Why the pool cannot launch now.
pub fn usable_pool<'a>(snapshot: &'a Snapshot, pool: &NodePool) -> Result<&'a EC2NodeClass, PoolUnusable> {
    if pool.metadata.deletion_timestamp.is_some() {
        return Err(PoolUnusable::Deleting);
    }
    if pool.spec.is_static() {
        return Err(PoolUnusable::Static);
    }
    pool.runtime_validate().map_err(PoolUnusable::Invalid)?;
    let reference = pool.node_class_ref();
    let class = snapshot
        .node_classes
        .get(&reference.name)
        .ok_or_else(|| PoolUnusable::NodeClassNotFound(reference.name.clone()))?;
    if !class.is_ready() {
        return Err(PoolUnusable::NodeClassNotReady(reference.name.clone()));
    }
    Ok(class)
}

/// Pools in Karpenter's order: weight descending, then name descending.
pub fn ordered_pools(snapshot: &Snapshot) -> Vec<Arc<NodePool>> {
    let mut pools: Vec<Arc<NodePool>> = snapshot.node_pools.values().cloned().collect();
    pools.sort_by(|a, b| b.spec.weight().cmp(&a.spec.weight()).then_with(|| b.metadata.name.cmp(&a.metadata.name)));
    pools
}

/// What a pool's nodes use now (capacity of every claim not being deleted, plus `nodes`), for
/// the limit check and the pool's status. A deleting claim is left out, as core's pool
/// resources leave out a state node `MarkedForDeletion` (`state/cluster.go`
/// `updateNodePoolResources`, l. 806 and 810; read by `provisioning/provisioner.go` l. 479 and
/// `nodepool/counter/controller.go` l. 88): its capacity is on its way out.
pub fn pool_usage(snapshot: &Snapshot, pool_name: &str) -> Resources {
    let mut usage = Resources::default();
    let mut nodes = 0;
    for claim in snapshot.node_claims.values() {
        if claim.node_pool_name() != Some(pool_name) || claim.metadata.deletion_timestamp.is_some() {
            continue;
        }
        nodes += 1;
        let capacity = claim
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .or_else(|| claim.spec.resources.as_ref().and_then(|r| r.requests.as_ref()))
            .and_then(|c| Resources::from_resource_list(c).ok())
            .unwrap_or_default();
        usage.add(&capacity);
    }
    usage.set("nodes", nodes);
    usage
}

/// The first limit `usage` strictly exceeds, if any.
pub fn exceeded_limit(pool: &NodePool, usage: &Resources) -> Option<String> {
    let limits = Resources::from_resource_list(pool.spec.limits.as_ref()?).ok()?;
    ["cpu", "memory", "ephemeral-storage", "pods", "nodes"]
        .into_iter()
        .map(str::to_owned)
        .chain(limits.extended.keys().cloned())
        .find(|name| {
            let declared = pool.spec.limits.as_ref().is_some_and(|l| l.contains_key(name));
            declared && usage.get(name) > limits.get(name)
        })
}

impl Provisioner {
    /// The trigger set: provisionable pods by UID, and nodes tainted disrupted.
    pub fn triggers(snapshot: &Snapshot) -> BTreeSet<String> {
        let pods = snapshot.pods.values().filter(|p| is_provisionable(p)).filter_map(|p| p.metadata.uid.clone());
        let nodes = snapshot.nodes.values().filter(|n| has_disrupted_taint(n)).filter_map(|n| n.metadata.name.clone());
        pods.chain(nodes.map(|n| format!("node/{n}"))).collect()
    }

    /// Builds the scheduling input from state: nodes are read before pods, so a pod that bound
    /// meanwhile is seen as pending (under-provision rather than over-provision, core does too).
    pub async fn build_input(&self, snapshot: &Snapshot) -> (SchedulingInput, BTreeMap<String, Arc<NodePool>>) {
        // State is read before the instance types are listed, as it was read before them.
        let memory = self.cluster.memory();
        let now = self.clock.now();
        let mut pools = BTreeMap::new();
        let mut node_pools = Vec::new();
        for pool in ordered_pools(snapshot) {
            let name = pool.metadata.name.clone().unwrap_or_default();
            let class = match usable_pool(snapshot, &pool) {
                Ok(class) => class,
                Err(reason) => {
                    tracing::debug!(nodepool = %name, %reason, "skipping NodePool");
                    continue;
                }
            };
            match self.cloud.instance_types(&pool, class).await {
                Ok(types) => node_pools.push(NodePoolInput { node_pool: (*pool).clone(), instance_types: types }),
                // core provisioner.go l. 297-301: a pool NodeOverlays have not been evaluated
                // for yet is skipped quietly until they have.
                Err(crate::cloudprovider::CloudError::UnevaluatedNodePool(_)) => {
                    tracing::debug!(nodepool = %name, "skipping, awaiting nodeoverlay evaluation");
                }
                Err(error) => tracing::warn!(nodepool = %name, %error, "listing instance types"),
            }
            pools.insert(name, pool);
        }
        let options = SchedulerOptions {
            preference_policy: self.settings.preference_policy,
            min_values_policy: self.settings.min_values_policy,
            ..SchedulerOptions::default()
        };
        let (input, unparsed) = input::scheduling_input(snapshot, &memory, now, node_pools, options);
        for (pod, error) in unparsed {
            self.events.publish(failed_to_schedule(&pod, &error));
        }
        (input, pools)
    }

    /// One provisioning pass.
    pub async fn provision(&self) -> PassSummary {
        let snapshot = self.cluster.snapshot();
        let (input, pools) = self.build_input(&snapshot).await;
        if input.pods.is_empty() {
            return PassSummary::default();
        }
        let results = schedule(&input);
        let created = self.apply(&snapshot, &pools, &results).await;
        PassSummary { pods: input.pods.len(), created, unschedulable: results.pod_errors.len() }
    }

    /// Creates the planned claims and records nominations and events.
    async fn apply(
        &self,
        snapshot: &Snapshot,
        pools: &BTreeMap<String, Arc<NodePool>>,
        results: &Results,
    ) -> Vec<String> {
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let now = self.clock.now();
        let mut created = Vec::new();
        let mut held: BTreeMap<String, String> = BTreeMap::new();
        let mut usage: BTreeMap<String, Resources> = BTreeMap::new();
        for planned in &results.new_node_claims {
            let Some(pool) = pools.get(&planned.node_pool) else { continue };
            let used =
                usage.entry(planned.node_pool.clone()).or_insert_with(|| pool_usage(snapshot, &planned.node_pool));
            if let Some(limit) = exceeded_limit(pool, used) {
                self.events.publish(Event::about(
                    pool.as_ref(),
                    EventType::Warning,
                    "FailedScheduling",
                    format!(
                        "all available instance types exceed limits for nodepool: {:?} ({limit})",
                        planned.node_pool
                    ),
                ));
                continue;
            }
            let claim = to_node_claim(pool, planned);
            match api.create(&PostParams::default(), &claim).await {
                Ok(claim) => {
                    let name = claim.metadata.name.clone().unwrap_or_default();
                    let largest = planned
                        .instance_type_options
                        .iter()
                        .map(|it| it.capacity.clone())
                        .reduce(|mut a, b| {
                            a.max_with(&b);
                            a
                        })
                        .unwrap_or_default();
                    used.add(&largest);
                    used.set("nodes", used.get("nodes") + 1);
                    tracing::info!(
                        nodeclaim = %name,
                        nodepool = %planned.node_pool,
                        pods = planned.pods.len(),
                        instance_types = planned.instance_type_options.len(),
                        "created nodeclaim"
                    );
                    self.cluster.record_created_node_claim(claim);
                    self.cluster.nominate(&name, now);
                    self.nominate_pods(snapshot, &planned.pods, &format!("nodeclaim/{name}"));
                    held.extend(planned.pods.iter().map(|pod| (pod.clone(), name.clone())));
                    created.push(name);
                }
                Err(error) => tracing::warn!(nodepool = %planned.node_pool, %error, "creating nodeclaim"),
            }
        }
        // Claims not initialized yet, by their existing node's name (the Node's once registered).
        let in_flight_by_node: BTreeMap<String, String> = input::existing_names_of_claims(snapshot)
            .into_iter()
            .filter(|(claim, _)| snapshot.node_claims.get(claim).is_some_and(|c| !c.is_condition_true("Initialized")))
            .map(|(claim, node)| (node, claim))
            .collect();
        for (node, pods) in &results.existing_node_assignments {
            self.cluster.nominate(node, now);
            let target =
                if snapshot.nodes.contains_key(node) { format!("node/{node}") } else { format!("nodeclaim/{node}") };
            self.nominate_pods(snapshot, pods, &target);
            if let Some(claim) = in_flight_by_node.get(node) {
                held.extend(pods.iter().map(|pod| (pod.clone(), claim.clone())));
            }
        }
        self.cluster.hold_pods(held);
        for (pod_key, error) in &results.pod_errors {
            if let Some(pod) = snapshot.pods.get(pod_key) {
                self.events.publish(failed_to_schedule(pod, error));
            }
        }
        created
    }

    fn nominate_pods(&self, snapshot: &Snapshot, pods: &[String], target: &str) {
        for key in pods {
            if let Some(pod) = snapshot.pods.get(key) {
                self.events.publish(
                    Event::about(
                        pod.as_ref(),
                        EventType::Normal,
                        // Upstream dedupes `Nominated` per pod for 2 min and rate-limits it (5/s,
                        // burst 10; scheduling/events.go NominatePodEvent). Dovetail publishes every
                        // nomination: a deliberate deviation in the event stream only (no decision
                        // reads events), so that the simulator's overProvisioning oracle can tell a
                        // re-nomination to another claim from an abandoned one.
                        "Nominated",
                        format!("Pod should schedule on: {target}"),
                    )
                    .never_deduped(),
                );
            }
        }
    }
}

/// Whether the node carries `karpenter.sh/disrupted:NoSchedule`.
pub fn has_disrupted_taint(node: &k8s_openapi::api::core::v1::Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|taints| taints.iter().any(|t| t.key == labels::DISRUPTED_TAINT_KEY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_exceeded_only_strictly() {
        let pool: NodePool = serde_saphyr::from_str(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  limits: {cpu: 8, nodes: 2}
  template:
    spec:
      requirements: []
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"#,
        )
        .expect("nodepool");
        let mut usage = Resources::cpu_memory(8000, 0);
        usage.set("nodes", 2);
        assert_eq!(exceeded_limit(&pool, &usage), None);
        usage.cpu_milli = 8001;
        assert_eq!(exceeded_limit(&pool, &usage).as_deref(), Some("cpu"));
        usage.cpu_milli = 0;
        usage.set("nodes", 3);
        assert_eq!(exceeded_limit(&pool, &usage).as_deref(), Some("nodes"));
    }
}
