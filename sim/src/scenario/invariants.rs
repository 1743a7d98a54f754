//! Which invariants a run checks and their thresholds, as a scenario writes them under
//! `invariants:` (the checker in `crate::invariants` reads them; declaring them here keeps
//! the scenario format free of the checker). Every invariant is on by default with thresholds a correct Karpenter
//! meets; unknown fields are errors.

use serde::{Deserialize, Serialize};

use dovetail_world::SimDuration;

fn on() -> bool {
    true
}

fn mins(m: u64) -> SimDuration {
    SimDuration(std::time::Duration::from_secs(m * 60))
}

/// Per-invariant switches and thresholds.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct InvariantConfig {
    /// Hosts whose requests are the controller's (voluntary disruption). A host matches
    /// when its name starts with one of these (`controller`, `controller-2`, ...).
    pub controller_hosts: Vec<String>,
    /// No eviction or delete by the controller takes a PodDisruptionBudget below its budget.
    pub pdb: Toggle,
    /// No `karpenter.sh/do-not-disrupt` pod is evicted or deleted by the controller before
    /// its node's terminationGracePeriod forces it.
    pub do_not_disrupt: Toggle,
    /// A NodePool's live instances never exceed its `spec.limits` by more than one node.
    pub nodepool_limits: Toggle,
    /// Nodes the controller is disrupting never exceed the NodePool's disruption budget.
    pub disruption_budgets: Toggle,
    /// One instance per NodeClaim: no CreateFleet launches more than it asked for, no two
    /// live instances carry one claim's tag, and a NodeClaim's providerID never changes.
    pub double_launch: Toggle,
    /// A live instance the controller launched (NodePool-tagged) that no NodeClaim owns is
    /// gone within `maxAge`.
    pub leaked_instance: LeakedInstance,
    /// NodeClaims initialize, and finish deleting, in bounded time (after faults heal).
    pub stuck_node_claim: StuckNodeClaim,
    /// A pending pod that an allowed offering could host is bound in bounded time (after
    /// faults heal).
    pub stranded_pods: StrandedPods,
    /// The NodeClaim count stays within what the pods could need.
    pub runaway_scale_up: RunawayScaleUp,
    /// NodeClaims per wave of pending pods within an independent packing, no capacity left
    /// unused, no second NodeClaim for pods nominated to one in flight.
    pub over_provisioning: OverProvisioning,
    /// Voluntary NodeClaim deletions per node-hour at steady state.
    pub churn: Churn,
    /// The cost section: rate, LP bound and gap (a quality metric, not pass/fail).
    pub cost: Cost,
    /// At the end of the run (the Liveness phase) the cluster has converged: nothing
    /// hostable pending, no stuck, leaked or still-deleting claim or instance.
    pub convergence: Convergence,
    /// Every launched instance satisfies its NodeClaim's and NodePool's requirements, and
    /// its Node carries the pool's taints.
    pub launch_conformance: Toggle,
    /// Drifted nodes are replaced within what the pool's Drifted budget allows.
    pub drift_convergence: DriftConvergence,
    /// No consolidation move Karpenter's rules allow stays untaken past validation + slack.
    pub untaken_moves: UntakenMoves,
    /// A NodeClaim whose instance got an interruption event Karpenter acts on (spot warning,
    /// scheduled change, stopping/terminating state change) is deleting within `within` of
    /// the event becoming receivable, and before a spot reclaim.
    pub interruption_handled: InterruptionHandled,
    /// Every Underutilized or Empty disruption the controller starts is one Karpenter's rules
    /// allow at that moment (candidacy, fit of a delete, price of an on-demand replace,
    /// spot-to-spot gate).
    pub consolidation_legality: Toggle,
    /// No NodeClaim is disrupted for Expired before its expireAfter, and an expired one is
    /// deleting within `deleteWithin` (after faults heal).
    pub expiry_timing: ExpiryTiming,
    /// Every pod eviction or delete of a drain follows Karpenter's drain rules: pods that
    /// tolerate the disrupted taint are left, the Node is tainted disrupted first, and the
    /// four drain groups go in order.
    pub drain_conformance: Toggle,
    /// EC2 DescribeInstances calls per 5-minute window stay within 20 + 10 per NodeClaim
    /// seen (upstream's drift and GC periods; see `invariants::cloud_read_rate`).
    pub cloud_read_rate: Toggle,
    /// No update or patch by the controller that the API server accepts changes nothing
    /// (upstream compares before patching).
    pub no_op_writes: Toggle,
    /// An initialized NodeClaim is Consolidatable=True within 5 s of consolidateAfter
    /// passing since the later of its initialization and last pod event.
    pub consolidatable_timing: Toggle,
    /// A NodeClaim turns Initialized=True only when its Node is Ready and carries none of
    /// the ephemeral or the claim's startup taints, with every requested resource allocatable.
    pub initialization_conformance: Toggle,
    /// The controller's disruption-decision metrics carry upstream's label values
    /// (`reason` with its matching `consolidation_type`), judged on `/metrics` at the end.
    pub metrics_conformance: Toggle,
}

