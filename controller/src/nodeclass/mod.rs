//! EC2NodeClass status (aws:pkg/controllers/nodeclass): resolves subnets, security groups and
//! AMIs through the AWS provider, sets `SubnetsReady`, `SecurityGroupsReady`, `AMIsReady`,
//! `InstanceProfileReady`, `ValidationSucceeded` and the `Ready` roll-up, and keeps the
//! `karpenter.k8s.aws/termination` finalizer until no NodeClaim uses the class.
//!
//! Resolution runs on every class change and every 5 minutes, so a new AMI behind an alias
//! shows up in the status (which is what AMI drift compares against).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use crate::apis::condition::{ConditionStatus, StatusConditions};
use crate::apis::ec2nodeclass::{
    CONDITION_AMIS_READY, CONDITION_CAPACITY_RESERVATIONS_READY, CONDITION_INSTANCE_PROFILE_READY,
    CONDITION_SECURITY_GROUPS_READY, CONDITION_SUBNETS_READY, CONDITION_VALIDATION_SUCCEEDED,
};
use crate::apis::labels;
use crate::apis::{EC2NodeClass, EC2NodeClassStatus};
use crate::cloudprovider::aws::AwsCloudProvider;
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::state::Snapshot;

/// How often every class is re-resolved without a change.
pub const RESOLVE_INTERVAL: Duration = Duration::from_secs(300);
/// How often a class with capacity reservations is re-resolved.
pub const RESERVATION_POLL_PERIOD: Duration = Duration::from_secs(60);

