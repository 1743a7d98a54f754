//! The `nodeclaim.tagging` controller (aws/karpenter-provider-aws v1.14.1
//! `pkg/controllers/nodeclaim/tagging/controller.go`): once a NodeClaim knows its Node's name,
//! it tags the claim's EC2 instance with `Name` (the Node name), `karpenter.sh/nodeclaim` (the
//! claim's name) and `eks:eks-cluster-name` (the cluster), so the console and cost reports name
//! instances after their nodes, then annotates the claim `karpenter.k8s.aws/tagged: "true"` and
//! `compatibility.karpenter.k8s.aws/cluster-name-tagged: "true"` so it is never looked at again.
//!
//! Per claim, as upstream (`controller.go` l. 62-89, 105-147):
//! - skipped when it is not an EC2NodeClass claim (`IsManagedPredicateFuncs`, l. 94), when both
//!   annotations are already `"true"`, when `status.nodeName` is empty (not registered yet), or
//!   when it is being deleted (`isTaggable`, l. 131-147);
//! - a providerID that is not `aws:///zone/i-…` is logged and not retried until it changes
//!   (l. 70-75);
//! - the instance is read from EC2, skipping the cache (`instance.SkipCache`, l. 113), and only
//!   the tags it does not carry yet are sent, in one CreateTags (l. 112-127); nothing is sent
//!   when it has them all;
//! - an instance that is gone (DescribeInstances does not return it, or CreateTags answers
//!   `InvalidInstanceID.NotFound`) ends the reconcile without error and without the annotation
//!   (`cloudprovider.IgnoreNodeClaimNotFoundError`, l. 77): the claim is on its way out;
//! - after a CreateTags the controller sleeps one second (l. 122-124: CreateTags shares EC2's
//!   mutating-call rate limit with CreateFleet, and upstream runs one reconcile at a time).
//!
//! Other errors are retried with `reasonable.RateLimiter`'s backoff (l. 100: 100 ms doubling to
//! 1 min). Upstream is woken by each NodeClaim event that passes `isTaggable`; this reconciler
//! sees the whole state each time, so it remembers the (uid, providerID) pairs it finished
//! (tagged and annotated, gone, or unparseable) and does not repeat them while its view of the
//! cluster still lags its own annotation patch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::apis::NodeClaim;
use crate::apis::labels;
use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::AwsCloudProvider;
use crate::cloudprovider::aws::instance_cache::Read;
use crate::cloudprovider::aws::instances::{self, CLUSTER_NAME_TAG, NODE_CLAIM_TAG};
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::state::Snapshot;

/// The controller's name, as upstream registers it (l. 93).
pub const NAME: &str = "nodeclaim.tagging";
/// The tag naming the instance after its Node (`v1.NameTagKey`).
pub const NAME_TAG: &str = "Name";
/// How long the controller waits after each CreateTags (l. 124).
pub const CREATE_TAGS_PACE: Duration = Duration::from_secs(1);
/// `reasonable.RateLimiter`'s per-item failure backoff: 100 ms, doubling, at most 1 minute.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How soon to look again while the state has not listed every kind.
const UNSYNCED_RETRY: Duration = Duration::from_secs(1);

/// Whether the claim's NodeClass is an EC2NodeClass (core `nodeclaim.IsManaged`).
pub fn is_managed(claim: &NodeClaim) -> bool {
    let class = &claim.spec.node_class_ref;
    class.group == labels::AWS_GROUP && class.kind == "EC2NodeClass"
}

/// `isTaggable` (l. 131-147): not tagged yet, its Node's name known, not being deleted.
pub fn is_taggable(claim: &NodeClaim) -> bool {
    let annotations = claim.annotations();
    let tagged = |key: &str| annotations.get(key).is_some_and(|v| v == "true");
    if tagged(labels::INSTANCE_TAGGED_ANNOTATION) && tagged(labels::CLUSTER_NAME_TAGGED_ANNOTATION) {
        return false;
    }
    if claim.status.as_ref().and_then(|s| s.node_name.as_deref()).is_none_or(str::is_empty) {
        return false;
    }
    claim.metadata.deletion_timestamp.is_none()
}

