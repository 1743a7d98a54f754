//! Why a node is voluntarily disrupted: the reasons disruption methods report and that a
//! NodePool's disruption budgets can be scoped to.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A disruption reason a budget can be scoped to (and that disruption methods report).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
pub enum DisruptionReason {
    /// Consolidation of a node whose pods fit elsewhere or on a cheaper replacement.
    Underutilized,
    /// Emptiness: a node running no reschedulable pods.
    Empty,
    /// Drift: the node no longer matches its NodePool or node class.
    Drifted,
}

impl DisruptionReason {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Underutilized => "Underutilized",
            Self::Empty => "Empty",
            Self::Drifted => "Drifted",
        }
    }
}
