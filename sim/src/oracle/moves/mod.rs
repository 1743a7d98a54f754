//! The consolidation moves Karpenter v1's own rules allow at one moment, computed from the
//! cluster state alone (the store and the cloud, never the controller's code), and the rule
//! that keeps every other node where it is.
//!
//! The moves (core `pkg/controllers/disruption`, v1.14.1):
//! - **delete an empty node** (Emptiness, budget reason `Empty`);
//! - **delete a node whose pods fit on the others** (`computeConsolidation`: the
//!   simulation schedules every pod on existing nodes and needs no new NodeClaim; a pod is
//!   held to its heaviest preferred node-affinity term wherever a NodePool could launch for
//!   it, [`preference`]);
//! - **replace a node with one cheaper node**: a single instance type that holds all its
//!   pods (as Karpenter sizes a new node: estimated memory unless a node of the type is
//!   live, [`replacement`]) and whose *worst* launch price is strictly below the node's price
//!   (`RemoveInstanceTypeOptionsByPriceAndMinValues` in
//!   `provisioning/scheduling/nodeclaim.go:411`, `WorstLaunchPrice` in
//!   `cloudprovider/types.go:587`), spot first when the replacement may be spot;
//! - a spot node is replaced only with the `SpotToSpotConsolidation` gate on and at least
//!   15 cheaper spot types (`computeSpotToSpotConsolidation`, `consolidation.go:311`);
//! - out of a `Balanced` NodePool, a consolidation move only when its score passes
//!   ([`balanced`]).
//!
//! - **several nodes at once** (multi-node consolidation: delete them, or replace them with
//!   one node cheaper than their sum), claimed only where upstream's greedy binary search
//!   over its candidate order surely finds a command ([`multi`]).
//!
//! The oracle is **sound before complete**: where its packing model is unsure (pods with
//! topology spread, pod (anti-)affinity, volumes or host ports) the node is reported "not
//! judged" rather than given a move, and while pods are pending or a NodeClaim launches or
//! deletes nothing is claimed at all.
//!
//! | concept | module |
//! |---|---|
//! | what the store holds beyond the [`View`] (PDBs, node labels and taints, annotations) | [`inputs`] |
//! | when each node last had a pod event (the `consolidateAfter` clock) | [`clock`] |
//! | a node as the search sees it, and the rules that keep it out of consolidation | [`host`] |
//! | first-fit-decreasing packing onto other nodes | [`packing`] |
//! | the preferred node-affinity term the simulation holds a pod to | [`preference`] |
//! | the cheaper-replacement rule | [`replacement`] |
//! | the search over the candidates | [`search`] |
//! | upstream's candidate order (savings ratio, ties) | [`order`] |
//! | the Balanced policy's score gate | [`balanced`] |
//! | the multi-node search | [`multi`] |

pub mod balanced;
pub mod clock;
pub mod host;
pub mod inputs;
pub mod multi;
pub mod order;
pub mod packing;
pub mod preference;
pub mod replacement;
pub mod search;

use std::collections::{BTreeMap, BTreeSet};

use dovetail_fakecloud::FakeCloud;
use serde::Serialize;

pub use clock::ConsolidationClock;
pub use inputs::MoveInputs;

use super::budget::{allowed_for_reason, wall_time};
use super::offering_table::OfferingTable;
use super::view::{PodView, View};
use host::{Host, PoolRules, hosts};
use multi::multi_node_move;
use replacement::Replacements;
use search::search;

/// Upstream waits this long between computing a consolidation command and validating it
/// (`commandValidationDelay`, core `pkg/controllers/disruption/consolidation.go:45`).
pub const VALIDATION_DELAY: std::time::Duration = std::time::Duration::from_secs(15);