impl Default for InvariantConfig {
    fn default() -> Self {
        Self {
            controller_hosts: vec!["controller".into()],
            pdb: Toggle::default(),
            do_not_disrupt: Toggle::default(),
            nodepool_limits: Toggle::default(),
            disruption_budgets: Toggle::default(),
            double_launch: Toggle::default(),
            leaked_instance: LeakedInstance::default(),
            stuck_node_claim: StuckNodeClaim::default(),
            stranded_pods: StrandedPods::default(),
            runaway_scale_up: RunawayScaleUp::default(),
            over_provisioning: OverProvisioning::default(),
            churn: Churn::default(),
            cost: Cost::default(),
            convergence: Convergence::default(),
            launch_conformance: Toggle::default(),
            drift_convergence: DriftConvergence::default(),
            untaken_moves: UntakenMoves::default(),
            interruption_handled: InterruptionHandled::default(),
            consolidation_legality: Toggle::default(),
            expiry_timing: ExpiryTiming::default(),
            drain_conformance: Toggle::default(),
            cloud_read_rate: Toggle::default(),
            no_op_writes: Toggle::default(),
            consolidatable_timing: Toggle::default(),
            initialization_conformance: Toggle::default(),
            metrics_conformance: Toggle::default(),
        }
    }
}

impl InvariantConfig {
    /// Whether requests from `host` are the controller's.
    pub fn is_controller(&self, host: &str) -> bool {
        self.controller_hosts.iter().any(|h| host.starts_with(h.as_str()))
    }
}

/// An invariant with no threshold.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Toggle {
    /// Check it (default true).
    pub enabled: bool,
}

impl Default for Toggle {
    fn default() -> Self {
        Self { enabled: on() }
    }
}

/// Leaked-instance threshold.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct LeakedInstance {
    /// Check it (default true).
    pub enabled: bool,
    /// Oldest a leaked instance may get. Karpenter's GC terminates instances older than
    /// 30 s and runs every 2 min once warm, so 5 min leaves slack.
    pub max_age: SimDuration,
}

impl Default for LeakedInstance {
    fn default() -> Self {
        Self { enabled: true, max_age: mins(5) }
    }
}

/// Stuck-NodeClaim thresholds.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct StuckNodeClaim {
    /// Check it (default true).
    pub enabled: bool,
    /// A NodeClaim must be Initialized this long after creation (Karpenter's liveness
    /// deletes claims not Registered within 15 min).
    pub initialize_within: SimDuration,
    /// A deleting NodeClaim must be gone this long after its deletionTimestamp.
    pub delete_within: SimDuration,
}

impl Default for StuckNodeClaim {
    fn default() -> Self {
        Self { enabled: true, initialize_within: mins(20), delete_within: mins(30) }
    }
}

/// Stranded-pod threshold.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct StrandedPods {
    /// Check it (default true).
    pub enabled: bool,
    /// A hostable pending pod must be bound within this (counted from when faults healed
    /// or the pod was created, whichever is later).
    pub bound_within: SimDuration,
}

impl Default for StrandedPods {
    fn default() -> Self {
        Self { enabled: true, bound_within: mins(5) }
    }
}

/// Runaway scale-up caps.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RunawayScaleUp {
    /// Check it (default true).
    pub enabled: bool,
    /// Live NodeClaims may exceed the number of non-DaemonSet pods by this many (a node
    /// per pod is the most any packing needs).
    pub slack: u32,
    /// An absolute cap on live NodeClaims, if set.
    pub max_nodes: Option<u32>,
}

impl Default for RunawayScaleUp {
    fn default() -> Self {
        Self { enabled: true, slack: 10, max_nodes: None }
    }
}

/// Over-provisioning bounds (`crate::invariants::over_provisioning`).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct OverProvisioning {
    /// Check it (default true).
    pub enabled: bool,
    /// NodeClaims a wave of pending pods may have beyond what a first-fit-decreasing
    /// packing of its pods needs, per NodePool (default 1: nodes come whole, and a pass may
    /// pick a smaller type than the packing's largest).
    pub slack_per_pool: u32,
    /// An initialized NodeClaim with no pod bound or nominated to it for this long plus its
    /// NodePool's `consolidateAfter` is unused capacity (default 5m: removal of an empty
    /// node also waits for validation and the disruption budget).
    pub unused_for: SimDuration,
}