/// The tags the instance should carry (l. 106-110) minus the keys it already has, whatever
/// their values (`lo.OmitByKeys(tags, lo.Keys(instance.Tags))`, l. 117).
pub fn missing_tags(claim: &NodeClaim, cluster_name: &str, present: &BTreeSet<String>) -> BTreeMap<String, String> {
    let node_name = claim.status.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    BTreeMap::from([
        (NAME_TAG.to_owned(), node_name),
        (NODE_CLAIM_TAG.to_owned(), claim.name_any()),
        (CLUSTER_NAME_TAG.to_owned(), cluster_name.to_owned()),
    ])
    .into_iter()
    .filter(|(key, _)| !present.contains(key))
    .collect()
}

/// What tagging one claim's instance came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tagged {
    /// Tags were sent (the controller then paces itself).
    Sent,
    /// The instance had every tag already.
    AlreadyTagged,
    /// The instance is gone: no annotation, no error.
    Gone,
}

/// The controller (see the module docs).
pub struct TaggingController {
    aws: Arc<AwsCloudProvider>,
    cluster_name: String,
    /// (uid, providerID) of the claims finished with.
    done: BTreeSet<(String, String)>,
    /// Consecutive reconciles with a failure, for the backoff.
    failures: u32,
}

impl TaggingController {
    /// A controller tagging through `aws`'s EC2 client for `cluster_name`.
    pub fn new(aws: Arc<AwsCloudProvider>, cluster_name: String) -> Self {
        Self { aws, cluster_name, done: BTreeSet::new(), failures: 0 }
    }

    /// `tagInstance` (l. 105-129).
    async fn tag_instance(&self, claim: &NodeClaim, id: &str) -> Result<Tagged, CloudError> {
        let Some(instance) = self.aws.reads.get(id, Read::Fresh).await? else {
            return Ok(Tagged::Gone);
        };
        let present: BTreeSet<String> = instance.tags().iter().filter_map(|t| t.key().map(str::to_owned)).collect();
        let tags = missing_tags(claim, &self.cluster_name, &present);
        if tags.is_empty() {
            return Ok(Tagged::AlreadyTagged);
        }
        match instances::create_tags(&self.aws.ec2, id, &tags).await {
            Ok(()) => Ok(Tagged::Sent),
            Err(CloudError::NotFound(_)) => Ok(Tagged::Gone),
            Err(error) => Err(error),
        }
    }

    /// Tags one taggable claim's instance and annotates the claim; `Ok(true)` when CreateTags
    /// was sent.
    async fn reconcile_claim(&mut self, env: &Env, claim: &NodeClaim, key: (String, String)) -> Result<bool, String> {
        let name = claim.name_any();
        let id = match instances::parse_provider_id(&key.1) {
            Ok(id) => id,
            Err(error) => {
                tracing::error!(controller = NAME, nodeclaim = %name, %error, "failed parsing instance id");
                self.done.insert(key);
                return Ok(false);
            }
        };
        let tagged = self.tag_instance(claim, &id).await.map_err(|e| format!("tagging nodeclaim, {e}"))?;
        if tagged == Tagged::Gone {
            self.done.insert(key);
            return Ok(false);
        }
        let patch = json!({"metadata": {"annotations": {
            labels::INSTANCE_TAGGED_ANNOTATION: "true",
            labels::CLUSTER_NAME_TAGGED_ANNOTATION: "true",
        }}});
        let api: Api<NodeClaim> = Api::all(env.kube.clone());
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(format!("annotating nodeclaim {name}, {error}")),
        }
        self.done.insert(key);
        Ok(tagged == Tagged::Sent)
    }
}

