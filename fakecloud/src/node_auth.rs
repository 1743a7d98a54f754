//! EKS node authentication: whether a kubelet may register its Node.
//!
//! Two things keep a kubelet out: its network cannot reach the cluster endpoint (a subnet
//! without a route to it, a security group without the cluster's rules), or the endpoint
//! refuses its credentials, as described next. Either way the kubelet keeps retrying.
//!
//! A node's kubelet authenticates to the EKS API server with the IAM role of its
//! instance profile; EKS admits it only if the cluster has an access entry (or an
//! `aws-auth` mapping) for that role. When the entry is missing — deleted, `aws-auth`
//! overwritten, or an EC2NodeClass that names the wrong role — the instance runs and bills
//! but its Node never appears, which is the failure the Karpenter troubleshooting guide
//! ("Node NotReady / nodes not joining") lists first. The kubelet keeps retrying, so it
//! registers once the entry exists.
//!
//! The cloud keeps what EKS's authenticator log would show: every instance refused, when it
//! was first refused, and whether it joined later.

use std::collections::BTreeMap;
use std::time::Duration;

/// One instance whose kubelet was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Why it was refused, first: its role had no access entry, or its subnet or
    /// security group could not reach the endpoint.
    pub cause: String,
    /// When it was first refused.
    pub first_at: Duration,
    /// When it finally registered (after the access entry came back), if it did.
    pub joined_at: Option<Duration>,
}

/// The refusals, by instance id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAuth {
    refused: BTreeMap<String, Refusal>,
}

impl NodeAuth {
    /// Records a refused attempt (the first one per instance counts).
    pub fn refuse(&mut self, instance_id: &str, cause: &str, now: Duration) -> bool {
        let first = !self.refused.contains_key(instance_id);
        self.refused.entry(instance_id.to_string()).or_insert_with(|| Refusal {
            cause: cause.to_string(),
            first_at: now,
            joined_at: None,
        });
        first
    }

    /// Records that an instance registered; only matters for one refused before.
    pub fn joined(&mut self, instance_id: &str, now: Duration) {
        if let Some(r) = self.refused.get_mut(instance_id) {
            r.joined_at.get_or_insert(now);
        }
    }

    /// Every refused instance.
    pub fn refusals(&self) -> &BTreeMap<String, Refusal> {
        &self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_refusal_counts_and_a_late_join_is_kept() {
        let mut auth = NodeAuth::default();
        assert!(auth.refuse("i-1", "Role", Duration::from_secs(5)));
        assert!(!auth.refuse("i-1", "Role", Duration::from_secs(6)));
        auth.joined("i-2", Duration::from_secs(7));
        assert_eq!(auth.refusals().len(), 1);
        auth.joined("i-1", Duration::from_secs(9));
        let r = &auth.refusals()["i-1"];
        assert_eq!((r.first_at, r.joined_at), (Duration::from_secs(5), Some(Duration::from_secs(9))));
    }
}
