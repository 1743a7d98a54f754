//! A disruption command: which candidates go, which replacements are launched first, and why.

use super::candidates::Candidate;
use crate::apis::nodepool::DisruptionReason;
use crate::scheduling::PlannedNodeClaim;

/// The disruption method that produced a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    /// Empty nodes, deleted together.
    Emptiness,
    /// Drifted nodes, one at a time, replaced as the simulation needs.
    Drift,
    /// Several underutilized nodes at once (binary search on a prefix).
    MultiNode,
    /// One underutilized node.
    SingleNode,
}

impl Method {
    /// The disruption reason the method reports (budgets, conditions, metrics).
    pub fn reason(self) -> DisruptionReason {
        match self {
            Self::Emptiness => DisruptionReason::Empty,
            Self::Drift => DisruptionReason::Drifted,
            Self::MultiNode | Self::SingleNode => DisruptionReason::Underutilized,
        }
    }

    /// The `consolidation_type` metric label (`empty`, `multi`, `single`, or `""` for drift).
    pub fn consolidation_type(self) -> &'static str {
        match self {
            Self::Emptiness => "empty",
            Self::Drift => "",
            Self::MultiNode => "multi",
            Self::SingleNode => "single",
        }
    }

    /// Whether the command is re-validated after [`super::VALIDATION_DELAY`] (drift is not).
    pub fn validates(self) -> bool {
        self != Self::Drift
    }
}

/// Delete only, or launch replacements first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Every pod fits on other nodes.
    Delete,
    /// New NodeClaims are launched and initialized before the candidates go.
    Replace,
}

impl Decision {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::Replace => "replace",
        }
    }
}

/// What one disruption loop decided to do.
#[derive(Clone, Debug)]
pub struct Command {
    /// The method that found it.
    pub method: Method,
    /// The nodes to disrupt.
    pub candidates: Vec<Candidate>,
    /// NodeClaims to launch (and wait for) before deleting the candidates.
    pub replacements: Vec<PlannedNodeClaim>,
}

impl Command {
    /// Delete or replace.
    pub fn decision(&self) -> Decision {
        if self.replacements.is_empty() { Decision::Delete } else { Decision::Replace }
    }

    /// The disruption reason.
    pub fn reason(&self) -> DisruptionReason {
        self.method.reason()
    }

    /// Σ candidate prices minus the cheapest price of each replacement's first option.
    pub fn savings(&self) -> f64 {
        let before: f64 = self.candidates.iter().filter_map(|c| c.price).sum();
        let after: f64 = self
            .replacements
            .iter()
            .filter_map(|r| r.instance_type_options.first().and_then(|it| it.cheapest_offering(&r.requirements)))
            .map(|o| o.price)
            .sum();
        before - after
    }

    /// Candidate claim names, for logs and events.
    pub fn candidate_names(&self) -> Vec<&str> {
        self.candidates.iter().map(|c| c.name.as_str()).collect()
    }
}
