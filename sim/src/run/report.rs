//! The machine-readable result of one run (the `--report` JSON) and its human summary.
//!
//! Nothing in it depends on the machine or the wall clock: two runs of the same scenario
//! and seed serialise to the same bytes. Field names are camelCase; `dovetail compare`
//! reads them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::explain::Explanation;
use crate::scenario::SimDuration;

/// One run's report.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Root seed.
    pub seed: u64,
    /// Simulated time covered.
    pub simulated: SimDuration,
    /// The one command that reproduces this run.
    pub reproduce: String,
    /// SHA-256 of the trace.
    pub trace_fingerprint: String,
    /// Trace length.
    pub trace_entries: u64,
    /// Invariants checked and violated.
    pub invariants: InvariantsSection,
    /// Cost at the end against the lower bound.
    pub cost: CostSection,
    /// How long pods waited for a node.
    pub pending: PendingSection,
    /// Instances that ran but whose kubelet could not register (see [`UnjoinedSection`]).
    #[serde(skip_serializing_if = "UnjoinedSection::is_empty")]
    pub unjoined: UnjoinedSection,
    /// Instances that ran (billed).
    pub launches: u64,
    /// Instances interrupted (spot warnings, zone outages).
    pub interruptions: u64,
    /// NodeClaims deleted, by reason (Underutilized, Empty, Drifted, Expired, Interrupted, Unhealthy, Other).
    pub disruptions: BTreeMap<String, u64>,
    /// API calls: `ec2 <Action>`, `sqs <Action>` (fake cloud) and `kube <verb> <resource>`
    /// (API server mutations).
    pub api_calls: BTreeMap<String, u64>,
    /// Fault occurrences started, by kind.
    pub faults: BTreeMap<String, u64>,
    /// What the faults did to the controller's traffic: injected API server answers
    /// by code and resource (`kube 429 nodeclaims.karpenter.sh`, ... `kube 410` for an
    /// expired continue token), EC2 throttles and 5xx answers
    /// (`ec2 RequestLimitExceeded`, ...), SQS messages lost or duplicated, kubelets refused.
    /// Left out when nothing reached anyone.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fault_effects: BTreeMap<String, u64>,
    /// Controller replica restarts after an exit (leadership lost, controller error).
    pub controller_restarts: u64,
    /// The API server's final resourceVersion.
    pub resource_version: u64,
    /// Objects at the end, by `resource.group`.
    pub objects: BTreeMap<String, usize>,
    /// Watch events an observer received (API-only scenarios).
    pub watch_events_observed: u64,
    /// Scenario actions performed (each repetition counts).
    pub actions: u64,
    /// Actions that failed, with the API's answer. An action whose failure the scenario
    /// expects (`expectCode`) is not listed.
    pub failures: Vec<String>,
    /// At the end of the run, why every NodeClaim is (not) being disrupted, why every
    /// pending pod is pending, and the disruption decisions taken: the value `dovetail
    /// explain` prints (see [`crate::explain`]). Left out when no controller ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

/// Invariants.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InvariantsSection {
    /// Names of the invariants checked.
    pub checked: Vec<String>,
    /// Violations found.
    pub violations: Vec<ViolationReport>,
}

/// One violation.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ViolationReport {
    /// Which invariant.
    pub invariant: String,
    /// Simulated time, e.g. `12m3s`.
    pub at: SimDuration,
    /// The objects involved, e.g. `Pod default/web-1`.
    pub objects: Vec<String>,
    /// What went wrong.
    pub message: String,
    /// Position in the trace.
    pub trace_position: u64,
}

