//! Karpenter's disruption event messages read back into typed reasons. Karpenter surfaces why
//! a node is not disrupted only as `DisruptionBlocked` and `Unconsolidatable` Events on the
//! Node and NodeClaim (core `disruption/events/events.go`) and budget blocks as a
//! `DisruptionBlocked` Event on the NodePool; their messages are its API for this, on EKS as
//! in the simulator, so `explain` reads them the way a user reading `kubectl describe node`
//! would. A message this reader does not know stays [`KarpenterReason::Other`] verbatim.

use std::fmt;

/// One reason Karpenter published for not disrupting a node. Serialised as its variant's
/// name (`"nominated"`) or `{"variant": value}`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum KarpenterReason {
    /// Pods were nominated to the node within the nomination window.
    Nominated,
    /// A PDB allows no eviction of one of the node's pods now.
    PdbPreventsEviction {
        /// The PDB as the message names it.
        pdb: String,
    },
    /// A pod is covered by more than one PDB, which the eviction API refuses.
    MultiplePdbs {
        /// The pod.
        pod: String,
    },
    /// The claim's NodePool does not exist.
    NodePoolNotFound,
    /// The pods would not all fit on other nodes (plus at most one new node).
    PodsFitNowhereElse {
        /// The first pod that would not schedule, and why.
        detail: String,
    },
    /// Removing the node would need more than one replacement.
    TooManyReplacements(usize),
    /// No instance type that fits is cheaper at its worst launch price.
    NoCheaperReplacement,
    /// Spot would replace spot and the `SpotToSpotConsolidation` gate is off.
    SpotToSpotDisabled,
    /// No cheaper spot type fits.
    NoCheaperSpot,
    /// A single spot node needs 15 cheaper spot types; this many were found.
    TooFewCheaperSpotTypes(usize),
    /// `consolidateAfter` has not elapsed since the node's last pod change.
    NotConsolidatableYet,
    /// The pool's `consolidateAfter` is `Never`.
    ConsolidationDisabled,
    /// The pool consolidates only empty nodes.
    WhenEmptyPolicy,
    /// A command was built but failed validation 15 s later.
    RejectedByValidation {
        /// Why.
        detail: String,
    },
    /// A command in flight was aborted (its replacement failed to launch or initialize).
    Aborted {
        /// Why.
        detail: String,
    },
    /// The NodePool's budgets allow no disruption for this reason now.
    BudgetBlocked {
        /// `Underutilized`, `Empty` or `Drifted`.
        reason: String,
    },
    /// A message this reader does not know.
    Other(String),
}

impl KarpenterReason {
    /// Reads one `DisruptionBlocked`/`Unconsolidatable` message.
    pub fn parse(message: &str) -> Self {
        let quoted = || message.split('"').nth(1).unwrap_or_default().to_string();
        let number = |prefix: &str| {
            message.strip_prefix(prefix).and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        };
        if message.contains("is nominated for a pending pod") {
            Self::Nominated
        } else if message.starts_with("pdb ") && message.ends_with("prevents pod evictions") {
            Self::PdbPreventsEviction { pdb: quoted() }
        } else if message.contains("has multiple PDBs") {
            Self::MultiplePdbs { pod: quoted() }
        } else if message.starts_with("NodePool ") && message.ends_with(" not found") {
            Self::NodePoolNotFound
        } else if let Some(detail) = message.strip_prefix("not all pods would schedule, ") {
            Self::PodsFitNowhereElse { detail: detail.to_string() }
        } else if let Some(n) = number("Can't remove without creating ") {
            Self::TooManyReplacements(n)
        } else if message.starts_with("Can't replace with a cheaper node") {
            Self::NoCheaperReplacement
        } else if message.starts_with("SpotToSpotConsolidation is disabled") {
            Self::SpotToSpotDisabled
        } else if message.starts_with("Can't replace spot node with a cheaper spot node") {
            Self::NoCheaperSpot
        } else if message.starts_with("SpotToSpotConsolidation requires") {
            let got = message.rsplit("got ").next().and_then(|n| n.trim().parse().ok()).unwrap_or(0);
            Self::TooFewCheaperSpotTypes(got)
        } else if message.contains("not consolidatable yet") {
            Self::NotConsolidatableYet
        } else if message.starts_with("consolidation is disabled") {
            Self::ConsolidationDisabled
        } else if message.contains("consolidationPolicy is WhenEmpty") {
            Self::WhenEmptyPolicy
        } else if let Some(detail) = message.strip_prefix("Disruption command rejected by validation: ") {
            Self::RejectedByValidation { detail: detail.to_string() }
        } else if let Some(detail) = message.strip_prefix("Disruption command aborted: ") {
            Self::Aborted { detail: detail.to_string() }
        } else if let Some(rest) = message.strip_prefix("No allowed disruptions for disruption reason ") {
            Self::BudgetBlocked { reason: rest.split(' ').next().unwrap_or_default().to_string() }
        } else {
            Self::Other(message.to_string())
        }
    }
}