/// The status a class should have, given what resolution found (or the error it hit).
pub fn desired_status(
    class: &EC2NodeClass,
    resolved: Result<EC2NodeClassStatus, String>,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> EC2NodeClassStatus {
    let mut updated = class.clone();
    let previous = class.status.clone().unwrap_or_default();
    let mut status = match &resolved {
        Ok(found) => EC2NodeClassStatus { conditions: previous.conditions.clone(), ..found.clone() },
        // Keep what we knew when AWS is unreachable: launches keep working on the last answer.
        Err(_) => previous.clone(),
    };
    updated.status = Some(status.clone());
    updated.initialize_conditions(now);
    match class.validate() {
        Ok(()) => updated.set_true(CONDITION_VALIDATION_SUCCEEDED, now),
        Err(e) => updated.set_condition(
            CONDITION_VALIDATION_SUCCEEDED,
            ConditionStatus::False,
            "ValidationFailed",
            &e.to_string(),
            now,
        ),
    };
    if let Err(error) = &resolved {
        for condition in [CONDITION_SUBNETS_READY, CONDITION_SECURITY_GROUPS_READY, CONDITION_AMIS_READY] {
            if !updated.is_condition_true(condition) {
                updated.set_condition(condition, ConditionStatus::Unknown, "ResolutionFailed", error, now);
            }
        }
    } else {
        let checks: [(&str, bool, &str, &str); 4] = [
            (
                CONDITION_SUBNETS_READY,
                status.subnets.as_ref().is_some_and(|s| !s.is_empty()),
                "SubnetsNotFound",
                "SubnetSelector did not match any Subnets",
            ),
            (
                CONDITION_SECURITY_GROUPS_READY,
                status.security_groups.as_ref().is_some_and(|s| !s.is_empty()),
                "SecurityGroupsNotFound",
                "SecurityGroupSelector did not match any SecurityGroups",
            ),
            (
                CONDITION_AMIS_READY,
                status.amis.as_ref().is_some_and(|s| !s.is_empty()),
                "AMINotFound",
                "AMISelector did not match any AMIs",
            ),
            (
                CONDITION_INSTANCE_PROFILE_READY,
                status.instance_profile.is_some(),
                "InstanceProfileNotFound",
                "neither spec.role nor spec.instanceProfile is set",
            ),
        ];
        for (condition, ok, reason, message) in checks {
            if ok {
                updated.set_true(condition, now);
            } else {
                updated.set_condition(condition, ConditionStatus::False, reason, message, now);
            }
        }
        // aws `nodeclass/capacityreservation.go` l. 57-60, 95: true once the terms resolved,
        // reservations found or not. Set only on classes with terms, so classes without
        // reservations keep the status they had before reservations were modelled.
        if class.spec.capacity_reservation_selector_terms.as_ref().is_some_and(|t| !t.is_empty()) {
            updated.set_true(CONDITION_CAPACITY_RESERVATIONS_READY, now);
        }
    }
    status.conditions = updated.status.and_then(|s| s.conditions);
    status
}

/// The `major.minor` Kubernetes version of the API server (AMI aliases resolve per version).
async fn kubernetes_version(client: &Client) -> Option<String> {
    let info = client.apiserver_version().await.ok()?;
    let minor: String = info.minor.chars().take_while(char::is_ascii_digit).collect();
    Some(format!("{}.{minor}", info.major))
}

/// Without a change, the controller looks again after this long.
pub const RESYNC: Duration = Duration::from_secs(30);
/// Bursts of changes are coalesced into one reconcile.
pub const DEBOUNCE: Duration = Duration::from_secs(1);

/// The EC2NodeClass controller: finalizer, resolution and status of every class.
pub struct NodeClassController {
    aws: Arc<AwsCloudProvider>,
    /// The API server's `major.minor`, once known (AMI aliases resolve per version).
    version: Option<String>,
    /// Class name → (generation resolved, when).
    resolved: BTreeMap<String, (Option<i64>, tokio::time::Instant)>,
}

impl NodeClassController {
    /// A controller resolving through `aws`.
    pub fn new(aws: Arc<AwsCloudProvider>) -> Self {
        Self { aws, version: None, resolved: BTreeMap::new() }
    }

    /// Adds the termination finalizer, or resolves the class and writes its status when due.
    async fn reconcile_class(&mut self, api: &Api<EC2NodeClass>, class: &EC2NodeClass, version: &str, env: &Env) {
        let name = class.metadata.name.clone().unwrap_or_default();
        if !class.finalizers().iter().any(|f| f == labels::AWS_TERMINATION_FINALIZER) {
            let mut finalizers = class.finalizers().to_vec();
            finalizers.push(labels::AWS_TERMINATION_FINALIZER.to_owned());
            let patch = json!({"metadata": {"finalizers": finalizers,
                "resourceVersion": class.metadata.resource_version}});
            if let Err(error) = api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                tracing::debug!(ec2nodeclass = %name, %error, "adding finalizer");
            }
            return;
        }
        // Re-resolve on a spec change, or every 5 minutes.
        let generation = class.metadata.generation;
        // Classes with capacity reservations are polled every minute (aws
        // `nodeclass/capacityreservation.go` l. 35 `capacityReservationPollPeriod`), so a capacity
        // block turns `expiring` in the status within a minute of its drain window opening.
        let interval = if class.spec.capacity_reservation_selector_terms.as_ref().is_some_and(|t| !t.is_empty()) {
            RESERVATION_POLL_PERIOD
        } else {
            RESOLVE_INTERVAL
        };
        let due = self
            .resolved
            .get(&name)
            .is_none_or(|(seen, at)| *seen != generation || at.elapsed() >= interval || !class.is_ready());
        if !due {
            return;
        }
        let resolved = self.aws.resolve_node_class(class, version).await.map_err(|e| e.to_string());
        if let Err(error) = &resolved {
            tracing::warn!(ec2nodeclass = %name, %error, "resolving EC2NodeClass");
        }
        let status = desired_status(class, resolved, &env.clock.now_time());
        self.resolved.insert(name.clone(), (generation, tokio::time::Instant::now()));
        if class.status.as_ref() == Some(&status) {
            return;
        }
        let patch = json!({"status": status});
        if let Err(error) = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::debug!(ec2nodeclass = %name, %error, "writing status");
        }
    }
}

