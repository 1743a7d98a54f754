//! `spec.disruption` of a NodePool: when Karpenter may voluntarily disrupt nodes and which
//! consolidation it does; the budgets inside it are in `budget.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::budget::Budget;
use crate::apis::duration::NillableDuration;

/// Default `consolidateAfter` (the CRD's default `disruption` object).
pub const DEFAULT_CONSOLIDATE_AFTER: &str = "0s";

/// `spec.disruption`: when and how fast Karpenter may voluntarily disrupt nodes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Disruption {
    /// How long a node must be consolidatable before consolidation acts; `Never` disables it.
    pub consolidate_after: NillableDuration,
    /// Which nodes consolidation may act on (default `WhenEmptyOrUnderutilized`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidation_policy: Option<ConsolidationPolicy>,
    /// Concurrency limits on disruption (default one budget of `10%`; at most 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budgets: Option<Vec<Budget>>,
}

/// `spec.disruption.consolidationPolicy`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum ConsolidationPolicy {
    /// Only empty nodes are consolidated.
    WhenEmpty,
    /// Empty and underutilized nodes are consolidated (the default).
    #[default]
    WhenEmptyOrUnderutilized,
    /// Underutilized nodes are consolidated when the savings justify the disruption (v1.14).
    Balanced,
}
