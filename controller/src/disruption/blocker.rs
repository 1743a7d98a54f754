//! Why a node is not a disruption candidate at all (core `ValidatePodsDisruptable`,
//! `pdb.Limits.CanEvictPods` and the state-node checks): each cause is a variant, and its
//! message is the `DisruptionBlocked` event users see.

/// What keeps a node out of disruption (a `DisruptionBlocked` event).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Blocker {
    /// The claim's NodePool is gone.
    #[error("NodePool {pool:?} not found")]
    NodePoolNotFound {
        /// The pool the claim names.
        pool: String,
    },
    /// Pods were nominated to the node or claim within the nomination window.
    #[error("state node is nominated for a pending pod")]
    Nominated,
    /// The node carries `karpenter.sh/do-not-disrupt: "true"`.
    #[error("disruption is blocked through the \"karpenter.sh/do-not-disrupt\" annotation")]
    DoNotDisruptNode,
    /// A pod on the node carries an active `karpenter.sh/do-not-disrupt` annotation.
    #[error("pod {pod:?} has \"karpenter.sh/do-not-disrupt\" annotation")]
    DoNotDisruptPod {
        /// The pod, `namespace/name`.
        pod: String,
    },
    /// A pod is selected by more than one PDB, which the eviction API refuses.
    #[error("pod {pod:?} has multiple PDBs {pdbs:?}")]
    MultiplePdbs {
        /// The pod, `namespace/name`.
        pod: String,
        /// The PDBs, `namespace/name`.
        pdbs: Vec<String>,
    },
    /// A PDB allows no disruption of one of the node's pods now.
    #[error("pdb {pdb:?} prevents pod evictions")]
    PdbPreventsEviction {
        /// The PDB, `namespace/name`.
        pdb: String,
    },
}