impl Reconciler for NodeClassController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "nodeclass"
    }

    fn watches(&self) -> Kinds {
        // The finalizer waits for the class's NodeClaims to go.
        Kinds::of(&[Kind::NodeClass, Kind::NodeClaim])
    }

    fn debounce(&self) -> Duration {
        DEBOUNCE
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        let api: Api<EC2NodeClass> = Api::all(env.kube.clone());
        let fresh;
        let mut snapshot = snapshot;
        if self.version.is_none() {
            self.version = kubernetes_version(&env.kube).await;
            // The version call took a round trip: look at the state as it is now.
            fresh = env.cluster.snapshot();
            snapshot = &fresh;
        }
        if snapshot.is_synced()
            && let Some(version) = self.version.clone()
        {
            for class in snapshot.node_classes.values() {
                if class.metadata.deletion_timestamp.is_some() {
                    finalize(&api, snapshot, class).await;
                    continue;
                }
                self.reconcile_class(&api, class, &version, env).await;
            }
        }
        Ok(Action::requeue(RESYNC))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

/// Removes the finalizer once no NodeClaim references the class.
async fn finalize(api: &Api<EC2NodeClass>, snapshot: &Snapshot, class: &EC2NodeClass) {
    let name = class.metadata.name.clone().unwrap_or_default();
    let in_use = snapshot.node_claims.values().any(|c| c.spec.node_class_ref.name == name);
    if in_use || !class.finalizers().iter().any(|f| f == labels::AWS_TERMINATION_FINALIZER) {
        return;
    }
    let finalizers: Vec<&String> =
        class.finalizers().iter().filter(|f| *f != labels::AWS_TERMINATION_FINALIZER).collect();
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": class.metadata.resource_version}});
    if let Err(error) = api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        tracing::debug!(ec2nodeclass = %name, %error, "removing finalizer");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::ec2nodeclass::{AMI, SecurityGroup, Subnet};

    fn class() -> EC2NodeClass {
        serde_json::from_value(json!({
            "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default", "generation": 1},
            "spec": {
                "role": "KarpenterNodeRole",
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}]
            }
        }))
        .expect("a valid class")
    }

    fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::from_second(1_700_000_000).expect("ts"))
    }

    fn resolved() -> EC2NodeClassStatus {
        EC2NodeClassStatus {
            subnets: Some(vec![Subnet { id: "subnet-1".into(), zone: "us-east-1a".into(), zone_id: None }]),
            security_groups: Some(vec![SecurityGroup { id: "sg-1".into(), name: None }]),
            amis: Some(vec![AMI { id: "ami-1".into(), deprecated: None, name: None, requirements: Vec::new() }]),
            instance_profile: Some("KarpenterNodeRole".into()),
            ..EC2NodeClassStatus::default()
        }
    }

    #[test]
    fn a_fully_resolved_class_is_ready() {
        let mut class = class();
        class.status = Some(desired_status(&class, Ok(resolved()), &now()));
        assert!(class.is_ready(), "{:?}", class.status);
    }

    #[test]
    fn no_subnets_is_not_ready_and_says_why() {
        let mut class = class();
        let mut found = resolved();
        found.subnets = Some(Vec::new());
        class.status = Some(desired_status(&class, Ok(found), &now()));
        assert!(!class.is_ready());
        let condition = class.condition(CONDITION_SUBNETS_READY).expect("condition");
        assert_eq!(condition.reason(), "SubnetsNotFound");
    }

    #[test]
    fn a_failed_resolution_keeps_the_last_good_status() {
        let mut class = class();
        class.status = Some(desired_status(&class, Ok(resolved()), &now()));
        let status = desired_status(&class, Err("throttled".into()), &now());
        assert_eq!(status.subnets, resolved().subnets);
        class.status = Some(status);
        assert!(class.is_ready());
    }
}