/// Cost: a quality metric (the gap to the LP bound) and the consolidation moves left.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CostSection {
    /// USD per hour of the instances running at the end.
    pub rate_per_hour: f64,
    /// The provable lower bound (0 until the invariant checker provides it).
    pub lower_bound_per_hour: f64,
    /// rate / bound - 1 (0 when there is no bound): how far above the bound the fleet ends.
    pub gap: f64,
    /// Whether the pods' demand had held still long enough at the end for consolidation
    /// to finish, so the gap is the settled one.
    pub settled: bool,
    /// Consolidation moves Karpenter's rules allow at the end that were not taken (yet).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untaken_moves: Vec<String>,
    /// The least those moves would save, USD per hour.
    pub untaken_saving_per_hour: f64,
    /// The rule keeping each other node, grouped by rule.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// USD billed over the run.
    pub total: f64,
}

/// Instances whose kubelet EKS refused (no access entry for their role): they ran and
/// billed without a Node. Empty (and left out of the report) when none was refused.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UnjoinedSection {
    /// Instances refused at least once.
    pub instances: u64,
    /// Of those, how many never registered a Node.
    pub never_joined: u64,
    /// USD billed for the refused instances over their whole life.
    pub cost: f64,
    /// The longest a refused instance ran before it joined or went away, in seconds.
    pub max_seconds_without_node: f64,
}

impl UnjoinedSection {
    /// Whether no instance was refused.
    pub fn is_empty(&self) -> bool {
        self.instances == 0
    }
}

/// Pending time.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PendingSection {
    /// Pods observed.
    pub pods: u64,
    /// Median seconds from creation to binding.
    pub p50_seconds: f64,
    /// 99th percentile.
    pub p99_seconds: f64,
    /// Worst.
    pub max_seconds: f64,
}

/// Rounds money and seconds so the JSON stays short (still deterministic).
pub fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

impl Report {
    /// Whether the run failed: an invariant was violated or an action failed.
    pub fn failed(&self) -> bool {
        !self.invariants.violations.is_empty() || !self.failures.is_empty()
    }

    /// The human summary `dovetail run` prints.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "scenario {} seed {}: {} simulated", self.scenario, self.seed, self.simulated);
        let verdict = if self.invariants.violations.is_empty() { "ok" } else { "VIOLATED" };
        let _ = writeln!(
            s,
            "  invariants   {verdict}: {} checked, {} violations",
            self.invariants.checked.len(),
            self.invariants.violations.len()
        );
        for v in &self.invariants.violations {
            let _ = writeln!(
                s,
                "    {} at {} (trace #{}): {} [{}]",
                v.invariant,
                v.at,
                v.trace_position,
                v.message,
                v.objects.join(", ")
            );
        }
        let _ = writeln!(
            s,
            "  cost         ${:.3}/h (bound ${:.3}/h, gap {:.1}%{}), ${:.3} billed",
            self.cost.rate_per_hour,
            self.cost.lower_bound_per_hour,
            self.cost.gap * 100.0,
            if self.cost.settled { "" } else { ", not settled" },
            self.cost.total
        );
        for m in &self.cost.untaken_moves {
            let _ = writeln!(s, "  untaken      {m}");
        }
        for k in &self.cost.kept {
            let _ = writeln!(s, "  kept         {k}");
        }
        let _ = writeln!(
            s,
            "  pending      {} pods, p50 {:.1}s, p99 {:.1}s, max {:.1}s",
            self.pending.pods, self.pending.p50_seconds, self.pending.p99_seconds, self.pending.max_seconds
        );
        let _ = writeln!(s, "  launches     {}", self.launches);
        let _ = writeln!(s, "  interrupted  {}", self.interruptions);
        let _ = writeln!(s, "  disruptions  {}", join(&self.disruptions));
        let _ = writeln!(s, "  faults       {}", join(&self.faults));
        if self.controller_restarts > 0 {
            let _ = writeln!(s, "  restarts     {}", self.controller_restarts);
        }
        let total: u64 = self.api_calls.values().sum();
        let mut top: Vec<(&String, &u64)> = self.api_calls.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = top.iter().take(8).map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(s, "  api calls    {total}: {}", top.join(", "));
        for f in &self.failures {
            let _ = writeln!(s, "  FAILED {f}");
        }
        s
    }
}

fn join(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}