impl fmt::Display for KarpenterReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nominated => write!(f, "nominated for a pending pod"),
            Self::PdbPreventsEviction { pdb } => write!(f, "PDB {pdb} allows no eviction now"),
            Self::MultiplePdbs { pod } => write!(f, "pod {pod} is covered by more than one PDB"),
            Self::NodePoolNotFound => write!(f, "its NodePool is gone"),
            Self::PodsFitNowhereElse { detail } => write!(f, "its pods fit nowhere else: {detail}"),
            Self::TooManyReplacements(n) => write!(f, "removing it needs {n} new nodes (at most 1 allowed)"),
            Self::NoCheaperReplacement => write!(f, "no cheaper replacement at the worst launch price"),
            Self::SpotToSpotDisabled => write!(f, "spot-to-spot consolidation is off (feature gate)"),
            Self::NoCheaperSpot => write!(f, "no cheaper spot replacement"),
            Self::TooFewCheaperSpotTypes(n) => write!(f, "only {n} cheaper spot types (15 needed)"),
            Self::NotConsolidatableYet => write!(f, "consolidateAfter has not elapsed"),
            Self::ConsolidationDisabled => write!(f, "consolidateAfter: Never"),
            Self::WhenEmptyPolicy => write!(f, "consolidationPolicy WhenEmpty and the node has pods"),
            Self::RejectedByValidation { detail } => write!(f, "a command failed validation: {detail}"),
            Self::Aborted { detail } => write!(f, "a disruption command was aborted: {detail}"),
            Self::BudgetBlocked { reason } => write!(f, "the NodePool's budget allows no {reason} disruption now"),
            Self::Other(message) => write!(f, "{message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KarpenterReason as R;

    #[test]
    fn every_message_the_controller_publishes_is_read() {
        let cases = [
            ("state node is nominated for a pending pod", R::Nominated),
            ("pdb \"web/web-pdb\" prevents pod evictions", R::PdbPreventsEviction { pdb: "web/web-pdb".into() }),
            ("pod \"a/b\" has multiple PDBs [\"a/x\", \"a/y\"]", R::MultiplePdbs { pod: "a/b".into() }),
            ("NodePool \"gone\" not found", R::NodePoolNotFound),
            ("Can't remove without creating 2 candidates", R::TooManyReplacements(2)),
            ("Can't replace with a cheaper node", R::NoCheaperReplacement),
            ("Can't replace with a cheaper node, minValues", R::NoCheaperReplacement),
            ("SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node", R::SpotToSpotDisabled),
            ("Can't replace spot node with a cheaper spot node", R::NoCheaperSpot),
            (
                "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 4",
                R::TooFewCheaperSpotTypes(4),
            ),
            ("node is not consolidatable yet", R::NotConsolidatableYet),
            ("consolidation is disabled (consolidateAfter: Never)", R::ConsolidationDisabled),
            ("NodePool consolidationPolicy is WhenEmpty", R::WhenEmptyPolicy),
            (
                "No allowed disruptions for disruption reason Drifted due to blocking budget",
                R::BudgetBlocked { reason: "Drifted".into() },
            ),
        ];
        for (message, want) in cases {
            assert_eq!(R::parse(message), want, "{message}");
        }
        assert!(matches!(R::parse("not all pods would schedule, a/b => no fit"), R::PodsFitNowhereElse { .. }));
        assert_eq!(R::parse("something new"), R::Other("something new".into()));
    }
}
