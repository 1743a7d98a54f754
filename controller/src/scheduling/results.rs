//! The outcome of a scheduling pass: NodeClaims to create, pods placed on existing nodes, and a
//! reason for every pod that fits nowhere.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::instance_selection::{MAX_INSTANCE_TYPES_TO_FLEET, MinValuesPolicy, truncate_instance_types};
use super::requirements::{Requirement, Requirements};
use super::resources::Resources;
use crate::apis::labels;
use crate::cloudprovider::InstanceType;

/// A NodeClaim the provisioner should create.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedNodeClaim {
    /// Owning NodePool.
    pub node_pool: String,
    /// The placeholder hostname pods were spread against (not a real label; dropped at create).
    pub hostname_placeholder: String,
    /// Final requirements (no hostname); [`Self::node_claim_requirements`] adds the
    /// instance-type list when the NodeClaim is created, as core's `ToNodeClaim` does.
    pub requirements: Requirements,
    /// Feasible instance types, cheapest compatible offering first, at most 600.
    pub instance_type_options: Vec<Arc<InstanceType>>,
    /// Keys (`namespace/name`) of the pods it was planned for, in placement order.
    pub pods: Vec<String>,
    /// DaemonSet overhead plus pod requests (the NodeClaim's `resources.requests`).
    pub requests: Resources,
    /// minValues was relaxed under BestEffort (`karpenter.sh/nodeclaim-min-values-relaxed`).
    pub min_values_relaxed: bool,
}

impl PlannedNodeClaim {
    /// The requirements for the NodeClaim object: [`Self::requirements`] plus
    /// `node.kubernetes.io/instance-type In [options]`.
    pub fn node_claim_requirements(&self) -> Requirements {
        let mut requirements = self.requirements.clone();
        requirements.add(
            labels::INSTANCE_TYPE_LABEL,
            Requirement::in_values(self.instance_type_options.iter().map(|it| it.name.clone())),
        );
        requirements
    }

    /// The instance types to send to CreateFleet: the cheapest 60 (§2.5), minValues re-checked.
    ///
    /// # Errors
    /// Under Strict minValues, when 60 types no longer span enough values.
    pub fn launch_options(&self, policy: MinValuesPolicy) -> Result<(Vec<Arc<InstanceType>>, bool), String> {
        truncate_instance_types(&self.instance_type_options, &self.requirements, MAX_INSTANCE_TYPES_TO_FLEET, policy)
    }
}

/// Everything a scheduling pass decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Results {
    /// NodeClaims to create, in the order they were planned.
    pub new_node_claims: Vec<PlannedNodeClaim>,
    /// Existing or in-flight node name → pod keys placed (nominated) there.
    pub existing_node_assignments: BTreeMap<String, Vec<String>>,
    /// Pod key → why it could not be placed anywhere.
    pub pod_errors: BTreeMap<String, String>,
    /// NodePool name → why it was skipped for the whole pass (no instance type left, ...).
    pub node_pool_errors: BTreeMap<String, String>,
}

impl Results {
    /// How many pods were placed.
    pub fn scheduled_pod_count(&self) -> usize {
        self.new_node_claims.iter().map(|c| c.pods.len()).sum::<usize>()
            + self.existing_node_assignments.values().map(Vec::len).sum::<usize>()
    }
}
