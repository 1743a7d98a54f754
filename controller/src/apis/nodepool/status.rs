//! `status` of a NodePool, its condition types and its Ready roll-up.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::NodePool;
use crate::apis::condition::{Condition, StatusConditions};
use crate::apis::quantity::ResourceList;

/// NodePool condition: the NodePool passed Karpenter's runtime validation.
pub const CONDITION_VALIDATION_SUCCEEDED: &str = "ValidationSucceeded";
/// NodePool condition: the referenced node class exists and is Ready.
pub const CONDITION_NODE_CLASS_READY: &str = "NodeClassReady";
/// NodePool condition: recent launches and registrations mostly succeeded (§1.1).
pub const CONDITION_NODE_REGISTRATION_HEALTHY: &str = "NodeRegistrationHealthy";

/// `status` of a NodePool.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolStatus {
    /// Total capacity of the pool's nodes, as counted by the counter controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceList>,
    /// Ready, ValidationSucceeded, NodeClassReady, NodeRegistrationHealthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Generation of the node class the NodeRegistrationHealthy condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_class_observed_generation: Option<i64>,
    /// Number of nodes in the pool (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<i64>,
}

impl StatusConditions for NodePool {
    const READY_DEPENDENTS: &'static [&'static str] = &[CONDITION_VALIDATION_SUCCEEDED, CONDITION_NODE_CLASS_READY];

    fn conditions(&self) -> &[Condition] {
        self.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default()
    }

    fn conditions_mut(&mut self) -> &mut Vec<Condition> {
        self.status.get_or_insert_with(Default::default).conditions.get_or_insert_with(Vec::new)
    }

    fn generation(&self) -> Option<i64> {
        self.metadata.generation
    }
}