impl Reconciler for TaggingController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        NAME
    }

    fn watches(&self) -> Kinds {
        Kinds::of(&[Kind::NodeClaim])
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        if !snapshot.is_synced() {
            return Ok(Action::requeue(UNSYNCED_RETRY));
        }
        let present: BTreeSet<String> = snapshot.node_claims.values().filter_map(|c| c.metadata.uid.clone()).collect();
        self.done.retain(|(uid, _)| present.contains(uid));
        let mut failed = false;
        for claim in snapshot.node_claims.values() {
            if !is_managed(claim) || !is_taggable(claim) {
                continue;
            }
            let key = (
                claim.metadata.uid.clone().unwrap_or_else(|| claim.name_any()),
                claim.provider_id().unwrap_or_default().to_owned(),
            );
            if self.done.contains(&key) {
                continue;
            }
            match self.reconcile_claim(env, claim, key).await {
                Ok(true) => tokio::time::sleep(CREATE_TAGS_PACE).await,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(controller = NAME, nodeclaim = %claim.name_any(), %error, "tagging instance");
                    failed = true;
                }
            }
        }
        if !failed {
            self.failures = 0;
            return Ok(Action::await_change());
        }
        let backoff = BACKOFF_BASE.saturating_mul(1 << self.failures.min(20)).min(BACKOFF_MAX);
        self.failures = self.failures.saturating_add(1);
        Ok(Action::requeue(backoff))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::{NodeClaimSpec, NodeClaimStatus, NodeClassReference};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn claim(node_name: Option<&str>, annotations: &[(&str, &str)]) -> NodeClaim {
        NodeClaim {
            metadata: ObjectMeta {
                name: Some("default-abcde".into()),
                uid: Some("uid-1".into()),
                annotations: Some(annotations.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
                ..ObjectMeta::default()
            },
            spec: NodeClaimSpec {
                requirements: Vec::new(),
                resources: None,
                taints: None,
                startup_taints: None,
                node_class_ref: NodeClassReference {
                    group: labels::AWS_GROUP.into(),
                    kind: "EC2NodeClass".into(),
                    name: "default".into(),
                },
                expire_after: None,
                termination_grace_period: None,
            },
            status: Some(NodeClaimStatus {
                node_name: node_name.map(str::to_owned),
                provider_id: Some("aws:///us-east-1a/i-0123456789abcdef0".into()),
                ..NodeClaimStatus::default()
            }),
        }
    }

    #[test]
    fn a_claim_without_a_node_or_being_deleted_is_not_taggable() {
        assert!(!is_taggable(&claim(None, &[])), "shouldn't tag instances without a Node");
        assert!(is_taggable(&claim(Some("ip-10-0-0-1.ec2.internal"), &[])));
        let mut deleting = claim(Some("ip-10-0-0-1.ec2.internal"), &[]);
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(!is_taggable(&deleting), "shouldn't tag nodeclaim with deletion timestamp set");
    }

    #[test]
    fn both_annotations_are_needed_to_skip_a_claim() {
        let node = Some("ip-10-0-0-1.ec2.internal");
        let both = [(labels::INSTANCE_TAGGED_ANNOTATION, "true"), (labels::CLUSTER_NAME_TAGGED_ANNOTATION, "true")];
        assert!(!is_taggable(&claim(node, &both)));
        assert!(is_taggable(&claim(node, &both[..1])), "the cluster-name annotation alone is missing");
        assert!(is_taggable(&claim(node, &[(labels::INSTANCE_TAGGED_ANNOTATION, "false")])));
    }

    #[test]
    fn only_the_tags_the_instance_lacks_are_sent() {
        let c = claim(Some("ip-10-0-0-1.ec2.internal"), &[]);
        let all = missing_tags(&c, "dovetail", &BTreeSet::new());
        assert_eq!(
            all,
            BTreeMap::from([
                ("Name".to_owned(), "ip-10-0-0-1.ec2.internal".to_owned()),
                ("eks:eks-cluster-name".to_owned(), "dovetail".to_owned()),
                ("karpenter.sh/nodeclaim".to_owned(), "default-abcde".to_owned()),
            ])
        );
        // upstream's table (suite_test.go l. 231-237): whichever keys exist are left alone.
        let present: BTreeSet<String> = ["eks:eks-cluster-name".to_owned(), "Name".to_owned()].into();
        assert_eq!(missing_tags(&c, "dovetail", &present).keys().collect::<Vec<_>>(), ["karpenter.sh/nodeclaim"]);
        let every: BTreeSet<String> = all.keys().cloned().collect();
        assert!(missing_tags(&c, "dovetail", &every).is_empty(), "nothing to tag");
    }

    #[test]
    fn only_ec2nodeclass_claims_are_managed() {
        let mut c = claim(Some("n"), &[]);
        assert!(is_managed(&c));
        c.spec.node_class_ref.group = "example.com".into();
        assert!(!is_managed(&c));
    }
}