/// What a move does.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum MoveKind {
    /// Delete a node with no reschedulable pod (reason `Empty`).
    DeleteEmpty,
    /// Delete a node whose pods all fit on the other nodes (reason `Underutilized`).
    Delete,
    /// Replace a node with one node of a cheaper instance type (reason `Underutilized`).
    Replace {
        /// The cheapest instance type the replacement could launch as.
        cheapest_type: String,
        /// How many instance types qualify.
        options: usize,
    },
    /// Delete several nodes together: their pods fit on the others (multi-node
    /// consolidation, reason `Underutilized`).
    MultiDelete,
    /// Replace several nodes with one node cheaper than their sum (multi-node
    /// consolidation, reason `Underutilized`).
    MultiReplace {
        /// The cheapest instance type the replacement could launch as.
        cheapest_type: String,
        /// How many instance types qualify.
        options: usize,
    },
}

/// One move Karpenter's rules allow now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Move {
    /// What it does.
    #[serde(flatten)]
    pub kind: MoveKind,
    /// The nodes it removes.
    pub nodes: Vec<String>,
    /// Their NodePool.
    pub nodepool: String,
    /// What the nodes cost now, USD per hour.
    pub price: f64,
    /// The least the move saves, USD per hour: the nodes' price, less the worst launch
    /// price among the replacement's options.
    pub saving_per_hour: f64,
}

impl Move {
    /// A stable key: the kind's name and the nodes.
    pub fn key(&self) -> String {
        let kind = match self.kind {
            MoveKind::DeleteEmpty => "delete-empty",
            MoveKind::Delete => "delete",
            MoveKind::Replace { .. } => "replace",
            MoveKind::MultiDelete => "multi-delete",
            MoveKind::MultiReplace { .. } => "multi-replace",
        };
        format!("{kind} {}", self.nodes.join(","))
    }

    /// One line for messages.
    pub fn describe(&self) -> String {
        let what = match &self.kind {
            MoveKind::DeleteEmpty => "delete empty node".to_string(),
            MoveKind::Delete => "delete node (its pods fit on the others)".to_string(),
            MoveKind::Replace { cheapest_type, options } => {
                format!("replace node with one cheaper node ({options} type(s) from {cheapest_type})")
            }
            MoveKind::MultiDelete => "delete nodes together (their pods fit on the others)".to_string(),
            MoveKind::MultiReplace { cheapest_type, options } => {
                format!(
                    "replace nodes together with one node cheaper than their sum ({options} type(s) from {cheapest_type})"
                )
            }
        };
        format!(
            "{what} {} of NodePool {} (${:.4}/h), saving at least ${:.4}/h",
            self.nodes.join(", "),
            self.nodepool,
            self.price,
            self.saving_per_hour
        )
    }
}

/// Why a node has no move.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    /// Node name.
    pub node: String,
    /// Its instance type.
    pub instance_type: String,
    /// What it costs now, USD per hour.
    pub price: f64,
    /// The rule that keeps it (or "not judged: …" where the oracle cannot tell).
    pub rule: String,
}

/// Every move allowed now and the rule keeping each other node.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assessment {
    /// The moves, in node-name order.
    pub moves: Vec<Move>,
    /// The nodes without a move, in node-name order.
    pub kept: Vec<Kept>,
}

/// Everything the oracle needs besides the view and the pods.
pub struct Settings<'a> {
    /// What the store holds beyond the view.
    pub inputs: &'a MoveInputs,
    /// When each node last had a pod event.
    pub clock: &'a ConsolidationClock,
    /// The controller's `SpotToSpotConsolidation` feature gate.
    pub spot_to_spot: bool,
    /// The world's offerings, listed once per pool requirements.
    pub offerings: &'a OfferingTable,
    /// Which types Karpenter surely plans with a registered node's memory.
    pub discovered: &'a crate::oracle::discovered_capacity::DiscoveredCapacity,
}

/// The consolidation moves Karpenter's rules allow now (see the module docs); for the
/// end-of-run convergence check: an empty list means the cluster is where consolidation
/// leaves it.
pub fn reachable_moves(view: &View, pods: &[PodView], cloud: &FakeCloud, settings: &Settings<'_>) -> Vec<Move> {
    assess(view, pods, cloud, settings).moves
}

