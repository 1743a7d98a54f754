//! Synthetic clusters for the disruption unit tests and benchmark: NodePools over the fake
//! cloud's instance types ([`crate::cloudprovider::fake`]), initialized NodeClaims with their
//! Nodes, and pods, assembled straight into a [`Snapshot`] (no API server), the same shape
//! the watchers produce.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

use super::input::{DisruptionInput, DisruptionOptions};
use crate::apis::labels;
use crate::apis::{NodeClaim, NodePool};
use crate::cloudprovider::InstanceType;
use crate::cloudprovider::fake;
use crate::scheduling::NodePoolInput;
use crate::state::{KINDS, Memory, Snapshot};

/// A synthetic cluster under construction.
#[derive(Clone, Debug)]
pub struct SyntheticCluster {
    /// The watched objects.
    pub snapshot: Snapshot,
    /// Usable pools with their instance types.
    pub pools: Vec<NodePoolInput>,
    /// The controller's memory.
    pub memory: Memory,
    /// When the nodes were created (and initialized).
    pub epoch: jiff::Timestamp,
}

/// A NodePool named `name` with `disruption` as its `spec.disruption` block and `requirements`.
pub fn node_pool(name: &str, disruption: serde_json::Value, requirements: serde_json::Value) -> NodePool {
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "1"},
        "spec": {
            "template": {"spec": {
                "requirements": requirements,
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "expireAfter": "Never"
            }},
            "disruption": disruption
        }
    }))
    .expect("synthetic NodePool")
}

impl SyntheticCluster {
    /// An empty, synced cluster at `epoch`.
    pub fn new(epoch: jiff::Timestamp) -> Self {
        let mut snapshot = Snapshot::default();
        snapshot.synced.extend(KINDS);
        Self { snapshot, pools: Vec::new(), memory: Memory::default(), epoch }
    }

    /// Adds a pool offering `types` (use [`fake::instance_types`]).
    pub fn add_pool(&mut self, pool: NodePool, types: Vec<Arc<InstanceType>>) {
        let name = pool.metadata.name.clone().unwrap_or_default();
        self.snapshot.node_pools.insert(name, Arc::new(pool.clone()));
        self.pools.push(NodePoolInput { node_pool: pool, instance_types: types });
    }

    /// The instance type `name` of pool `pool`.
    pub fn instance_type(&self, pool: &str, name: &str) -> Arc<InstanceType> {
        self.pools
            .iter()
            .find(|p| p.node_pool.metadata.name.as_deref() == Some(pool))
            .and_then(|p| p.instance_types.iter().find(|it| it.name == name))
            .cloned()
            .unwrap_or_else(|| panic!("pool {pool} offers no {name}"))
    }

