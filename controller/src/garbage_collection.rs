//! Garbage collection (karpenter-behaviour.md §3.5): instances tagged for this cluster with no
//! NodeClaim (leaks: a crash between CreateFleet and the status write, a claim deleted by hand
//! with its finalizer stripped) are terminated once older than 30 s; Registered NodeClaims whose
//! instance is gone and whose Node is missing or NotReady are deleted.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::DeleteParams;

use crate::apis::NodeClaim;
use crate::apis::condition::StatusConditions;
use crate::cloudprovider::CloudError;
use crate::lifecycle::conditions::REGISTERED;
use crate::provisioning::input::node_is_ready;
use crate::runtime::clock::elapsed;
use crate::runtime::reconcile::{Action, Env, Kinds, Reconciler};
use crate::state::Snapshot;

/// Instances younger than this are never collected (their claim may not be written yet).
pub const MIN_INSTANCE_AGE: Duration = Duration::from_secs(30);
/// Leak GC runs this often for its first [`FAST_RUNS`] runs...
pub const FAST_INTERVAL: Duration = Duration::from_secs(10);
/// ...then this often.
pub const SLOW_INTERVAL: Duration = Duration::from_secs(120);
/// Runs at the fast interval after start.
pub const FAST_RUNS: u32 = 20;

/// The instances to terminate: cloud instances whose providerID no claim carries, older than 30 s.
pub fn leaked(snapshot: &Snapshot, cloud_claims: &[NodeClaim], now: jiff::Timestamp) -> Vec<String> {
    let known: BTreeSet<&str> = snapshot.node_claims.values().filter_map(|c| c.provider_id()).collect();
    cloud_claims
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter(|c| c.provider_id().is_some_and(|id| !known.contains(id)))
        .filter(|c| c.metadata.creation_timestamp.as_ref().is_some_and(|t| elapsed(t.0, now) > MIN_INSTANCE_AGE))
        .filter_map(|c| c.provider_id().map(str::to_owned))
        .collect()
}

/// Registered claims whose instance is gone and whose node is missing or NotReady.
pub fn orphaned_claims(snapshot: &Snapshot, cloud_claims: &[NodeClaim]) -> Vec<String> {
    let alive: BTreeSet<&str> = cloud_claims.iter().filter_map(|c| c.provider_id()).collect();
    snapshot
        .node_claims
        .values()
        .filter(|c| c.metadata.deletion_timestamp.is_none() && c.is_condition_true(REGISTERED))
        .filter(|c| c.provider_id().is_some_and(|id| !alive.contains(id)))
        .filter(|c| snapshot.nodes_for_node_claim(c).iter().all(|n| !node_is_ready(n)))
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

/// Why a collection did not run.
#[derive(Debug, thiserror::Error)]
pub enum GarbageCollectionError {
    /// The cloud's instances could not be listed, so nothing can be told to be leaked.
    #[error("listing instances for garbage collection")]
    List(#[source] CloudError),
}

/// Both collectors, on a timer: every [`FAST_INTERVAL`] for the first [`FAST_RUNS`] runs, then
/// every [`SLOW_INTERVAL`]; orphaned claims at most every [`SLOW_INTERVAL`].
#[derive(Debug)]
pub struct GarbageCollection {
    /// Runs started so far.
    runs: u32,
    /// Time since the orphaned claims were last collected.
    since_claim_gc: Duration,
}

impl Default for GarbageCollection {
    fn default() -> Self {
        Self { runs: 0, since_claim_gc: SLOW_INTERVAL }
    }
}

impl GarbageCollection {
    /// A collector that has not run yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The wait before the run after `runs` runs.
    fn interval(runs: u32) -> Duration {
        if runs < FAST_RUNS { FAST_INTERVAL } else { SLOW_INTERVAL }
    }

    /// One collection, after the wait for it.
    async fn collect(&mut self, snapshot: &Snapshot, env: &Env) -> Result<(), GarbageCollectionError> {
        if !snapshot.is_synced() {
            return Ok(());
        }
        let instances = env.cloud.list().await.map_err(GarbageCollectionError::List)?;
        // Re-read state after the (slow) list, so a claim created meanwhile is seen.
        let snapshot = env.cluster.snapshot();
        for provider_id in leaked(&snapshot, &instances, env.clock.now()) {
            let Some(claim) = instances.iter().find(|c| c.provider_id() == Some(provider_id.as_str())) else {
                continue;
            };
            match env.cloud.delete(claim).await {
                Ok(()) | Err(CloudError::NotFound(_)) => {
                    tracing::info!(provider_id = %provider_id, "garbage collected leaked instance");
                }
                Err(error) => tracing::warn!(provider_id = %provider_id, %error, "terminating leaked instance"),
            }
            let nodes: Api<Node> = Api::all(env.kube.clone());
            for node in snapshot.nodes.values() {
                if node.spec.as_ref().and_then(|s| s.provider_id.as_deref()) == Some(provider_id.as_str()) {
                    let _ =
                        nodes.delete(node.metadata.name.as_deref().unwrap_or_default(), &DeleteParams::default()).await;
                }
            }
        }
        if self.since_claim_gc >= SLOW_INTERVAL {
            self.since_claim_gc = Duration::ZERO;
            let claims: Api<NodeClaim> = Api::all(env.kube.clone());
            for name in orphaned_claims(&snapshot, &instances) {
                if claims.delete(&name, &DeleteParams::default()).await.is_ok() {
                    tracing::info!(nodeclaim = %name, reason = "garbage_collected", "deleted nodeclaim");
                }
            }
        }
        Ok(())
    }
}

impl Reconciler for GarbageCollection {
    type Error = GarbageCollectionError;

    fn name(&self) -> &'static str {
        "garbage_collection"
    }

    fn watches(&self) -> Kinds {
        // Leaks are found by listing the cloud, which announces nothing: a timer only.
        Kinds::NONE
    }

    fn first_run(&self) -> Option<Action> {
        Some(Action::requeue(Self::interval(0)))
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, env: &Env) -> Result<Action, Self::Error> {
        self.since_claim_gc += Self::interval(self.runs);
        self.runs = self.runs.saturating_add(1);
        self.collect(snapshot, env).await?;
        Ok(Action::requeue(Self::interval(self.runs)))
    }

    fn error_policy(&mut self, _error: &Self::Error) -> Action {
        Action::requeue(Self::interval(self.runs))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn claim(name: &str, provider_id: &str, created: i64) -> NodeClaim {
        let mut c: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}},
            "status": {"providerID": provider_id}
        }))
        .expect("claim");
        c.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::from_second(created).unwrap()));
        c
    }

    #[test]
    fn only_unclaimed_instances_older_than_thirty_seconds_leak() {
        let mut snapshot = Snapshot::default();
        snapshot.node_claims.insert("a".into(), Arc::new(claim("a", "aws:///z/i-1", 0)));
        let cloud = vec![claim("", "aws:///z/i-1", 0), claim("", "aws:///z/i-2", 0), claim("", "aws:///z/i-3", 100)];
        let now = jiff::Timestamp::from_second(120).unwrap();
        assert_eq!(leaked(&snapshot, &cloud, now), vec!["aws:///z/i-2".to_string()]);
        let later = jiff::Timestamp::from_second(131).unwrap();
        assert_eq!(leaked(&snapshot, &cloud, later).len(), 2);
    }
}
