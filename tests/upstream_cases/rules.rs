//! Cases of single rules: a budget's allowed disruptions (`disruption::budgets::pool_budget`),
//! core drift of a NodeClaim (`disruption::drift::rules::core_drift`), forceful expiration
//! (`disruption::expiration::is_expired`) and the Consolidatable condition
//! (`disruption::consolidatable::consolidatable`).

use std::time::Duration;

use dovetail_controller::apis::labels::{
    NODE_POOL_HASH_ANNOTATION, NODE_POOL_HASH_VERSION, NODE_POOL_HASH_VERSION_ANNOTATION,
};
use dovetail_controller::apis::nodepool::DisruptionReason;
use dovetail_controller::apis::{NodeClaim, hash::node_pool_hash};
use dovetail_controller::disruption::budgets::pool_budget;
use dovetail_controller::disruption::consolidatable::{Consolidatable, consolidatable};
use dovetail_controller::disruption::drift::rules::core_drift;
use dovetail_controller::disruption::expiration::is_expired;
use serde::Deserialize;
use serde_json::json;

use super::format::{Catalog, PoolSpec};
use super::world;

/// `budget` case: allowed disruptions of a pool for a reason.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BudgetCase {
    /// Id.
    pub id: String,
    /// Upstream test.
    pub upstream: String,
    /// Upstream file when not the file's default.
    #[serde(default)]
    pub source: Option<String>,
    /// `spec.disruption.budgets`.
    pub budgets: serde_json::Value,
    /// `Empty`, `Drifted` or `Underutilized`.
    pub reason: String,
    /// Nodes in the pool.
    pub nodes: u64,
    /// The time (RFC 3339, UTC).
    pub now: String,
    /// Allowed disruptions, or `unlimited`.
    pub expect: serde_json::Value,
}

/// `drift` case: a claim launched from `launchedFrom` (stamped with its hash) against `pool`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DriftCase {
    /// Id.
    pub id: String,
    /// Upstream test.
    pub upstream: String,
    /// Upstream file when not the file's default.
    #[serde(default)]
    pub source: Option<String>,
    /// The NodePool spec the claim was launched from (its hash is stamped on the claim).
    #[serde(default)]
    pub launched_from: Option<serde_json::Value>,
    /// The NodePool spec now.
    pub pool: serde_json::Value,
    /// The claim's labels.
    #[serde(default)]
    pub claim_labels: std::collections::BTreeMap<String, String>,
    /// Instance types the pool offers now (checked only when given).
    #[serde(default)]
    pub instance_types: Option<Catalog>,
    /// Claim age in seconds (default 7200).
    #[serde(default)]
    pub age_seconds: Option<u64>,
    /// `NodePoolDrifted`, `RequirementsDrifted`, `InstanceTypeNotFound`, or `none`.
    pub expect: String,
}

/// `expiration` case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpirationCase {
    /// Id.
    pub id: String,
    /// Upstream test.
    pub upstream: String,
    /// Upstream file when not the file's default.
    #[serde(default)]
    pub source: Option<String>,
    /// Claim `spec.expireAfter`.
    pub expire_after: String,
    /// Claim age in seconds.
    pub age_seconds: u64,
    /// Expired.
    pub expect: bool,
}

/// `consolidatable` case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConsolidatableCase {
    /// Id.
    pub id: String,
    /// Upstream test.
    pub upstream: String,
    /// Upstream file when not the file's default.
    #[serde(default)]
    pub source: Option<String>,
    /// Pool `consolidateAfter`.
    pub consolidate_after: String,
    /// Seconds since Initialized.
    pub initialized_seconds_ago: Option<u64>,
    /// Seconds since the last pod event.
    #[serde(default)]
    pub last_pod_event_seconds_ago: Option<u64>,
    /// The condition afterwards as core leaves it: `True` or `Removed`.
    pub expect: String,
}

fn now() -> jiff::Timestamp {
    super::scene::epoch()
}

fn ago(seconds: u64) -> String {
    (now() - jiff::SignedDuration::from_secs(i64::try_from(seconds).unwrap_or(i64::MAX))).to_string()
}