    /// Adds an initialized, Consolidatable NodeClaim `name` with a Ready Node of the same name.
    pub fn add_node(&mut self, name: &str, pool: &str, instance_type: &str, zone: &str, capacity_type: &str) {
        let it = self.instance_type(pool, instance_type);
        let mut node_labels = it.requirements.single_valued_labels();
        node_labels.insert(labels::NODE_POOL_LABEL.into(), pool.into());
        node_labels.insert(labels::INSTANCE_TYPE_LABEL.into(), it.name.clone());
        node_labels.insert(labels::TOPOLOGY_ZONE_LABEL.into(), zone.into());
        node_labels.insert(labels::CAPACITY_TYPE_LABEL.into(), capacity_type.into());
        node_labels.insert(labels::HOSTNAME_LABEL.into(), name.into());
        node_labels.insert(labels::NODE_INITIALIZED_LABEL.into(), "true".into());
        let provider_id = format!("aws:///{zone}/i-{name}");
        let at = json!(self.epoch.to_string());
        let allocatable = serde_json::to_value(it.allocatable().to_resource_list()).expect("allocatable");
        let capacity = serde_json::to_value(it.capacity.to_resource_list()).expect("capacity");
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": node_labels, "creationTimestamp": at},
            "spec": {"providerID": provider_id},
            "status": {"allocatable": allocatable, "capacity": capacity,
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .expect("synthetic Node");
        let condition =
            |type_: &str| json!({"type": type_, "status": "True", "reason": type_, "lastTransitionTime": at});
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": node_labels, "creationTimestamp": at, "uid": format!("uid-{name}")},
            "spec": {"requirements": [], "expireAfter": "Never",
                     "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"providerID": provider_id, "nodeName": name, "allocatable": allocatable, "capacity": capacity,
                       "conditions": [condition("Launched"), condition("Registered"), condition("Initialized"),
                                      condition("Ready"), condition("Consolidatable")]}
        }))
        .expect("synthetic NodeClaim");
        self.snapshot.nodes.insert(name.into(), Arc::new(node));
        self.snapshot.node_claims.insert(name.into(), Arc::new(claim));
    }

    /// Adds the NodeClaim `name` the disruption queue (or the provisioner) would create for
    /// `planned`: launched with its first (cheapest) instance type option's allocatable, not
    /// registered, so the scheduler sees an uninitialized in-flight node.
    pub fn add_in_flight_claim(&mut self, name: &str, planned: &crate::scheduling::PlannedNodeClaim) {
        use crate::apis::condition::StatusConditions;
        let pool = self.snapshot.node_pools.get(&planned.node_pool).expect("pool of the planned claim").clone();
        let mut claim = crate::provisioning::node_claim_template::to_node_claim(&pool, planned);
        claim.metadata.name = Some(name.into());
        claim.metadata.uid = Some(format!("uid-{name}"));
        claim.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(self.epoch));
        let it = planned.instance_type_options.first().expect("an instance type option");
        claim.status = Some(
            serde_json::from_value(json!({
                "providerID": format!("aws:///zone/i-{name}"),
                "allocatable": it.allocatable().to_resource_list(),
                "capacity": it.capacity.to_resource_list(),
            }))
            .expect("synthetic NodeClaim status"),
        );
        claim.set_true("Launched", &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(self.epoch));
        self.snapshot.node_claims.insert(name.into(), Arc::new(claim));
    }

    /// Adds a running pod `name` (namespace `default`, label `app`) on `node`, or a pending
    /// unschedulable one when `node` is `None`; returns its key.
    pub fn add_pod(&mut self, name: &str, app: &str, node: Option<&str>, cpu_milli: i64, memory_mib: i64) -> String {
        let mut pod = json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": {"app": app},
                         "creationTimestamp": self.epoch.to_string(),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app,
                                              "uid": format!("rs-{app}"), "controller": true}]},
            "spec": {"containers": [{"name": "app", "image": "pause",
                     "resources": {"requests": {"cpu": format!("{cpu_milli}m"), "memory": format!("{memory_mib}Mi")}}}]},
            "status": {"phase": "Running", "startTime": self.epoch.to_string()}
        });
        match node {
            Some(node) => pod["spec"]["nodeName"] = json!(node),
            None => {
                pod["status"] = json!({"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]});
            }
        }
        let pod: Pod = serde_json::from_value(pod).expect("synthetic Pod");
        let key = format!("default/{name}");
        self.snapshot.pods.insert(key.clone(), Arc::new(pod));
        key
    }

    /// Changes a stored pod (annotations, priority, ...).
    pub fn edit_pod(&mut self, key: &str, edit: impl FnOnce(&mut Pod)) {
        let pod = self.snapshot.pods.get_mut(key).unwrap_or_else(|| panic!("no pod {key}"));
        edit(Arc::make_mut(pod));
    }

    /// Changes a stored NodeClaim.
    pub fn edit_claim(&mut self, name: &str, edit: impl FnOnce(&mut NodeClaim)) {
        let claim = self.snapshot.node_claims.get_mut(name).unwrap_or_else(|| panic!("no claim {name}"));
        edit(Arc::make_mut(claim));
    }

    /// Changes a stored Node.
    pub fn edit_node(&mut self, name: &str, edit: impl FnOnce(&mut Node)) {
        let node = self.snapshot.nodes.get_mut(name).unwrap_or_else(|| panic!("no node {name}"));
        edit(Arc::make_mut(node));
    }

    /// The decision input at `now` with `options`.
    pub fn input(&self, now: jiff::Timestamp, options: DisruptionOptions) -> DisruptionInput {
        DisruptionInput::new(
            self.snapshot.clone(),
            self.memory.clone(),
            self.pools.clone(),
            Default::default(),
            now,
            options,
        )
    }
}

/// The fake cloud's first `count` instance types (type `i` has `i + 1` vCPUs).
pub fn fake_types(count: usize) -> Vec<Arc<InstanceType>> {
    fake::instance_types(count)
}