impl Default for OverProvisioning {
    fn default() -> Self {
        Self { enabled: true, slack_per_pool: 1, unused_for: mins(5) }
    }
}

/// Churn bound.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Churn {
    /// Check it (default true).
    pub enabled: bool,
    /// Steady state starts this long after faults heal.
    pub settle_after: SimDuration,
    /// Most voluntary NodeClaim deletions per node-hour at steady state.
    pub max_per_node_hour: f64,
    /// Judge only with at least this many node-hours of steady state.
    pub min_node_hours: f64,
}

impl Default for Churn {
    fn default() -> Self {
        Self { enabled: true, settle_after: mins(10), max_per_node_hour: 2.0, min_node_hours: 1.0 }
    }
}

/// Cost measurement.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Cost {
    /// Measure it (default true). The gap is a quality metric: it never fails a run.
    pub enabled: bool,
    /// The gap is called settled only once the pods' total requests have stayed the same
    /// for the NodePools' longest `consolidateAfter` plus this long (default 2m).
    pub settled_for: SimDuration,
}

impl Default for Cost {
    fn default() -> Self {
        Self { enabled: true, settled_for: mins(2) }
    }
}

/// Untaken-moves thresholds.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct UntakenMoves {
    /// Check it (default true).
    pub enabled: bool,
    /// How long past upstream's 15 s validation a move may stay available (default 2m).
    pub slack: SimDuration,
    /// How often the moves oracle runs (default 5s).
    pub check_every: SimDuration,
}

impl Default for UntakenMoves {
    fn default() -> Self {
        Self { enabled: true, slack: mins(2), check_every: SimDuration(std::time::Duration::from_secs(5)) }
    }
}

/// Convergence at the end of the run.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Convergence {
    /// Check it (default true).
    pub enabled: bool,
    /// What is still wrong at the end is a violation when it has been wrong since before
    /// `phases.livenessFrom` or since before the end minus this, whichever is earlier
    /// (default 5m: a node boots and a pod binds well within it; later arrivals are not
    /// judged).
    pub within: SimDuration,
}

impl Default for Convergence {
    fn default() -> Self {
        Self { enabled: true, within: mins(5) }
    }
}

/// Drift-convergence threshold.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct DriftConvergence {
    /// Check it (default true).
    pub enabled: bool,
    /// How long replacing one drifted node may take (launch, initialization, drain and
    /// termination); a pool with `n` drifted nodes and a Drifted budget of `b` gets
    /// `ceil(n / b)` of these.
    pub replace_within: SimDuration,
}

impl Default for DriftConvergence {
    fn default() -> Self {
        Self { enabled: true, replace_within: mins(15) }
    }
}

/// Interruption-handling window.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct InterruptionHandled {
    /// Check it (default true).
    pub enabled: bool,
    /// How long after an event became receivable its NodeClaim may take to be deleting
    /// (30 s; a spot warning's deadline is also capped by the reclaim, 2 min after it).
    /// Karpenter polls the queue without pause and deletes the claim in the same pass.
    pub within: SimDuration,
}

impl Default for InterruptionHandled {
    fn default() -> Self {
        Self { enabled: true, within: SimDuration(std::time::Duration::from_secs(30)) }
    }
}

/// Expiry-timing window.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ExpiryTiming {
    /// Check it (default true).
    pub enabled: bool,
    /// How long after its expiry (or the heal) a NodeClaim may take to be deleting (2 min:
    /// upstream requeues for the expiry instant and deletes at once).
    pub delete_within: SimDuration,
}

impl Default for ExpiryTiming {
    fn default() -> Self {
        Self { enabled: true, delete_within: mins(2) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_missing_fields_and_unknown_fields_are_errors() {
        let c: InvariantConfig = serde_json::from_value(serde_json::json!({
            "leakedInstance": {"maxAge": "2m"}, "pdb": {"enabled": false}
        }))
        .expect("valid");
        assert_eq!(c.leaked_instance.max_age.0.as_secs(), 120);
        assert!(!c.pdb.enabled);
        assert!(c.churn.enabled);
        assert_eq!(c.controller_hosts, ["controller"]);
        let e = serde_json::from_value::<InvariantConfig>(serde_json::json!({"leakedInstance": {"maxAeg": "2m"}}))
            .expect_err("unknown field");
        assert!(e.to_string().contains("maxAeg"), "{e}");
        assert!(c.is_controller("controller-2") && !c.is_controller("test"));
    }
}
