//! Cloud provider errors, classified the way core reacts to them (karpenter-behaviour.md §3.2).

/// Why a cloud call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CloudError {
    /// Every offering tried was out of capacity (ICE-class codes only): core deletes the
    /// NodeClaim so its pods are re-planned without those offerings.
    #[error("insufficient capacity: {0}")]
    InsufficientCapacity(String),
    /// The instance (or NodeClaim's instance) no longer exists.
    #[error("not found: {0}")]
    NotFound(String),
    /// The EC2NodeClass is missing or not Ready: the NodeClaim is deleted.
    #[error("node class not ready: {0}")]
    NodeClassNotReady(String),
    /// The NodeOverlay store has not evaluated this NodePool yet (core
    /// `cloudprovider.UnevaluatedNodePoolError`, types.go l. 711-733): callers skip the pool.
    #[error("nodepool {0:?} not ready for evaluation (awaiting nodeoverlay evaluation)")]
    UnevaluatedNodePool(String),
    /// Anything else (throttling after retries, 5xx, network, validation): retried with backoff
    /// until the launch timeout. `reason` is CamelCase for the Launched condition.
    #[error("{reason}: {message}")]
    Other {
        /// CamelCase reason (an AWS error code when there is one).
        reason: String,
        /// Detail.
        message: String,
    },
}

impl CloudError {
    /// A generic error with a reason.
    pub fn other(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Other { reason: reason.into(), message: message.into() }
    }

    /// Whether the error means the object is gone.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_))
    }
}