/// The moves allowed now and the rule keeping each other node.
pub fn assess(view: &View, pods: &[PodView], cloud: &FakeCloud, settings: &Settings<'_>) -> Assessment {
    let mut hosts = hosts(view, pods, cloud, settings.inputs, settings.clock);
    if let Some(rule) = cluster_in_motion(view, pods) {
        return Assessment { moves: Vec::new(), kept: hosts.iter().map(|h| h.kept(&rule)).collect() };
    }
    // The types Karpenter surely sizes new nodes of by what a registered node reported, per
    // EC2NodeClass (see [`replacement`] and [`crate::oracle::discovered_capacity`]).
    let classes: BTreeSet<String> = view.pools.values().map(|p| replacement::node_class(&p.object)).collect();
    let seen = settings.discovered.known(view.now, &classes);
    let mut pool_nodes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for h in &hosts {
        if let Some(pool) = &h.nodepool {
            pool_nodes.entry(pool.clone()).or_default().push(h.instance_type.clone());
        }
    }
    // Listing every pool's offerings is the costly part: only done when some node gets as
    // far as the replacement rule, or some pod has a preferred node affinity.
    let offerings = std::cell::OnceCell::new();
    let replacements = std::cell::OnceCell::new();
    let replacements = || {
        replacements.get_or_init(|| {
            let offerings = offerings.get_or_init(|| {
                view.pools
                    .iter()
                    .map(|(name, pool)| {
                        (name.as_str(), settings.offerings.priced(cloud, &view.overlays, &pool.object, view.now))
                    })
                    .collect::<BTreeMap<&str, _>>()
            });
            Replacements::new(offerings, &view.pools, settings.inputs.overhead, seen.clone(), pool_nodes.clone())
        })
    };
    preference::bind(&mut hosts, &view.pools, replacements);
    let pools: BTreeMap<String, PoolRules> = view
        .pools
        .iter()
        .map(|(name, pool)| (name.clone(), PoolRules::of(&pool.object, &hosts, name, view.now)))
        .collect();
    let mut found = search(&hosts, &pools, |h: &Host| replacements().cheaper(h, settings.spot_to_spot));
    found.moves.extend(multi_node_move(&hosts, &pools, settings.spot_to_spot, replacements));
    found
}

/// A reason no move is claimed anywhere: pods are pending (Karpenter's simulation places
/// them first, and nominates nodes for them), or a NodeClaim is launching or deleting
/// (in-flight capacity and disruptions change what fits and what the budgets allow).
fn cluster_in_motion(view: &View, pods: &[PodView]) -> Option<String> {
    if let Some(p) = pods.iter().find(|p| p.active() && !p.daemonset && p.node_name.is_none()) {
        return Some(format!("not judged: pod {} is pending (the simulation would place it first)", p.key));
    }
    if let Some(c) = view.claims.values().find(|c| c.deleting_since.is_some()) {
        return Some(format!("not judged: NodeClaim {} is deleting", c.name));
    }
    if let Some(c) = view.claims.values().find(|c| !c.initialized) {
        return Some(format!("not judged: NodeClaim {} is not initialized yet", c.name));
    }
    None
}

/// How many more nodes of a pool `reason` may disrupt now: the tightest active budget for
/// it less the nodes already disrupting (core `BuildDisruptionBudgetMapping`).
pub fn budget_left(
    budgets: &[serde_json::Value],
    nodes: usize,
    disrupting: usize,
    reason: &str,
    now: std::time::Duration,
) -> usize {
    allowed_for_reason(budgets, nodes, reason, wall_time(now)).map_or(usize::MAX, |a| a.saturating_sub(disrupting))
}

#[cfg(test)]
mod multi_tests;
#[cfg(test)]
mod tests;
