//! `faults: [{nodeNetworkBlocked: ...}]` — the nodes' network cannot reach the cluster
//! endpoint, so instances launch, run and bill but their kubelets never register: the
//! failure Karpenter's adoption guides warn about most, for the two network causes (the
//! third, an IAM role without an access entry, is `accessEntryMissing`).
//!
//! - `cause: subnet` with `zones`: the EC2NodeClass's subnets in those zones are private
//!   subnets with no route to the endpoint (no NAT gateway, no VPC endpoint). Only instances
//!   launched there are cut off, so Karpenter's registration timeout and relaunch loop
//!   show in one zone while the others work.
//! - `cause: securityGroup`: the node security group lacks the rules the cluster needs (the
//!   cluster security group's ingress from the nodes), so no new node anywhere can join.
//!
//! The kubelets keep retrying, so an instance cut off joins as soon as the fault heals —
//! inside its claim's registration timeout, or never if Karpenter gave up on it first.
//!
//! ```yaml
//! faults:
//!   - at: 0s
//!     for: 30m
//!     nodeNetworkBlocked: {cause: subnet, zones: [us-east-1a]}
//!   - at: 12m
//!     for: 8m
//!     nodeNetworkBlocked: {cause: securityGroup}
//! ```

use serde::{Deserialize, Serialize};

use super::error::FieldError;

/// Why the nodes' network cannot reach the cluster endpoint, and where.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeNetworkSpec {
    /// `subnet` or `securityGroup` ([`CAUSES`]).
    pub cause: String,
    /// With `cause: subnet`: the zones whose subnets are cut off (`random`: one drawn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
}

/// The causes [`NodeNetworkSpec::cause`] accepts.
pub const CAUSES: &[&str] = &["subnet", "securityGroup"];

impl NodeNetworkSpec {
    /// Checks the cause, and that `zones` is given (and known) exactly for `subnet`.
    pub fn validate(&self, kind: &str, known_zones: &[String]) -> Result<(), FieldError> {
        match self.cause.as_str() {
            "subnet" if self.zones.is_empty() => {
                Err(FieldError::new(format!("{kind}.zones"), "name the zones whose subnets are cut off"))
            }
            "subnet" => {
                for (i, z) in self.zones.iter().enumerate() {
                    if z != "random" && !known_zones.contains(z) {
                        return Err(FieldError::new(
                            format!("{kind}.zones[{i}]"),
                            format!("unknown zone `{z}`, expected one of random, {}", known_zones.join(", ")),
                        ));
                    }
                }
                Ok(())
            }
            "securityGroup" if !self.zones.is_empty() => Err(FieldError::new(
                format!("{kind}.zones"),
                "a security group is not zonal: `zones` is for `cause: subnet`",
            )),
            "securityGroup" => Ok(()),
            other => Err(FieldError::new(
                format!("{kind}.cause"),
                format!("unknown cause `{other}`, expected one of {}", CAUSES.join(", ")),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cause: &str, zones: &[&str]) -> NodeNetworkSpec {
        NodeNetworkSpec { cause: cause.into(), zones: zones.iter().map(|z| z.to_string()).collect() }
    }

    fn error(s: NodeNetworkSpec) -> String {
        s.validate("nodeNetworkBlocked", &["us-east-1a".into(), "us-east-1b".into()]).unwrap_err().to_string()
    }

    #[test]
    fn zones_are_required_for_subnets_and_refused_for_security_groups() {
        let zones = ["us-east-1a".to_string()];
        assert!(spec("subnet", &["us-east-1a", "random"]).validate("k", &zones).is_ok());
        assert!(spec("securityGroup", &[]).validate("k", &zones).is_ok());
        let e = error(spec("subnet", &[]));
        assert!(e.contains("nodeNetworkBlocked.zones") && e.contains("name the zones"), "{e}");
        let e = error(spec("subnet", &["us-east-1a", "eu-west-1a"]));
        assert!(e.contains("nodeNetworkBlocked.zones[1]") && e.contains("unknown zone `eu-west-1a`"), "{e}");
        let e = error(spec("securityGroup", &["us-east-1a"]));
        assert!(e.contains("nodeNetworkBlocked.zones") && e.contains("not zonal"), "{e}");
        let e = error(spec("route", &[]));
        assert!(e.contains("nodeNetworkBlocked.cause") && e.contains("subnet, securityGroup"), "{e}");
    }
}