fn verdict(got: String, expected: &str) -> Result<(), String> {
    if got == expected { Ok(()) } else { Err(format!("got {got}, expected {expected}")) }
}

/// Runs a budget case.
pub fn budget(case: &BudgetCase) -> Result<Result<(), String>, String> {
    let pool = world::node_pool(&PoolSpec {
        name: "default".into(),
        spec: json!({"disruption": {"consolidateAfter": "0s", "budgets": case.budgets}}),
        instance_types: None,
    })?;
    let reason = match case.reason.as_str() {
        "Empty" => DisruptionReason::Empty,
        "Drifted" => DisruptionReason::Drifted,
        "Underutilized" => DisruptionReason::Underutilized,
        other => return Err(format!("reason: unknown {other:?}")),
    };
    let now: jiff::Timestamp = case.now.parse().map_err(|e| format!("now: {e}"))?;
    let allowed = pool_budget(&pool, reason, case.nodes, now);
    let got = if allowed == u64::MAX { "unlimited".to_owned() } else { allowed.to_string() };
    let expected = match &case.expect {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) if s == "unlimited" => s.clone(),
        other => return Err(format!("expect: a number or \"unlimited\", not {other}")),
    };
    Ok(verdict(got, &expected))
}

/// Runs a drift case.
pub fn drift(case: &DriftCase) -> Result<Result<(), String>, String> {
    let pool = world::node_pool(&PoolSpec { name: "default".into(), spec: case.pool.clone(), instance_types: None })?;
    let mut annotations = serde_json::Map::new();
    if let Some(from) = &case.launched_from {
        let original =
            world::node_pool(&PoolSpec { name: "default".into(), spec: from.clone(), instance_types: None })?;
        annotations.insert(NODE_POOL_HASH_ANNOTATION.into(), json!(node_pool_hash(&original)));
        annotations.insert(NODE_POOL_HASH_VERSION_ANNOTATION.into(), json!(NODE_POOL_HASH_VERSION));
    }
    let age = case.age_seconds.unwrap_or(7200);
    let claim: NodeClaim = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "claim", "labels": case.claim_labels, "annotations": annotations,
                     "creationTimestamp": ago(age)},
        "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    }))
    .map_err(|e| format!("claim: {e}"))?;
    let types = case.instance_types.as_ref().map(world::instance_types).transpose()?;
    let reason = core_drift(&pool, &claim, types.as_deref(), Duration::from_secs(age));
    Ok(verdict(reason.map_or_else(|| "none".to_owned(), |r| r.to_string()), &case.expect))
}

/// Runs an expiration case.
pub fn expiration(case: &ExpirationCase) -> Result<Result<(), String>, String> {
    let claim: NodeClaim = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "claim", "creationTimestamp": ago(case.age_seconds)},
        "spec": {"requirements": [], "expireAfter": case.expire_after,
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    }))
    .map_err(|e| format!("claim: {e}"))?;
    Ok(verdict(is_expired(&claim, now()).to_string(), &case.expect.to_string()))
}

/// Runs a consolidatable case.
pub fn consolidatable_case(case: &ConsolidatableCase) -> Result<Result<(), String>, String> {
    let pool = world::node_pool(&PoolSpec {
        name: "default".into(),
        spec: json!({"disruption": {"consolidateAfter": case.consolidate_after}}),
        instance_types: None,
    })?;
    let mut conditions = Vec::new();
    if let Some(s) = case.initialized_seconds_ago {
        conditions.push(
            json!({"type": "Initialized", "status": "True", "reason": "Initialized", "lastTransitionTime": ago(s)}),
        );
    }
    let mut status = json!({"conditions": conditions});
    if let Some(s) = case.last_pod_event_seconds_ago {
        status["lastPodEventTime"] = json!(ago(s));
    }
    let claim: NodeClaim = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "claim", "creationTimestamp": ago(86_400)},
        "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
        "status": status
    }))
    .map_err(|e| format!("claim: {e}"))?;
    let got = match consolidatable(&claim, &pool, now()) {
        Consolidatable::Never | Consolidatable::NotInitialized | Consolidatable::NotYet(_) => "Removed",
        Consolidatable::Yes => "True",
    };
    Ok(verdict(got.to_owned(), &case.expect))
}
