//! `dovetail explain`: for a run at a simulated time, why every node is still there and why
//! every pending pod is pending, and the disruption decisions taken so far — the question
//! Karpenter users ask for years (karpenter#711, aws#3732, aws#9207) answered from what
//! Karpenter itself publishes (Events and NodeClaim conditions; see [`karpenter_message`])
//! plus the objects' own state where Karpenter publishes nothing by design. It reads only the
//! API server's objects, so the same reading works on a dump of a real cluster.

pub mod capture;
pub mod events;
pub mod karpenter_message;
pub mod node_status;
pub mod pending_pod;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use dovetail_world::SimDuration;
use serde_json::Value;

use self::events::EventIndex;
use self::node_status::{NodeContext, NodeStatus};
use self::pending_pod::PodStatus;
use crate::apiserver::store::Store;
use crate::oracle::view::{NODEPOOL_LABEL, key, read_pods};

/// One NodeClaim and why it is (not) being disrupted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeExplanation {
    /// The NodeClaim.
    pub claim: String,
    /// Its Node, if registered.
    pub node: Option<String>,
    /// Its NodePool.
    pub pool: String,
    /// `instance-type capacity-type zone` from its labels.
    pub offering: String,
    /// Active non-DaemonSet pods on it.
    pub pods: usize,
    /// The verdict.
    pub status: NodeStatus,
}

/// One pending pod and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodExplanation {
    /// `namespace/name`.
    pub pod: String,
    /// Pending since (its creation).
    #[serde(serialize_with = "as_sim_duration")]
    pub since: Duration,
    /// The verdict.
    pub status: PodStatus,
}

/// One disruption step Karpenter announced on a NodeClaim.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// When.
    #[serde(serialize_with = "as_sim_duration")]
    pub at: Duration,
    /// `DisruptionTerminating` or `DisruptionLaunching`.
    pub kind: String,
    /// The NodeClaim.
    pub claim: String,
    /// Karpenter's message (`Disrupting NodeClaim: Underutilized/replace`).
    pub message: String,
}

/// Everything `explain` says about one moment of a run. It serialises (into the run
/// report's `explanation`, and `dovetail serve`'s explain endpoint) with typed statuses,
/// times as simulated durations (`12m3s`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The simulated time explained.
    #[serde(serialize_with = "as_sim_duration")]
    pub at: Duration,
    /// Every NodeClaim, by name.
    pub nodes: Vec<NodeExplanation>,
    /// Every pending pod, by key.
    pub pending: Vec<PodExplanation>,
    /// Disruption decisions up to `at`, oldest first.
    pub decisions: Vec<Decision>,
}

/// Serialises a simulated time as its [`SimDuration`] text (`1h2m3s`).
///
/// # Errors
/// The serializer's.
pub fn as_sim_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&SimDuration(*d))
}

/// Explains the store's state at simulated time `now`.
pub fn explain(store: &Store, now: Duration) -> Explanation {
    let events = EventIndex::read(store);
    let pods = read_pods(store);
    let pools: BTreeMap<String, &Value> = store
        .iter(&key("karpenter.sh", "nodepools"), None)
        .map(|p| (p["metadata"]["name"].as_str().unwrap_or_default().to_string(), p.as_ref()))
        .collect();
    let nodes: BTreeMap<String, &Value> = store
        .iter(&key("", "nodes"), None)
        .map(|n| (n["metadata"]["name"].as_str().unwrap_or_default().to_string(), n.as_ref()))
        .collect();
    let claims: Vec<&Value> = store.iter(&key("karpenter.sh", "nodeclaims"), None).map(AsRef::as_ref).collect();
    let mut explained = Vec::new();
    for claim in &claims {
        let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let node_name = claim["status"]["nodeName"].as_str().filter(|n| !n.is_empty()).map(String::from);
        let labels = &claim["metadata"]["labels"];
        let pool = labels[NODEPOOL_LABEL].as_str().unwrap_or_default().to_string();
        let on_node: Vec<_> =
            pods.iter().filter(|p| p.active() && node_name.is_some() && p.node_name == node_name).collect();
        let cx = NodeContext {
            claim,
            node: node_name.as_ref().and_then(|n| nodes.get(n).copied()),
            pool: pools.get(&pool).copied(),
            pods: on_node.clone(),
            events: &events,
            now,
        };
        let label = |k: &str| labels[k].as_str().unwrap_or("?").to_string();
        explained.push(NodeExplanation {
            claim: name,
            node: node_name,
            pool,
            offering: format!(
                "{} {} {}",
                label("node.kubernetes.io/instance-type"),
                label("karpenter.sh/capacity-type"),
                label("topology.kubernetes.io/zone")
            ),
            pods: on_node.iter().filter(|p| !p.daemonset).count(),
            status: node_status::status_of(&cx),
        });
    }
    let claim_names: BTreeSet<&str> = explained.iter().map(|n| n.claim.as_str()).collect();
    let claim_exists = |c: &str| claim_names.contains(c);
    let pending = pods
        .iter()
        .filter(|p| p.active() && p.node_name.is_none() && !p.daemonset)
        .map(|p| PodExplanation {
            pod: p.key.clone(),
            since: p.created,
            status: pending_pod::status_of(&events, &p.key, now, claim_exists),
        })
        .collect();
    let mut decisions: Vec<Decision> = ["DisruptionTerminating", "DisruptionLaunching"]
        .into_iter()
        .flat_map(|kind| {
            events.all("NodeClaim", kind, now).into_iter().map(move |(claim, e)| Decision {
                at: e.first,
                kind: kind.to_string(),
                claim: claim.to_string(),
                message: e.message.clone(),
            })
        })
        .collect();
    decisions.sort_by(|a, b| (a.at, &a.kind, &a.claim).cmp(&(b.at, &b.kind, &b.claim)));
    Explanation { at: now, nodes: explained, pending, decisions }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# explain at {}", SimDuration(self.at))?;
        writeln!(f, "nodes ({}):", self.nodes.len())?;
        for n in &self.nodes {
            writeln!(f, "  {:<24} {:<10} {:<34} pods {:>3}  {}", n.claim, n.pool, n.offering, n.pods, n.status)?;
        }
        writeln!(f, "pending pods ({}):", self.pending.len())?;
        for p in &self.pending {
            writeln!(f, "  {:<40} since {:<8} {}", p.pod, SimDuration(p.since).to_string(), p.status)?;
        }
        writeln!(f, "disruption decisions ({}):", self.decisions.len())?;
        for d in &self.decisions {
            writeln!(f, "  {:<8} {:<24} {}", SimDuration(d.at).to_string(), d.claim, d.message)?;
        }
        Ok(())
    }
}
